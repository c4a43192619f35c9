// Extraction's rules (ref §3.6–3.8): claimPartition, reportChunk and failPartition performed on the database
// directly — the partitions' and the run's transitions, the counters, the soft refusals and the contract's errors.
// Input parsing (422 INVALID_INPUT) is in test/api/chunks/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { type ReportChunkCommand, reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { listRunsEvents } from '../../../src/domain/events/events.js';
import { claimPartitionOperation } from '../../../src/domain/partitions/claim-partition.js';
import { listPartitions, partitionCounts } from '../../../src/domain/runs/queries.js';
import { chunk, claimed, type DomainTest, partitionFailed, refusal, reissued, startDomainTest, startedRun } from '../support/fixtures.js';

/** A claim of a job in no source pool: no pool, and no reason to wait. */
const NOT_POOLED = { reason: null, retryAfter: null, pool: null };
let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const report = (cmd: ReportChunkCommand) => perform(t.db, reportChunkOperation, cmd);

const dispatchCount = async (runId: string) =>
  (await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE run_id = $1', [runId])).rows[0].n as number;

describe('claimPartition', () => {
  it('gives the partition to one token; the same token again is a replay; others get claimed=false', async () => {
    const run = await startedRun(t, [3, 4]);
    const first = await claimed(t, run.runId, '0000');
    expect(first).toEqual({
      claimed: true,
      runStatus: 'EXTRACTING',
      partitionStatus: 'RUNNING',
      attempt: 1,
      claimToken: first.claimToken,
      ...NOT_POOLED,
    });
    const other = await perform(t.db, claimPartitionOperation, {
      runId: run.runId,
      partitionId: '0000',
      claimToken: randomUUID(),
      workerNode: 'nifi-02',
      actor: 'nifi-cluster',
    });
    expect(other).toEqual({ claimed: false, runStatus: 'EXTRACTING', partitionStatus: 'RUNNING', attempt: 1, ...NOT_POOLED });
    const replay = await claimed(t, run.runId, '0000', first.claimToken);
    expect(replay).toEqual({
      claimed: true,
      runStatus: 'EXTRACTING',
      partitionStatus: 'RUNNING',
      attempt: 1,
      claimToken: first.claimToken,
      ...NOT_POOLED,
    });
    const { rows } = await t.sql.query(
      `SELECT attempt_count, worker_node, claimed_by FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect(rows[0]).toEqual({ attempt_count: 1, worker_node: 'nifi-01', claimed_by: 'nifi-cluster' });
    const { rows: events } = await t.sql.query(
      `SELECT details, actor FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PARTITION_STARTED'`,
      [run.runId],
    );
    expect(events).toEqual([{ details: { workerNode: 'nifi-01', attempt: 1 }, actor: 'nifi-cluster' }]);
  });

  it('answers 404 for an unknown partition or run', async () => {
    const run = await startedRun(t, [3]);
    const unknownPartition = await refusal(claimed(t, run.runId, '0009'));
    expect([unknownPartition.httpStatus, unknownPartition.code]).toEqual([404, 'PARTITION_NOT_FOUND']);
    const unknownRun = await refusal(claimed(t, randomUUID(), '0000'));
    expect([unknownRun.httpStatus, unknownRun.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });

  it('refuses claims with claimed=false once the run is not extracting', async () => {
    const run = await startedRun(t, [3, 4]);
    const owner = await claimed(t, run.runId, '0000');
    await partitionFailed(t, run.runId, owner.claimToken, { message: '' });
    const late = await claimed(t, run.runId, '0001');
    expect(late).toEqual({
      claimed: false,
      runStatus: 'FAILED_EXTRACT',
      partitionStatus: 'PENDING',
      attempt: 0,
      claimToken: late.claimToken,
      ...NOT_POOLED,
    });
  });
});

describe('reportChunk', () => {
  it('completes partitions and then the run exactly once, writing one VALIDATE_RUN dispatch', async () => {
    const run = await startedRun(t, [10, 7, 0]);
    const p0 = await claimed(t, run.runId, '0000');
    const p1 = await claimed(t, run.runId, '0001');
    const first = await report(chunk(run, '0000', p0.claimToken, 0, 2, 4));
    expect(first).toEqual({
      recorded: true,
      partitionStatus: 'RUNNING',
      runStatus: 'EXTRACTING',
      receivedChunks: 1,
      chunkCount: 2,
      validationScheduled: false,
      effect: 'PROGRESS',
    });
    const second = await report(chunk(run, '0000', p0.claimToken, 1, 2, 6));
    expect(second).toMatchObject({ partitionStatus: 'SUCCESS', runStatus: 'EXTRACTING', receivedChunks: 2 });
    const last = await report(chunk(run, '0001', p1.claimToken, 0, 1, 7));
    expect(last).toEqual({
      recorded: true,
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTED_VALIDATED',
      receivedChunks: 1,
      chunkCount: 1,
      validationScheduled: true,
      effect: 'RUN_COMPLETE',
    });
    const { rows } = await t.sql.query(
      `SELECT extracted_count::int, success_partition_count, extract_completed_at FROM nifi_ops.load_run WHERE run_id = $1`,
      [run.runId],
    );
    expect(rows[0]).toMatchObject({ extracted_count: 17, success_partition_count: 3 });
    expect(rows[0].extract_completed_at).toBeInstanceOf(Date);
    const { rows: dispatches } = await t.sql.query(`SELECT dispatch_type, status FROM nifi_ops.load_dispatch WHERE run_id = $1`, [
      run.runId,
    ]);
    expect(dispatches).toEqual([{ dispatch_type: 'VALIDATE_RUN', status: 'PENDING' }]);
    const [events] = await listRunsEvents(t.db.prisma, [run.runId], 50);
    const names = events!.map((e) => e.name);
    expect(names.filter((n) => n === 'PARTITION_SUCCESS')).toHaveLength(2);
    expect(names.at(-1)).toBe('EXTRACT_VALIDATED');
    expect(await partitionCounts(t.db.prisma, [run.runId])).toEqual([[{ status: 'SUCCESS', count: 3 }]]);
    expect((await listPartitions(t.db.prisma, run.runId, null)).find((p) => p.partitionId === '0000')).toMatchObject({
      status: 'SUCCESS',
      expectedRowCount: 10n,
      actualRowCount: 10n,
      fileCount: 2,
      attemptCount: 1,
    });

    const replay = await report(chunk(run, '0001', p1.claimToken, 0, 1, 7));
    expect(replay).toEqual({
      recorded: true,
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTED_VALIDATED',
      receivedChunks: 1,
      chunkCount: 1,
      validationScheduled: false,
      effect: 'IGNORED',
    });
    expect(await dispatchCount(run.runId)).toBe(1);
  });

  it('decides a completing chunk the same whether it is new (one conditional UPDATE) or replaces an invalidated one', async () => {
    const run = await startedRun(t, [10, 10]);
    // 0000: both chunks new, the second completes it
    const fresh = await claimed(t, run.runId, '0000');
    await report(chunk(run, '0000', fresh.claimToken, 0, 2, 4));
    const freshDone = await report(chunk(run, '0000', fresh.claimToken, 1, 2, 6));
    // 0001: reissued after chunk 0, so chunk 0's row exists (invalidated) when the second owner reports it last
    const first = await claimed(t, run.runId, '0001');
    await report(chunk(run, '0001', first.claimToken, 0, 2, 4));
    expect((await reissued(t, run.runId, '0001', 'node lost')).partitionStatus).toBe('RETRY');
    const second = await claimed(t, run.runId, '0001');
    await report(chunk(run, '0001', second.claimToken, 1, 2, 6));
    const replacedDone = await report(chunk(run, '0001', second.claimToken, 0, 2, 4));

    expect(freshDone).toMatchObject({
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTING',
      receivedChunks: 2,
      validationScheduled: false,
    });
    expect(replacedDone).toMatchObject({
      partitionStatus: 'SUCCESS',
      runStatus: 'EXTRACTED_VALIDATED',
      receivedChunks: 2,
      validationScheduled: true,
    });
    const { rows } = await t.sql.query(
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
    const { rows: events } = await t.sql.query(
      `SELECT partition_id, row_count::int, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PARTITION_SUCCESS' ORDER BY partition_id`,
      [run.runId],
    );
    expect(events).toEqual([
      { partition_id: '0000', row_count: 10, details: { files: 2, bytes: 100 } },
      { partition_id: '0001', row_count: 10, details: { files: 2, bytes: 100 } },
    ]);
    const { rows: validations } = await t.sql.query(
      `SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE run_id = $1 AND dispatch_type = 'VALIDATE_RUN'`,
      [run.runId],
    );
    expect(validations[0].n).toBe(1);
  });

  it('treats a duplicate chunk as idempotent', async () => {
    const run = await startedRun(t, [10]);
    const p = await claimed(t, run.runId, '0000');
    for (let i = 0; i < 3; i++) {
      const r = await report(chunk(run, '0000', p.claimToken, 0, 2, 4));
      expect(r).toMatchObject({ receivedChunks: 1, partitionStatus: 'RUNNING' });
    }
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1', [run.runId]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a changed chunk for a successful partition with 409 CHUNK_CONFLICT and keeps the stored row', async () => {
    const run = await startedRun(t, [10, 5]);
    const p = await claimed(t, run.runId, '0000');
    await report(chunk(run, '0000', p.claimToken, 0, 1, 10));
    const conflict = await refusal(report(chunk(run, '0000', p.claimToken, 0, 1, 9)));
    expect([conflict.httpStatus, conflict.code]).toEqual([409, 'CHUNK_CONFLICT']);
    const { rows } = await t.sql.query(`SELECT record_count::int FROM nifi_ops.load_file WHERE run_id = $1`, [run.runId]);
    expect(rows).toEqual([{ record_count: 10 }]);
  });

  it('refuses a report from a token that is not the owner with 409 CLAIM_MISMATCH', async () => {
    const run = await startedRun(t, [10]);
    await claimed(t, run.runId, '0000');
    const res = await refusal(report(chunk(run, '0000', randomUUID(), 0, 1, 10)));
    expect([res.httpStatus, res.code]).toEqual([409, 'CLAIM_MISMATCH']);
    const unclaimed = await startedRun(t, [10]);
    const never = await refusal(report(chunk(unclaimed, '0000', randomUUID(), 0, 1, 10)));
    expect(never.code).toBe('CLAIM_MISMATCH');
  });

  it('fails the partition and the run on a row count mismatch, with no dispatch', async () => {
    const run = await startedRun(t, [10, 5]);
    const p = await claimed(t, run.runId, '0000');
    const res = await report(chunk(run, '0000', p.claimToken, 0, 1, 9));
    expect(res).toMatchObject({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT', validationScheduled: false });
    const { rows } = await t.sql.query(
      `SELECT status, error_stage, error_code, failed_partition_count FROM nifi_ops.load_run WHERE run_id = $1`,
      [run.runId],
    );
    expect(rows[0]).toEqual({
      status: 'FAILED_EXTRACT',
      error_stage: 'PARTITION_GATE',
      error_code: 'ROW_COUNT_MISMATCH',
      failed_partition_count: 1,
    });
    const { rows: part } = await t.sql.query(
      `SELECT error_code, error_message FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect(part[0].error_code).toBe('ROW_COUNT_MISMATCH');
    expect(part[0].error_message).toBe('files=1 chunkCount=1 chunkCountMismatches=0 rows=9 expected=10');
    expect(await dispatchCount(run.runId)).toBe(0);
  });

  it('fails the partition when chunks disagree about the chunk count', async () => {
    const run = await startedRun(t, [10]);
    const p = await claimed(t, run.runId, '0000');
    await report(chunk(run, '0000', p.claimToken, 0, 3, 4));
    const res = await report(chunk(run, '0000', p.claimToken, 1, 2, 6));
    expect(res).toMatchObject({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT' });
  });

  it('re-reporting a chunk with other content before success replaces it in the totals', async () => {
    const run = await startedRun(t, [10]);
    const p = await claimed(t, run.runId, '0000');
    await report(chunk(run, '0000', p.claimToken, 0, 2, 3));
    await report(chunk(run, '0000', p.claimToken, 0, 2, 4)); // the writer rewrote chunk 0
    const done = await report(chunk(run, '0000', p.claimToken, 1, 2, 6));
    expect(done).toMatchObject({ partitionStatus: 'SUCCESS', runStatus: 'EXTRACTED_VALIDATED', validationScheduled: true });
  });

  it('records but ignores reports after the run failed', async () => {
    const run = await startedRun(t, [3, 4]);
    const p0 = await claimed(t, run.runId, '0000');
    const p1 = await claimed(t, run.runId, '0001');
    const fail = await partitionFailed(t, run.runId, p0.claimToken, { errorClass: 'IO', errorCode: 'HDFS_WRITE', message: '', attempt: 3 });
    expect(fail).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT', changed: true });
    const late = await report(chunk(run, '0001', p1.claimToken, 0, 1, 4));
    expect(late).toMatchObject({
      recorded: true,
      runStatus: 'FAILED_EXTRACT',
      partitionStatus: 'RUNNING',
      validationScheduled: false,
    });
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1`, [run.runId]);
    expect(rows[0].n).toBe(1);
    expect(await dispatchCount(run.runId)).toBe(0);
  });

  it('refuses paths outside the run and chunk indexes out of range with 422', async () => {
    const run = await startedRun(t, [10]);
    const p = await claimed(t, run.runId, '0000');
    const outside = await refusal(report({ ...chunk(run, '0000', p.claimToken, 0, 1, 10), hdfsPath: '/data/other/part-0.parquet' }));
    expect([outside.httpStatus, outside.code]).toEqual([422, 'HDFS_PATH_OUTSIDE_RUN']);
    const traversal = await refusal(
      report({
        ...chunk(run, '0000', p.claimToken, 0, 1, 10),
        hdfsPath: `${run.hdfsRunPath}/../x.parquet`,
      }),
    );
    expect([traversal.httpStatus, traversal.code]).toEqual([422, 'HDFS_PATH_OUTSIDE_RUN']);
    const sibling = await refusal(report({ ...chunk(run, '0000', p.claimToken, 0, 1, 10), hdfsPath: `${run.hdfsRunPath}x/part.parquet` }));
    expect(sibling.code).toBe('HDFS_PATH_OUTSIDE_RUN');
    const range = await refusal(report(chunk(run, '0000', p.claimToken, 1, 1, 10)));
    expect([range.httpStatus, range.code]).toEqual([422, 'CHUNK_INDEX_OUT_OF_RANGE']);
    const rangeUnknownRun = await refusal(report({ ...chunk(run, '0000', p.claimToken, 2, 2, 10), runId: randomUUID() }));
    expect(rangeUnknownRun.code).toBe('CHUNK_INDEX_OUT_OF_RANGE');
  });

  it('refuses one HDFS path recorded for two chunks with 409 FILE_PATH_CONFLICT', async () => {
    const run = await startedRun(t, [10]);
    const p = await claimed(t, run.runId, '0000');
    const path = `${run.hdfsRunPath}/same.parquet`;
    await report({ ...chunk(run, '0000', p.claimToken, 0, 2, 5), hdfsPath: path });
    const res = await refusal(report({ ...chunk(run, '0000', p.claimToken, 1, 2, 5), hdfsPath: path }));
    expect([res.httpStatus, res.code]).toEqual([409, 'FILE_PATH_CONFLICT']);
  });

  it('answers 404 for an unknown run or partition', async () => {
    const run = await startedRun(t, [10]);
    const p = await claimed(t, run.runId, '0000');
    const unknownRun = await refusal(report({ ...chunk(run, '0000', p.claimToken, 0, 1, 10), runId: randomUUID() }));
    expect([unknownRun.httpStatus, unknownRun.code]).toEqual([404, 'RUN_NOT_FOUND']);
    const unknownPartition = await refusal(report(chunk(run, '0007', p.claimToken, 0, 1, 10)));
    expect([unknownPartition.httpStatus, unknownPartition.code]).toEqual([404, 'PARTITION_NOT_FOUND']);
  });
});

describe('failPartition', () => {
  it('marks a snapshot error FAILED_SNAPSHOT_EXPIRED and replays as changed=false', async () => {
    const run = await startedRun(t, [3, 4]);
    const p = await claimed(t, run.runId, '0000');
    const res = await partitionFailed(t, run.runId, p.claimToken, { errorCode: 'ora-01555' });
    expect(res).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_SNAPSHOT_EXPIRED', changed: true });
    const replay = await partitionFailed(t, run.runId, p.claimToken, { errorCode: 'ora-01555' });
    expect(replay).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_SNAPSHOT_EXPIRED', changed: false });
    const { rows } = await t.sql.query(`SELECT error_message FROM nifi_ops.load_run WHERE run_id = $1`, [run.runId]);
    expect(rows[0].error_message).toBe('partition 0000: table missing');
  });

  it('treats errorClass SNAPSHOT as a snapshot error too', async () => {
    const run = await startedRun(t, [3]);
    const p = await claimed(t, run.runId, '0000');
    const res = await partitionFailed(t, run.runId, p.claimToken, { errorClass: 'snapshot' });
    expect(res.runStatus).toBe('FAILED_SNAPSHOT_EXPIRED');
  });

  it('refuses a foreign token with CLAIM_MISMATCH and a successful partition with PARTITION_STATUS_MISMATCH', async () => {
    const run = await startedRun(t, [3, 4]);
    const p = await claimed(t, run.runId, '0000');
    const foreign = await refusal(partitionFailed(t, run.runId, randomUUID()));
    expect([foreign.httpStatus, foreign.code]).toEqual([409, 'CLAIM_MISMATCH']);
    await report(chunk(run, '0000', p.claimToken, 0, 1, 3));
    const done = await refusal(partitionFailed(t, run.runId, p.claimToken));
    expect([done.httpStatus, done.code]).toEqual([409, 'PARTITION_STATUS_MISMATCH']);
    expect(done.details).toEqual({ partitionStatus: 'SUCCESS' });
    const unknown = await refusal(partitionFailed(t, randomUUID(), p.claimToken));
    expect(unknown.code).toBe('RUN_NOT_FOUND');
    const unknownPartition = await refusal(partitionFailed(t, run.runId, p.claimToken, { partitionId: '0005' }));
    expect(unknownPartition.code).toBe('PARTITION_NOT_FOUND');
  });

  it('only fails the partition when the run already left EXTRACTING', async () => {
    const run = await startedRun(t, [3, 4]);
    const p0 = await claimed(t, run.runId, '0000');
    const p1 = await claimed(t, run.runId, '0001');
    await partitionFailed(t, run.runId, p0.claimToken);
    const second = await partitionFailed(t, run.runId, p1.claimToken, { partitionId: '0001' });
    expect(second).toEqual({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT', changed: true });
    const { rows } = await t.sql.query(`SELECT failed_partition_count, error_code FROM nifi_ops.load_run WHERE run_id = $1`, [run.runId]);
    expect(rows[0]).toEqual({ failed_partition_count: 2, error_code: 'ORA-00942' });
  });
});
