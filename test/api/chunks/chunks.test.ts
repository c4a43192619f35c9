// claimPartition, reportChunk and failPartition over HTTP: input parsing refuses malformed fields with 422
// INVALID_INPUT before the database sees them. Their rules are domain tests: test/domain/chunks/chunks.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CLAIM, FAIL_PARTITION, chunkInput, claim, report, startRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

describe('claimPartition', () => {
  it('answers 422 for a malformed partition id or an over-long worker node', async () => {
    const run = await startRun(api, [3]);
    const malformed = await api.gql(CLAIM, { input: { runId: run.runId, partitionId: 'abc', claimToken: randomUUID(), workerNode: 'n' } });
    expect([malformed.status, malformed.code]).toEqual([422, 'INVALID_INPUT']);
    const longNode = await api.gql(CLAIM, {
      input: { runId: run.runId, partitionId: '0000', claimToken: randomUUID(), workerNode: 'n'.repeat(201) },
    });
    expect([longNode.status, longNode.code]).toEqual([422, 'INVALID_INPUT']);
  });
});

describe('reportChunk', () => {
  it.each([
    ['chunkCount', { chunkCount: '0' }],
    ['chunkCount', { chunkCount: '1000001' }],
    ['chunkIndex', { chunkIndex: '-1' }],
    ['recordCount', { recordCount: '-5' }],
    ['fragmentIdentifier', { fragmentIdentifier: 'f'.repeat(101) }],
    ['hdfsPath', { hdfsPath: `/${'p'.repeat(1500)}` }],
    ['hdfsPath', { hdfsPath: 'relative.parquet' }],
    // the one HDFS path rule (domain/fields.ts) that createRun's hdfsRoot and recordCleanup's deletedPath follow
    ['hdfsPath', { hdfsPath: '/data/nifi/stage/part#1.parquet' }],
  ])('refuses malformed %s with 422 INVALID_INPUT and records nothing', async (_field, overrides) => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    const res = await report(api, { ...chunkInput(run, '0000', p.claimToken, 0, 1, 10), ...overrides });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
    const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1`, [run.runId]);
    expect(rows[0].n).toBe(0);
  });
});

describe('failPartition', () => {
  it('refuses an over-long errorClass with 422, not a database error', async () => {
    const run = await startRun(api, [3]);
    const p = await claim(api, run.runId, '0000');
    const res = await api.gql(FAIL_PARTITION, {
      input: {
        runId: run.runId,
        partitionId: '0000',
        claimToken: p.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'C'.repeat(41),
        errorCode: 'ORA-00942',
        message: 'table missing',
      },
    });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
  });
});
