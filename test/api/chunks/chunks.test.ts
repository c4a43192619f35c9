import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CLAIM, FAIL_PARTITION, RUN, chunkInput, claim, report, startRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const dispatchCount = async (runId: string) =>
  (await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE run_id = $1', [runId])).rows[0].n as number;

describe('claimPartition', () => {
  it('gives the partition to one token; the same token again is a replay; others get claimed=false', async () => {
    const run = await startRun(api, [3, 4]);
    const first = await claim(api, run.runId, '0000', undefined, 'nifi-01');
    expect(first.result).toEqual({ claimed: true, runStatus: 'EXTRACTING', partitionStatus: 'RUNNING', attempt: 1 });
    const other = await claim(api, run.runId, '0000', randomUUID(), 'nifi-02');
    expect(other.status).toBe(200);
    expect(other.result).toEqual({ claimed: false, runStatus: 'EXTRACTING', partitionStatus: 'RUNNING', attempt: 1 });
    const replay = await claim(api, run.runId, '0000', first.claimToken, 'nifi-01');
    expect(replay.result).toEqual({ claimed: true, runStatus: 'EXTRACTING', partitionStatus: 'RUNNING', attempt: 1 });
    const { rows } = await api.sql.query(
      `SELECT attempt_count, worker_node, claimed_by FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect(rows[0]).toEqual({ attempt_count: 1, worker_node: 'nifi-01', claimed_by: 'nifi-cluster' });
    const { rows: events } = await api.sql.query(
      `SELECT details, actor FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PARTITION_STARTED'`,
      [run.runId],
    );
    expect(events).toEqual([{ details: { workerNode: 'nifi-01', attempt: 1 }, actor: 'nifi-cluster' }]);
  });

  it('answers 404 for an unknown partition or run and 422 for a malformed partition id', async () => {
    const run = await startRun(api, [3]);
    const unknownPartition = await claim(api, run.runId, '0009');
    expect([unknownPartition.status, unknownPartition.code]).toEqual([404, 'PARTITION_NOT_FOUND']);
    const unknownRun = await claim(api, randomUUID(), '0000');
    expect([unknownRun.status, unknownRun.code]).toEqual([404, 'RUN_NOT_FOUND']);
    const malformed = await api.gql(CLAIM, { input: { runId: run.runId, partitionId: 'abc', claimToken: randomUUID(), workerNode: 'n' } });
    expect([malformed.status, malformed.code]).toEqual([422, 'INVALID_INPUT']);
    const longNode = await api.gql(CLAIM, {
      input: { runId: run.runId, partitionId: '0000', claimToken: randomUUID(), workerNode: 'n'.repeat(201) },
    });
    expect([longNode.status, longNode.code]).toEqual([422, 'INVALID_INPUT']);
  });

  it('refuses claims with claimed=false once the run is not extracting', async () => {
    const run = await startRun(api, [3, 4]);
    const owner = await claim(api, run.runId, '0000');
    await api.gql(FAIL_PARTITION, {
      input: {
        runId: run.runId,
        partitionId: '0000',
        claimToken: owner.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'SQL',
        errorCode: 'ORA-00942',
      },
    });
    const late = await claim(api, run.runId, '0001');
    expect(late.result).toEqual({ claimed: false, runStatus: 'FAILED_EXTRACT', partitionStatus: 'PENDING', attempt: 0 });
  });
});

describe('reportChunk', () => {
  it('completes partitions and then the run exactly once, writing one VALIDATE_RUN dispatch', async () => {
    const run = await startRun(api, [10, 7, 0]);
    const p0 = await claim(api, run.runId, '0000');
    const p1 = await claim(api, run.runId, '0001');
    const first = await report(api, chunkInput(run, '0000', p0.claimToken, 0, 2, 4));
    expect(first.result).toEqual({
      recorded: true,
      partitionStatus: 'RUNNING',
      runStatus: 'EXTRACTING',
      receivedChunks: 1,
      chunkCount: 2,
      validationScheduled: false,
    });
    const second = await report(api, chunkInput(run, '0000', p0.claimToken, 1, 2, 6));
    expect(second.result).toMatchObject({ partitionStatus: 'SUCCESS', runStatus: 'EXTRACTING', receivedChunks: 2 });
    const last = await report(api, chunkInput(run, '0001', p1.claimToken, 0, 1, 7));
    expect(last.result).toEqual({
      recorded: true,
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTED_VALIDATED',
      receivedChunks: 1,
      chunkCount: 1,
      validationScheduled: true,
    });
    const { rows } = await api.sql.query(
      `SELECT extracted_count::int, success_partition_count, extract_completed_at FROM nifi_ops.load_run WHERE run_id = $1`,
      [run.runId],
    );
    expect(rows[0]).toMatchObject({ extracted_count: 17, success_partition_count: 3 });
    expect(rows[0].extract_completed_at).toBeInstanceOf(Date);
    const { rows: dispatches } = await api.sql.query(`SELECT dispatch_type, status FROM nifi_ops.load_dispatch WHERE run_id = $1`, [
      run.runId,
    ]);
    expect(dispatches).toEqual([{ dispatch_type: 'VALIDATE_RUN', status: 'PENDING' }]);
    const detail = await api.gql(RUN, { runId: run.runId });
    const events = detail.body.data!.run.events.map((e: { name: string }) => e.name);
    expect(events.filter((n: string) => n === 'PARTITION_SUCCESS')).toHaveLength(2);
    expect(events.at(-1)).toBe('EXTRACT_VALIDATED');
    expect(detail.body.data!.run.partitionCounts).toEqual([{ status: 'SUCCESS', count: 3 }]);
    expect(detail.body.data!.run.partitions.find((p: { partitionId: string }) => p.partitionId === '0000')).toMatchObject({
      status: 'SUCCESS',
      expectedRowCount: 10,
      actualRowCount: 10,
      fileCount: 2,
      attemptCount: 1,
    });

    const replay = await report(api, chunkInput(run, '0001', p1.claimToken, 0, 1, 7));
    expect(replay.result).toEqual({
      recorded: true,
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTED_VALIDATED',
      receivedChunks: 1,
      chunkCount: 1,
      validationScheduled: false,
    });
    expect(await dispatchCount(run.runId)).toBe(1);
  });

  it('decides a completing chunk the same whether it is new (one conditional UPDATE) or replaces an invalidated one', async () => {
    const run = await startRun(api, [10, 10]);
    // 0000: both chunks new, the second completes it
    const fresh = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', fresh.claimToken, 0, 2, 4));
    const freshDone = await report(api, chunkInput(run, '0000', fresh.claimToken, 1, 2, 6));
    // 0001: reissued after chunk 0, so chunk 0's row exists (invalidated) when the second owner reports it last
    const first = await claim(api, run.runId, '0001');
    await report(api, chunkInput(run, '0001', first.claimToken, 0, 2, 4));
    const reissued = await api.gql(
      `mutation($input: ReissuePartitionInput!) { reissuePartition(input: $input) { partitionStatus } }`,
      { input: { runId: run.runId, partitionId: '0001', reason: 'node lost' } },
      { token: 'operator' },
    );
    expect(reissued.body.data?.reissuePartition).toEqual({ partitionStatus: 'RETRY' });
    const second = await claim(api, run.runId, '0001');
    await report(api, chunkInput(run, '0001', second.claimToken, 1, 2, 6));
    const replacedDone = await report(api, chunkInput(run, '0001', second.claimToken, 0, 2, 4));

    expect(freshDone.result).toMatchObject({
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTING',
      receivedChunks: 2,
      validationScheduled: false,
    });
    expect(replacedDone.result).toMatchObject({
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTED_VALIDATED',
      receivedChunks: 2,
      validationScheduled: true,
    });
    const { rows } = await api.sql.query(
      `SELECT partition_id, status, actual_row_count::int, file_count, fragment_count, byte_count::int, received_chunks,
              received_rows::int, received_bytes::int, reported_chunk_count, chunk_count_mismatches, completed_at IS NOT NULL AS completed
         FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id`,
      [run.runId],
    );
    const decided = {
      status: 'SUCCESS',
      actual_row_count: 10,
      file_count: 2,
      fragment_count: 2,
      byte_count: 100,
      received_chunks: 2,
      received_rows: 10,
      received_bytes: 100,
      reported_chunk_count: 2,
      chunk_count_mismatches: 0,
      completed: true,
    };
    expect(rows).toEqual([
      { partition_id: '0000', ...decided },
      { partition_id: '0001', ...decided },
    ]);
    const { rows: events } = await api.sql.query(
      `SELECT partition_id, row_count::int, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PARTITION_SUCCESS' ORDER BY partition_id`,
      [run.runId],
    );
    expect(events).toEqual([
      { partition_id: '0000', row_count: 10, details: { files: 2, bytes: 100 } },
      { partition_id: '0001', row_count: 10, details: { files: 2, bytes: 100 } },
    ]);
    const { rows: validations } = await api.sql.query(
      `SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE run_id = $1 AND dispatch_type = 'VALIDATE_RUN'`,
      [run.runId],
    );
    expect(validations[0].n).toBe(1);
  });

  it('treats a duplicate chunk as idempotent', async () => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    for (let i = 0; i < 3; i++) {
      const r = await report(api, chunkInput(run, '0000', p.claimToken, 0, 2, 4));
      expect(r.result).toMatchObject({ receivedChunks: 1, partitionStatus: 'RUNNING' });
    }
    const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1', [run.runId]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a changed chunk for a successful partition with 409 CHUNK_CONFLICT and keeps the stored row', async () => {
    const run = await startRun(api, [10, 5]);
    const p = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', p.claimToken, 0, 1, 10));
    const conflict = await report(api, chunkInput(run, '0000', p.claimToken, 0, 1, 9));
    expect([conflict.status, conflict.code]).toEqual([409, 'CHUNK_CONFLICT']);
    const { rows } = await api.sql.query(`SELECT record_count::int FROM nifi_ops.load_file WHERE run_id = $1`, [run.runId]);
    expect(rows).toEqual([{ record_count: 10 }]);
  });

  it('refuses a report from a token that is not the owner with 409 CLAIM_MISMATCH', async () => {
    const run = await startRun(api, [10]);
    await claim(api, run.runId, '0000');
    const res = await report(api, chunkInput(run, '0000', randomUUID(), 0, 1, 10));
    expect([res.status, res.code]).toEqual([409, 'CLAIM_MISMATCH']);
    const unclaimed = await startRun(api, [10]);
    const never = await report(api, chunkInput(unclaimed, '0000', randomUUID(), 0, 1, 10));
    expect(never.code).toBe('CLAIM_MISMATCH');
  });

  it('fails the partition and the run on a row count mismatch, with no dispatch', async () => {
    const run = await startRun(api, [10, 5]);
    const p = await claim(api, run.runId, '0000');
    const res = await report(api, chunkInput(run, '0000', p.claimToken, 0, 1, 9));
    expect(res.status).toBe(200);
    expect(res.result).toMatchObject({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT', validationScheduled: false });
    const { rows } = await api.sql.query(
      `SELECT status, error_stage, error_code, failed_partition_count FROM nifi_ops.load_run WHERE run_id = $1`,
      [run.runId],
    );
    expect(rows[0]).toEqual({
      status: 'FAILED_EXTRACT',
      error_stage: 'PARTITION_GATE',
      error_code: 'ROW_COUNT_MISMATCH',
      failed_partition_count: 1,
    });
    const { rows: part } = await api.sql.query(
      `SELECT error_code, error_message FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect(part[0].error_code).toBe('ROW_COUNT_MISMATCH');
    expect(part[0].error_message).toBe('files=1 chunkCount=1 chunkCountMismatches=0 rows=9 expected=10');
    expect(await dispatchCount(run.runId)).toBe(0);
  });

  it('fails the partition when chunks disagree about the chunk count', async () => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', p.claimToken, 0, 3, 4));
    const res = await report(api, chunkInput(run, '0000', p.claimToken, 1, 2, 6));
    expect(res.result).toMatchObject({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT' });
  });

  it('re-reporting a chunk with other content before success replaces it in the totals', async () => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', p.claimToken, 0, 2, 3));
    await report(api, chunkInput(run, '0000', p.claimToken, 0, 2, 4)); // the writer rewrote chunk 0
    const done = await report(api, chunkInput(run, '0000', p.claimToken, 1, 2, 6));
    expect(done.result).toMatchObject({ partitionStatus: 'SUCCESS', runStatus: 'EXTRACTED_VALIDATED', validationScheduled: true });
  });

  it('records but ignores reports after the run failed', async () => {
    const run = await startRun(api, [3, 4]);
    const p0 = await claim(api, run.runId, '0000');
    const p1 = await claim(api, run.runId, '0001');
    const fail = await api.gql(FAIL_PARTITION, {
      input: {
        runId: run.runId,
        partitionId: '0000',
        claimToken: p0.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'IO',
        errorCode: 'HDFS_WRITE',
        attempt: '3',
      },
    });
    expect(fail.body.data!.failPartition).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT', changed: true });
    const late = await report(api, chunkInput(run, '0001', p1.claimToken, 0, 1, 4));
    expect(late.status).toBe(200);
    expect(late.result).toMatchObject({
      recorded: true,
      runStatus: 'FAILED_EXTRACT',
      partitionStatus: 'RUNNING',
      validationScheduled: false,
    });
    const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1`, [run.runId]);
    expect(rows[0].n).toBe(1);
    expect(await dispatchCount(run.runId)).toBe(0);
  });

  it('refuses paths outside the run and chunk indexes out of range with 422', async () => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    const outside = await report(api, { ...chunkInput(run, '0000', p.claimToken, 0, 1, 10), hdfsPath: '/data/other/part-0.parquet' });
    expect([outside.status, outside.code]).toEqual([422, 'HDFS_PATH_OUTSIDE_RUN']);
    const traversal = await report(api, {
      ...chunkInput(run, '0000', p.claimToken, 0, 1, 10),
      hdfsPath: `${run.hdfsRunPath}/../x.parquet`,
    });
    expect([traversal.status, traversal.code]).toEqual([422, 'HDFS_PATH_OUTSIDE_RUN']);
    const sibling = await report(api, { ...chunkInput(run, '0000', p.claimToken, 0, 1, 10), hdfsPath: `${run.hdfsRunPath}x/part.parquet` });
    expect(sibling.code).toBe('HDFS_PATH_OUTSIDE_RUN');
    const range = await report(api, chunkInput(run, '0000', p.claimToken, 1, 1, 10));
    expect([range.status, range.code]).toEqual([422, 'CHUNK_INDEX_OUT_OF_RANGE']);
    const rangeUnknownRun = await report(api, { ...chunkInput(run, '0000', p.claimToken, 2, 2, 10), runId: randomUUID() });
    expect(rangeUnknownRun.code).toBe('CHUNK_INDEX_OUT_OF_RANGE');
  });

  it('refuses one HDFS path recorded for two chunks with 409 FILE_PATH_CONFLICT', async () => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    const path = `${run.hdfsRunPath}/same.parquet`;
    await report(api, { ...chunkInput(run, '0000', p.claimToken, 0, 2, 5), hdfsPath: path });
    const res = await report(api, { ...chunkInput(run, '0000', p.claimToken, 1, 2, 5), hdfsPath: path });
    expect([res.status, res.code]).toEqual([409, 'FILE_PATH_CONFLICT']);
  });

  it('answers 404 for an unknown run or partition', async () => {
    const run = await startRun(api, [10]);
    const p = await claim(api, run.runId, '0000');
    const unknownRun = await report(api, { ...chunkInput(run, '0000', p.claimToken, 0, 1, 10), runId: randomUUID() });
    expect([unknownRun.status, unknownRun.code]).toEqual([404, 'RUN_NOT_FOUND']);
    const unknownPartition = await report(api, chunkInput(run, '0007', p.claimToken, 0, 1, 10));
    expect([unknownPartition.status, unknownPartition.code]).toEqual([404, 'PARTITION_NOT_FOUND']);
  });

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
  const failInput = (runId: string, claimToken: string, overrides: Record<string, unknown> = {}) => ({
    runId,
    partitionId: '0000',
    claimToken,
    errorStage: 'EXTRACT',
    errorClass: 'SQL',
    errorCode: 'ORA-00942',
    message: 'table missing',
    ...overrides,
  });

  it('marks a snapshot error FAILED_SNAPSHOT_EXPIRED and replays as changed=false', async () => {
    const run = await startRun(api, [3, 4]);
    const p = await claim(api, run.runId, '0000');
    const res = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p.claimToken, { errorCode: 'ora-01555' }) });
    expect(res.body.data!.failPartition).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_SNAPSHOT_EXPIRED', changed: true });
    const replay = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p.claimToken, { errorCode: 'ora-01555' }) });
    expect(replay.body.data!.failPartition).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_SNAPSHOT_EXPIRED', changed: false });
    const { rows } = await api.sql.query(`SELECT error_message FROM nifi_ops.load_run WHERE run_id = $1`, [run.runId]);
    expect(rows[0].error_message).toBe('partition 0000: table missing');
  });

  it('treats errorClass SNAPSHOT as a snapshot error too', async () => {
    const run = await startRun(api, [3]);
    const p = await claim(api, run.runId, '0000');
    const res = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p.claimToken, { errorClass: 'snapshot' }) });
    expect(res.body.data!.failPartition.runStatus).toBe('FAILED_SNAPSHOT_EXPIRED');
  });

  it('refuses a foreign token with CLAIM_MISMATCH and a successful partition with PARTITION_STATUS_MISMATCH', async () => {
    const run = await startRun(api, [3, 4]);
    const p = await claim(api, run.runId, '0000');
    const foreign = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, randomUUID()) });
    expect([foreign.status, foreign.code]).toEqual([409, 'CLAIM_MISMATCH']);
    await report(api, chunkInput(run, '0000', p.claimToken, 0, 1, 3));
    const done = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p.claimToken) });
    expect([done.status, done.code]).toEqual([409, 'PARTITION_STATUS_MISMATCH']);
    expect(done.details).toEqual({ partitionStatus: 'SUCCESS' });
    const unknown = await api.gql(FAIL_PARTITION, { input: failInput(randomUUID(), p.claimToken) });
    expect(unknown.code).toBe('RUN_NOT_FOUND');
    const unknownPartition = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p.claimToken, { partitionId: '0005' }) });
    expect(unknownPartition.code).toBe('PARTITION_NOT_FOUND');
  });

  it('only fails the partition when the run already left EXTRACTING', async () => {
    const run = await startRun(api, [3, 4]);
    const p0 = await claim(api, run.runId, '0000');
    const p1 = await claim(api, run.runId, '0001');
    await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p0.claimToken) });
    const second = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p1.claimToken, { partitionId: '0001' }) });
    expect(second.body.data!.failPartition).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT', changed: true });
    const { rows } = await api.sql.query(`SELECT failed_partition_count, error_code FROM nifi_ops.load_run WHERE run_id = $1`, [run.runId]);
    expect(rows[0]).toEqual({ failed_partition_count: 2, error_code: 'ORA-00942' });
  });

  it('refuses an over-long errorClass with 422, not a database error', async () => {
    const run = await startRun(api, [3]);
    const p = await claim(api, run.runId, '0000');
    const res = await api.gql(FAIL_PARTITION, { input: failInput(run.runId, p.claimToken, { errorClass: 'C'.repeat(41) }) });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
  });
});
