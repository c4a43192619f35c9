// reportChunk's group commit: a batch must decide every report as report_chunk decides it alone, and batches
// from separate processes (separate pools) racing on one run must still decide completion exactly once.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../support/until.js';
import { reportChunk, type ReportChunkCommand, type ReportChunkResult } from '../../../src/domain/chunks/report-chunk.js';
import type { DomainError } from '../../../src/contract/errors.js';
import { createChunkReporter, type ChunkReporter } from '../../../src/domain/chunks/chunk-reporter.js';
import { createDb, type Db } from '../../../src/db/client.js';
import { inStatement } from '../../../src/db/transaction.js';
import { chunk, claimed, type DomainTest, startDomainTest, startedRun } from '../support/fixtures.js';
import { DATABASE_TIMEOUT_DEFAULTS } from '../../../src/config/config.js';

let t: DomainTest;
const pools: Db[] = [];
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => {
  await Promise.all(pools.map((db) => db.close()));
  await t?.close();
});

const REPETITIONS = 10;
/** What pg_stat_activity shows for the reporters' connections. */
const REPORTER_APPLICATION = 'chunk-reporter-test';

/** A reporter on its own pool, as another API process would have; one batch in flight, so reports queue. */
function reporter(options: { maxInFlight?: number; answerWithin?: number; statementTimeout?: number } = {}): {
  reporter: ChunkReporter;
  batches: number[];
  close(): Promise<void>;
} {
  const timeouts = {
    ...DATABASE_TIMEOUT_DEFAULTS,
    statementTimeout: options.statementTimeout ?? DATABASE_TIMEOUT_DEFAULTS.statementTimeout,
  };
  const db = createDb(t.database.url, { poolSize: 4, timeouts, applicationName: REPORTER_APPLICATION });
  pools.push(db);
  const batches: number[] = [];
  return {
    reporter: createChunkReporter(db, {
      maxInFlight: options.maxInFlight ?? 1,
      // the deadline's own tests set theirs; the others prove exactly-once, which a loaded machine must not turn into
      // 503s at the production bound (acquire + statement)
      answerWithin: options.answerWithin ?? 60_000,
      onBatch: (size) => batches.push(size),
    }),
    batches,
    close: () => db.close().then(() => void pools.splice(pools.indexOf(db), 1)),
  };
}

/** One report alone, as report_chunk decides it. */
const reportAlone = (cmd: ReportChunkCommand) => inStatement(t.db, (sql, afterCommit) => reportChunk(sql, cmd, afterCommit));

const pid = (i: number) => String(i).padStart(4, '0');

/** A run of `partitions` partitions of `chunks` chunks of 5 rows each, every partition claimed, and its reports. */
async function claimedRun(partitions: number, chunks: number) {
  const run = await startedRun(
    t,
    Array.from({ length: partitions }, () => chunks * 5),
  );
  const tokens = await Promise.all(Array.from({ length: partitions }, (_, i) => claimed(t, run.runId, pid(i)).then((c) => c.claimToken)));
  const reports = tokens.flatMap((token, i) => Array.from({ length: chunks }, (_c, k) => chunk(run, pid(i), token, k, chunks, 5)));
  return { run, tokens, reports };
}

/** What a run's reports left behind, without ids and times: partitions, chunk rows, events, run, outbox. */
async function ledger(runId: string) {
  const partitions = await t.sql.query(
    `SELECT partition_id, status, actual_row_count::int, file_count, fragment_count, byte_count::int, received_chunks,
            received_rows::int, received_bytes::int, reported_chunk_count, chunk_count_mismatches, completed_at IS NOT NULL AS completed
       FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id`,
    [runId],
  );
  const files = await t.sql.query(
    `SELECT partition_id, chunk_index, fragment_identifier, fragment_count, record_count::int, byte_count::int, status, reported_by
       FROM nifi_ops.load_file WHERE run_id = $1 ORDER BY partition_id, chunk_index`,
    [runId],
  );
  const events = await t.sql.query(
    `SELECT event_level, event_name, partition_id, job_key,
            business_key = (SELECT business_key FROM nifi_ops.load_run r WHERE r.run_id = $1) AS business_key_of_run,
            process_group, processor_name, row_count::int, details, actor
       FROM nifi_ops.load_event WHERE run_id = $1 AND event_name IN ('PARTITION_SUCCESS', 'EXTRACT_VALIDATED')
      ORDER BY event_name, partition_id`,
    [runId],
  );
  const run = await t.sql.query(
    `SELECT status, success_partition_count, failed_partition_count, extracted_count::int, extract_completed_at IS NOT NULL AS completed,
            (SELECT count(*)::int FROM nifi_ops.load_dispatch d WHERE d.run_id = r.run_id AND d.dispatch_type = 'VALIDATE_RUN') AS validations
       FROM nifi_ops.load_run r WHERE run_id = $1`,
    [runId],
  );
  return { partitions: partitions.rows, files: files.rows, events: events.rows, run: run.rows[0] };
}

