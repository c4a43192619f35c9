// Source pools over HTTP: definePool and assignJobToPool for operators only, their input refused before the
// database, POOL_NOT_FOUND, the sourcePools query for every role, the kit's claimPartition answering POOL_FULL with
// its wait, and the lc_pool_* gauges. The rules and the race: test/domain/pools/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSIGN_JOB_TO_POOL, DEFINE_POOL, SOURCE_POOLS } from '../../../schema/documents/operator.js';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import { claim, startRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';

let api: TestApi;
let nifi: Receiver;
let worker: TestWorkerParts;
beforeAll(async () => {
  api = await startTestApi();
  nifi = await startReceiver();
  worker = testWorker(api, workerConfig(api, nifi));
});
afterAll(async () => {
  await worker?.close();
  await nifi?.close();
  await api?.close();
});

const definePool = (input: Record<string, unknown>, token: TokenName = 'operator') => api.gql(DEFINE_POOL, { input }, { token });
const assign = (input: Record<string, unknown>, token: TokenName = 'operator') => api.gql(ASSIGN_JOB_TO_POOL, { input }, { token });

async function poolRows(): Promise<number> {
  const { rows } = await api.sql.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM nifi_ops.source_pool) + (SELECT count(*) FROM nifi_ops.source_pool_job) AS n`,
  );
  return Number(rows[0]!.n);
}

describe('definePool and assignJobToPool', () => {
  it('are for operators only, refuse bad input with 422 naming the field, and change nothing then', async () => {
    const before = await poolRows();
    for (const token of ['nifi', 'viewer'] as const) {
      expect((await definePool({ name: 'oracle-x', maxRunning: 4 }, token)).status).toBe(403);
      expect((await assign({ jobKey: 'JOB_X', pool: null }, token)).status).toBe(403);
    }
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ name: 'has space', maxRunning: 4 }, 'input.name'],
      [{ name: '', maxRunning: 4 }, 'input.name'],
      [{ name: 'x'.repeat(101), maxRunning: 4 }, 'input.name'],
      [{ name: 'oracle-x', maxRunning: -1 }, 'input.maxRunning'],
      [{ name: 'oracle-x', maxRunning: 4, retryAfterSeconds: 0 }, 'input.retryAfterSeconds'],
      [{ name: 'oracle-x', maxRunning: 4, retryAfterSeconds: 3601 }, 'input.retryAfterSeconds'],
      [{ name: 'oracle-x', maxRunning: 4, reason: 'x' }, 'input.reason'],
    ];
    for (const [input, field] of refusals) {
      const res = await definePool(input);
      expect([res.status, res.code, res.details?.field], JSON.stringify(input)).toEqual([422, 'INVALID_INPUT', field]);
    }
    const badJob = await assign({ jobKey: 'lower_case', pool: null });
    expect([badJob.status, badJob.details?.field]).toEqual([422, 'input.jobKey']);
    expect(await poolRows()).toBe(before);
  });

  it('answers 404 POOL_NOT_FOUND for a pool not defined', async () => {
    const res = await assign({ jobKey: 'JOB_NOWHERE', pool: 'nowhere' });
    expect([res.status, res.code, res.details]).toEqual([404, 'POOL_NOT_FOUND', { pool: 'nowhere' }]);
    expect(res.headers.get('x-error-code')).toBe('POOL_NOT_FOUND');
  });
});

describe('a full pool over HTTP', () => {
  it("answers the kit's claim with claimed: false, POOL_FULL and the wait; sourcePools and the gauges show the use", async () => {
    const pool = `oracle-${randomUUID().slice(0, 8)}`;
    const jobKey = `POOLED_${randomUUID().slice(0, 8).toUpperCase()}`;
    const defined = await definePool({ name: pool, maxRunning: 1, retryAfterSeconds: 15, reason: 'one session only' });
    expect(defined.body.data?.definePool).toMatchObject({
      changed: true,
      pool: { name: pool, maxRunning: 1, running: 0, updatedBy: 'alice-operator' },
    });
    expect((await assign({ jobKey, pool })).body.data?.assignJobToPool).toEqual({ jobKey, pool, previousPool: null, changed: true });

    const run = await startRun(api, [1, 1], { create: { jobKey } });
    expect((await claim(api, run.runId, '0000')).result).toMatchObject({ claimed: true });
    // the kit's own document: a claimable partition of an extracting run, refused — what it routes to its wait
    const refused = await claim(api, run.runId, '0001');
    expect([refused.status, refused.body.data?.claimPartition]).toEqual([
      200,
      { claimed: false, runStatus: 'EXTRACTING', partitionStatus: 'PENDING', attempt: 0 },
    ]);
    // the answer's own fields, which the kit does not ask for (a previous release would not know them)
    const asked = await api.gql(
      `mutation($input: ClaimPartitionInput!) { claimPartition(input: $input) { claimed reason retryAfter pool } }`,
      { input: { runId: run.runId, partitionId: '0001', claimToken: refused.claimToken, workerNode: 'nifi-01' } },
    );
    expect(asked.body.data?.claimPartition).toEqual({ claimed: false, reason: 'POOL_FULL', retryAfter: 15, pool });

    const listed = await api.gql(SOURCE_POOLS, {}, { token: 'viewer' });
    expect(listed.body.data?.sourcePools).toContainEqual(
      expect.objectContaining({ name: pool, maxRunning: 1, running: 1, jobs: [jobKey] }),
    );

    await worker.sweeper.cycle();
    const metrics = await worker.registry.metrics();
    expect(metrics).toContain(`lc_pool_running{pool="${pool}"} 1`);
    expect(metrics).toContain(`lc_pool_limit{pool="${pool}"} 1`);
  });
});