/** A transaction holding the lock of a run's partition 0000, as a slow concurrent writer would. */
async function lockPartition(runId: string) {
  const holder = await t.sql.connect();
  await holder.query('BEGIN');
  await holder.query(`SELECT 1 FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0000' FOR UPDATE`, [runId]);
  return holder;
}

// this test's database only: another run of this file on the same server has reporters of the same name
const WAITING_ON_LOCK = `FROM pg_stat_activity
  WHERE datname = current_database() AND application_name = '${REPORTER_APPLICATION}' AND wait_event_type = 'Lock'`;

/** Waits until this many reporter statements wait for a lock; answers how many do. */
async function waitingOnLock(n: number): Promise<number> {
  return until(`${n} reporter statement(s) to wait for the lock`, async () => {
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n ${WAITING_ON_LOCK}`);
    return rows[0].n === n ? n : null;
  });
}

/** Ends the connections of the reporter statements waiting for a lock, as a failing server would. */
async function terminateWaiting(): Promise<void> {
  await t.sql.query(`SELECT pg_terminate_backend(pid) ${WAITING_ON_LOCK}`);
}

const settled = (promises: Array<Promise<ReportChunkResult>>) =>
  Promise.all(
    promises.map((p) =>
      p.then(
        (result): { result?: ReportChunkResult; error?: unknown } => ({ result }),
        (error: unknown) => ({ error }),
      ),
    ),
  );

describe('chunk reporter (group commit)', () => {
  it('sends a report alone when nothing waits, and the reports that queued behind it as one batch', async () => {
    const { reporter: r, batches } = reporter();
    const { reports } = await claimedRun(4, 3);
    const results = await Promise.all(reports.map((cmd) => r.report(cmd)));
    expect(batches).toEqual([1, reports.length - 1]);
    expect(results.filter((x) => x.validationScheduled)).toHaveLength(1);
    expect(results.at(-1)).toMatchObject({ effect: 'RUN_COMPLETE', partitionStatus: 'SUCCESS', runStatus: 'EXTRACTED_VALIDATED' });
  });

  it("batches only one caller's reports, and each batch's events record that caller", async () => {
    const { reporter: r, batches } = reporter();
    const { run, reports } = await claimedRun(4, 3);
    const callers = [
      { method: 'JWT', issuer: 'https://idp.test', subject: 'nifi-a' },
      { method: 'JWT', issuer: 'https://idp.test', subject: 'nifi-b' },
    ] as const;
    // partitions 0 and 1 reported by one node, 2 and 3 by the other, interleaved in the queue
    const results = await Promise.all(
      reports.map((cmd) => {
        const caller = callers[Number(cmd.partitionId) % 2]!;
        return r.report({ ...cmd, actor: caller.subject, actingAs: caller });
      }),
    );
    expect(results.at(-1)).toMatchObject({ runStatus: 'EXTRACTED_VALIDATED' });
    expect(batches.length).toBeGreaterThanOrEqual(3);
    const { rows } = await t.sql.query(
      `SELECT partition_id, actor, actor_auth, actor_issuer, actor_subject FROM nifi_ops.load_event
        WHERE run_id = $1 AND event_name = 'PARTITION_SUCCESS' ORDER BY partition_id`,
      [run.runId],
    );
    expect(rows).toEqual(
      [0, 1, 2, 3].map((i) => {
        const caller = callers[i % 2]!;
        return {
          partition_id: pid(i),
          actor: caller.subject,
          actor_auth: 'JWT',
          actor_issuer: caller.issuer,
          actor_subject: caller.subject,
        };
      }),
    );
  });

  it('leaves the same ledger as the reports sent one by one through report_chunk', async () => {
    const one = await claimedRun(5, 3);
    for (const cmd of one.reports) await reportAlone(cmd);
    const { reporter: r, batches } = reporter();
    const batched = await claimedRun(5, 3);
    const results = await Promise.all(batched.reports.map((cmd) => r.report(cmd)));
    expect(Math.max(...batches)).toBeGreaterThan(1);

    expect(await ledger(batched.run.runId)).toEqual(await ledger(one.run.runId));
    const after = await ledger(batched.run.runId);
    expect(after.run).toEqual({
      status: 'EXTRACTED_VALIDATED',
      success_partition_count: 5,
      failed_partition_count: 0,
      extracted_count: 75,
      completed: true,
      validations: 1,
    });
    expect(after.events.filter((e) => e.event_name === 'PARTITION_SUCCESS')).toHaveLength(5);
    expect(results.map((x) => x.effect).sort()).toEqual(
      [...Array(10).fill('PROGRESS'), ...Array(4).fill('PARTITION_SUCCESS'), 'RUN_COMPLETE'].sort(),
    );
  });

  it('defers what the fast path does not take, and answers it as report_chunk does alone', async () => {
    const { run, tokens, reports } = await claimedRun(3, 2);
    const first = await reportAlone(reports[0]!);
    expect(first).toMatchObject({ effect: 'PROGRESS', receivedChunks: 1 });
    const { reporter: r, batches } = reporter();
    const blocker = r.report(reports[2]!); // sent alone; the rest queue behind it and go as one batch
    const outcomes = await settled([
      r.report(reports[0]!), // a replay of a recorded chunk
      r.report({ ...reports[1]!, claimToken: randomUUID() }), // not the owner
      r.report(chunk(run, '0009', tokens[0]!, 0, 2, 5)), // no such partition
      r.report(reports[4]!), // new, and the same chunk again in the same batch
      r.report(reports[4]!),
    ]);
    await blocker;
    expect(batches).toEqual([1, 5]);
    expect(outcomes[0]).toEqual({ result: expect.objectContaining({ effect: 'PROGRESS', receivedChunks: 1, partitionStatus: 'RUNNING' }) });
    expect((outcomes[1] as { error: DomainError }).error).toMatchObject({ code: 'CLAIM_MISMATCH' });
    expect((outcomes[2] as { error: DomainError }).error).toMatchObject({ code: 'PARTITION_NOT_FOUND' });
    expect(outcomes[3]).toEqual({ result: expect.objectContaining({ effect: 'PROGRESS', receivedChunks: 1 }) });
    expect(outcomes[4]).toEqual({ result: expect.objectContaining({ effect: 'PROGRESS', receivedChunks: 1 }) });
    const after = await ledger(run.runId);
    expect(after.partitions.map((p) => [p.partition_id, p.status, p.received_chunks])).toEqual([
      ['0000', 'RUNNING', 1],
      ['0001', 'RUNNING', 1],
      ['0002', 'RUNNING', 1],
    ]);
    expect(after.files).toHaveLength(3);
  });

  it('defers, without an error, every report of a run that is no longer EXTRACTING (first in its batch or not)', async () => {
    const { run, tokens, reports } = await claimedRun(2, 1);
    for (const cmd of reports) expect(await reportAlone(cmd)).toMatchObject({ partitionStatus: 'SUCCESS' });
    const moved = await t.sql.query<{ status: string }>('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(moved.rows[0]!.status).toBe('EXTRACTED_VALIDATED');
    const other = await claimedRun(1, 2);
    // the same statement the reporter sends: the completed run's replays and a new chunk of another run
    const batch = [reports[0]!, reports[1]!, other.reports[0]!];
    const { rows } = await t.sql.query<{ ordinal: number; outcome: string }>(
      'SELECT ordinal, outcome FROM nifi_ops.report_chunks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ORDER BY ordinal',
      [
        batch.map((c) => c.runId),
        batch.map((c) => c.partitionId),
        batch.map((c) => c.claimToken),
        batch.map((c) => c.chunkIndex),
        batch.map((c) => c.chunkCount),
        batch.map((c) => c.fragmentIdentifier),
        batch.map((c) => c.hdfsPath),
        batch.map((c) => c.recordCount.toString()),
        batch.map((c) => c.byteCount?.toString() ?? null),
        batch.map((c) => c.actor),
      ],
    );
    expect(rows).toEqual([
      { ordinal: 1, outcome: 'DEFERRED' },
      { ordinal: 2, outcome: 'DEFERRED' },
      { ordinal: 3, outcome: 'PROGRESS' },
    ]);
    expect(tokens).toHaveLength(2);
  });

  it('defers a chunk that fails its partition; the batch around it commits first', async () => {
    const { run, reports } = await claimedRun(2, 2);
    const { reporter: r, batches } = reporter();
    const blocker = r.report(reports[0]!);
    const [failing, progress] = await settled([
      r.report({ ...reports[1]!, recordCount: 4n }), // completes partition 0000 one row short
      r.report(reports[2]!),
    ]);
    await blocker;
    expect(batches).toEqual([1, 2]);
    expect(progress).toEqual({ result: expect.objectContaining({ effect: 'PROGRESS', runStatus: 'EXTRACTING' }) });
    expect(failing).toEqual({
      result: expect.objectContaining({ effect: 'PARTITION_FAILED', partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT' }),
    });
    expect((await ledger(run.runId)).run).toMatchObject({
      status: 'FAILED_EXTRACT',
      success_partition_count: 0,
      failed_partition_count: 1,
      validations: 0,
    });
  });

  it('answers each report alone when its batch fails as a whole (a path taken by another chunk)', async () => {
    const { reports } = await claimedRun(2, 2);
    const { reporter: r, batches } = reporter();
    const blocker = r.report(reports[0]!);
    const outcomes = await settled([
      r.report(reports[2]!),
      r.report({ ...reports[3]!, hdfsPath: reports[2]!.hdfsPath }),
      r.report(reports[1]!),
    ]);
    await blocker;
    expect(batches).toEqual([1, 3]);
    expect(outcomes[0]).toEqual({ result: expect.objectContaining({ effect: 'PROGRESS' }) });
    expect((outcomes[1] as { error: DomainError }).error).toMatchObject({ code: 'FILE_PATH_CONFLICT' });
    expect(outcomes[2]).toEqual({ result: expect.objectContaining({ effect: 'PARTITION_SUCCESS' }) });
  });

  it('undoes a batch whose new chunk another process committed after the lookup; the retry counts it once', async () => {
    const { run, reports } = await claimedRun(2, 3);
    const other = await t.sql.connect();
    try {
      const c = reports[0]!;
      await other.query('BEGIN');
      await other.query('SELECT * FROM nifi_ops.report_chunk($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', [
        c.runId,
        c.partitionId,
        c.claimToken,
        c.chunkIndex,
        c.chunkCount,
        c.fragmentIdentifier,
        c.hdfsPath,
        c.recordCount.toString(),
        c.byteCount!.toString(),
        c.actor,
      ]);
      const { reporter: r, batches } = reporter();
      const blocker = r.report(reports[3]!);
      // the batch's lookup cannot see the uncommitted chunk; its UPDATE then waits for the partition's row lock
      const batch = Promise.all([r.report(reports[0]!), r.report(reports[4]!)]);
      await until(
        'the batch waiting for the partition lock',
        async () =>
          (
            await t.sql.query(`SELECT count(*)::int AS n FROM pg_stat_activity
                               WHERE datname = current_database() AND wait_event_type = 'Lock'`)
          ).rows[0].n > 0,
      );
      await other.query('COMMIT');
      const [duplicate, progress] = await batch;
      await blocker;
      expect(batches).toEqual([1, 2]);
      expect(duplicate).toMatchObject({ effect: 'PROGRESS', receivedChunks: 1, partitionStatus: 'RUNNING' });
      expect(progress).toMatchObject({ effect: 'PROGRESS', receivedChunks: 2 });
      const after = await ledger(run.runId);
      expect(after.partitions.map((p) => [p.partition_id, p.received_chunks, p.received_rows])).toEqual([
        ['0000', 1, 5],
        ['0001', 2, 10],
      ]);
      expect(after.files).toHaveLength(3);
    } finally {
      other.release();
    }
  });

  it('answers the reports waiting behind a stuck batch 503 at their deadline and never sends them; sent again, each counts once', async () => {
    const { reporter: r, batches } = reporter({ answerWithin: 300 });
    const { run, reports } = await claimedRun(1, 3);
    const [first, second, third] = reports as [ReportChunkCommand, ReportChunkCommand, ReportChunkCommand];
    const holder = await lockPartition(run.runId);
    let answers: Awaited<ReturnType<typeof settled>>;
    try {
      const stuck = r.report(first);
      await waitingOnLock(1);
      // the only slot is busy: these two wait for it
      answers = await settled([stuck, r.report(second), r.report(third)]);
      // answered while the lock is still held: the first one's statement is still waiting for it
      expect(await waitingOnLock(1)).toBe(1);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    for (const answer of answers) expect((answer.error as DomainError)?.code).toBe('SERVICE_UNAVAILABLE');
    // the first report's statement, sent before its deadline, commits once the lock is gone
    await until('the first report to be committed', async () => (await ledger(run.runId)).files.length === 1);
    const again = [];
    for (const cmd of reports) again.push(await r.report(cmd));
    expect(again.map((a) => a.receivedChunks)).toEqual([1, 2, 3]);
    // the two that waited were never sent: one batch before the lock was released, then the reports sent again
    expect(batches).toEqual([1, 1, 1, 1]);
    const after = await ledger(run.runId);
    expect(after.files.map((f) => f.chunk_index)).toEqual([0, 1, 2]);
    expect(after.partitions).toMatchObject([{ status: 'SUCCESS', received_chunks: 3, actual_row_count: 15, file_count: 3 }]);
    expect(after.run).toMatchObject({ status: 'EXTRACTED_VALIDATED', validations: 1 });
  });

  it('answers every report of a batch that lost its connection 503 at once, instead of sending each alone again', async () => {
    // a statement timeout longer than the test: only the lost connections end these statements
    const { reporter: r, batches } = reporter({ statementTimeout: 120_000 });
    const { run, reports } = await claimedRun(1, 3);
    const [first, ...rest] = reports as [ReportChunkCommand, ...ReportChunkCommand[]];
    const holder = await lockPartition(run.runId);
    try {
      const alone = settled([r.report(first)]);
      await waitingOnLock(1);
      const batch = settled(rest.map((cmd) => r.report(cmd)));
      await terminateWaiting();
      expect(((await alone)[0]!.error as DomainError).code).toBe('SERVICE_UNAVAILABLE');
      await waitingOnLock(1);
      expect(batches).toEqual([1, 2]);
      await terminateWaiting();
      // answered with the lock still held: sent alone again, they would wait for it
      const answers = await batch;
      expect(answers.map((a) => (a.error as DomainError)?.code)).toEqual(['SERVICE_UNAVAILABLE', 'SERVICE_UNAVAILABLE']);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect((await ledger(run.runId)).files).toEqual([]);
  });

  it('refuses a chunk index out of range before it is queued', async () => {
    const { reports } = await claimedRun(1, 2);
    const { reporter: r, batches } = reporter();
    await expect(r.report({ ...reports[0]!, chunkIndex: 2 })).rejects.toMatchObject({ code: 'CHUNK_INDEX_OUT_OF_RANGE' });
    expect(batches).toEqual([]);
  });

  it(`batches of two processes delivering every chunk of two runs twice, in opposite orders, complete each run once (${REPETITIONS}×)`, async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const a = await claimedRun(6, 2);
      const b = await claimedRun(6, 2);
      const processes = [reporter({ maxInFlight: 2 }), reporter({ maxInFlight: 2 })];
      const forward = [...a.reports, ...b.reports];
      const backward = [...forward].reverse();
      const outcomes = await settled([
        ...forward.map((cmd) => processes[0]!.reporter.report(cmd)),
        ...backward.map((cmd) => processes[1]!.reporter.report(cmd)),
      ]);
      expect(outcomes.filter((o) => 'error' in o)).toEqual([]);
      const results = outcomes.map((o) => (o as { result: ReportChunkResult }).result);
      for (const { run } of [a, b]) {
        const mine = results.filter((_, i) => (i < forward.length ? forward[i]! : backward[i - forward.length]!).runId === run.runId);
        expect(mine.filter((x) => x.validationScheduled)).toHaveLength(1);
        const after = await ledger(run.runId);
        expect(after.run).toEqual({
          status: 'EXTRACTED_VALIDATED',
          success_partition_count: 6,
          failed_partition_count: 0,
          extracted_count: 60,
          completed: true,
          validations: 1,
        });
        expect(after.partitions.every((p) => p.status === 'SUCCESS' && p.received_chunks === 2 && p.received_rows === 10)).toBe(true);
        expect(after.files).toHaveLength(12);
        expect(after.events.map((e) => e.event_name)).toEqual(['EXTRACT_VALIDATED', ...Array(6).fill('PARTITION_SUCCESS')]);
      }
      expect(processes.some((p) => Math.max(...p.batches) > 1)).toBe(true);
      // the server's connections are shared with the other test files: a repetition's processes end with it
      await Promise.all(processes.map((p) => p.close()));
    }
  });
});
