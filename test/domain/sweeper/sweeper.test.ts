// The sweeper's rules (ref §5.2 and deviations 5 and 6), each sweep one sweepOnce in its own transaction on a
// database of its own per test: a sweep acts on every run of the database.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dispatchRow, eventsNamed } from '../../support/worker.js';
import type { AfterCommit } from '../../../src/db/after-commit.js';
import { createDb, type Db } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import type { Config } from '../../../src/config/config.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { claimPartitionOperation } from '../../../src/domain/partitions/claim-partition.js';
import { failPartitionOperation } from '../../../src/domain/partitions/fail-partition.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import { sweepOnce, type SweepResult } from '../../../src/domain/sweeper/sweep.js';
import {
  ACTOR,
  chunk,
  claimed,
  createdRun,
  deliveredDueCalls,
  type DomainTest,
  extractedRun,
  reissued as operatorReissued,
  publishedRun,
  publishingRun,
  publishUnknownRun,
  stageValidatingRun,
  stagingValidatedRun,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeEach(async () => {
  t = await startDomainTest();
});
afterEach(async () => t?.close());

type Overrides = { recovery?: Partial<Config['recovery']>; dispatch?: Partial<Config['dispatch']> };

const settings = (o: Overrides = {}) => ({
  recovery: { ...t.config.recovery, ...o.recovery },
  dispatch: { ...t.config.dispatch, ...o.dispatch },
});

/** A sweep, and whether it declared a wake-up of the dispatchers for after its commit. */
function trySweep(o: Overrides = {}, db: Db = t.db) {
  return inTransaction(db, async (tx, afterCommit) => {
    let wakeDispatcher = false;
    const recording: AfterCommit = {
      wakeDispatcher: (hint) => {
        wakeDispatcher = true;
        afterCommit.wakeDispatcher(hint);
      },
      runProgressed: (runId) => afterCommit.runProgressed(runId),
      raise: (error) => afterCommit.raise(error),
    };
    const result = await sweepOnce(tx, settings(o), recording);
    return result && { ...result, wakeDispatcher };
  });
}

/** A sweep that must have held the cycle. */
async function sweep(o: Overrides = {}): Promise<SweepResult & { wakeDispatcher: boolean }> {
  const result = await trySweep(o);
  expect(result).not.toBeNull();
  return result!;
}

const REISSUE_MODE = { recovery: { mode: 'REISSUE' as const } };

async function age(table: 'load_run' | 'load_partition', column: string, runId: string, interval: string, partitionId?: string) {
  await t.sql.query(
    `UPDATE nifi_ops.${table} SET ${column} = ${column} - $2::interval WHERE run_id = $1 ${partitionId ? 'AND partition_id = $3' : ''}`,
    partitionId ? [runId, interval, partitionId] : [runId, interval],
  );
}

async function runRow(runId: string) {
  const { rows } = await t.sql.query('SELECT * FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0];
}

async function partitionRows(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT partition_id, status, claim_token::text, worker_node, attempt_count, error_code, received_chunks, received_rows,
            received_bytes, reported_chunk_count, chunk_count_mismatches
       FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id`,
    [runId],
  );
  return rows;
}

async function dispatches(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT dispatch_id::text, dispatch_type, partition_id, status, last_error FROM nifi_ops.load_dispatch
      WHERE run_id = $1 ORDER BY created_at`,
    [runId],
  );
  return rows;
}

const report = (command: ReturnType<typeof chunk>) => perform(t.db, reportChunkOperation, command);

/** The owner's final failure of a partition, as NiFi reports an ORA-00942. */
const failedPartition = (runId: string, partitionId: string, claimToken: string) =>
  perform(t.db, failPartitionOperation, {
    runId,
    partitionId,
    claimToken,
    errorStage: 'EXTRACT',
    errorClass: 'SQL',
    errorCode: 'ORA-00942',
    message: '',
    attempt: null,
    actor: ACTOR,
  });

/** A run extracting [3, 4] whose partition 0000 has written one of its two chunks and went quiet. */
async function runWithStalePartition() {
  const run = await startedRun(t, [3, 4]);
  const owner = await claimed(t, run.runId, '0000');
  const first = await report(chunk(run, '0000', owner.claimToken, 0, 2, 2));
  expect(first.partitionStatus).toBe('RUNNING');
  await age('load_partition', 'heartbeat_at', run.runId, '2 hours', '0000');
  return { ...run, ownerToken: owner.claimToken };
}

describe('sweeper: stale partitions', () => {
  it('leaves runs with fresh heartbeats alone', async () => {
    const run = await startedRun(t, [3, 4]);
    await claimed(t, run.runId, '0000');
    expect(await sweep()).toEqual({ acted: [], actions: {}, failures: [], wakeDispatcher: false });
    expect((await runRow(run.runId)).status).toBe('EXTRACTING');
  });

  it('FAIL mode: a stale RUNNING partition times the run out with all its unfinished partitions', async () => {
    const run = await runWithStalePartition();
    await claimed(t, run.runId, '0001');
    expect((await sweep()).actions).toEqual({ timeout_stale_partition: 1 });

    expect(await runRow(run.runId)).toMatchObject({
      status: 'TIMED_OUT',
      error_stage: 'SWEEPER',
      error_code: 'PARTITION_STALE',
      error_message: 'stale partitions: 0000',
      completed_at: expect.any(Date),
    });
    expect((await partitionRows(run.runId)).map((p) => [p.partition_id, p.status, p.error_code])).toEqual([
      ['0000', 'TIMED_OUT', 'PARTITION_STALE'],
      ['0001', 'TIMED_OUT', 'PARTITION_STALE'],
    ]);
    const events = await eventsNamed(t, run.runId, 'RUN_TIMED_OUT');
    expect(events).toEqual([
      expect.objectContaining({
        event_level: 'ERROR',
        error_code: 'PARTITION_STALE',
        actor: 'sweeper',
        details: { stalePartitions: ['0000'], from: 'EXTRACTING', timedOutPartitions: ['0000', '0001'], cancelledDispatches: [] },
      }),
    ]);

    // the owner keeps its token in FAIL mode: its late chunk is recorded and told the run is over
    const late = await report(chunk(run, '0000', run.ownerToken, 1, 2, 1));
    expect(late).toMatchObject({ recorded: true, runStatus: 'TIMED_OUT' });
    expect(await sweep()).toEqual({ acted: [], actions: {}, failures: [], wakeDispatcher: false });
    expect(await eventsNamed(t, run.runId, 'RUN_TIMED_OUT')).toHaveLength(1);

    const again = await createdRun(t, { businessKey: run.businessKey });
    expect(again.created).toBe(true);
  });

  it('REISSUE mode: resets the stale partition for a new owner with the same SCN; the old owner is locked out', async () => {
    const run = await runWithStalePartition();
    const other = await claimed(t, run.runId, '0001');
    expect((await report(chunk(run, '0001', other.claimToken, 0, 1, 4))).partitionStatus).toBe('SUCCESS');

    const result = await sweep(REISSUE_MODE);
    expect(result).toMatchObject({ actions: { reissue_partition: 1 }, failures: [], wakeDispatcher: true });
    expect((await runRow(run.runId)).status).toBe('EXTRACTING');
    expect((await partitionRows(run.runId))[0]).toMatchObject({
      partition_id: '0000',
      status: 'RETRY',
      claim_token: null,
      worker_node: null,
      attempt_count: 1,
      error_code: 'HEARTBEAT_STALE',
      received_chunks: 0,
      received_rows: '0',
      received_bytes: '0',
      reported_chunk_count: null,
      chunk_count_mismatches: 0,
    });
    const { rows: files } = await t.sql.query(
      `SELECT chunk_index, status FROM nifi_ops.load_file WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect(files).toEqual([{ chunk_index: 0, status: 'FAILED' }]);
    const [reissue] = (await dispatches(run.runId)).filter((d) => d.dispatch_type === 'REISSUE_PARTITION');
    expect(reissue).toMatchObject({ partition_id: '0000', status: 'PENDING' });
    expect(result.acted).toEqual([{ action: 'reissue_partition', runId: run.runId, partitionId: '0000', dispatchId: reissue.dispatch_id }]);
    expect(await eventsNamed(t, run.runId, 'RECOVERY_REISSUED')).toEqual([
      expect.objectContaining({
        event_level: 'WARN',
        partition_id: '0000',
        error_code: 'HEARTBEAT_STALE',
        actor: 'sweeper',
        details: { from: 'RUNNING', attempt: 1, invalidatedFiles: 1, dispatchId: reissue.dispatch_id },
      }),
    ]);

    await expect(report(chunk(run, '0000', run.ownerToken, 1, 2, 1))).rejects.toMatchObject({
      name: 'DomainError',
      code: 'CLAIM_MISMATCH',
    });

    const nextToken = randomUUID();
    const next = await perform(t.db, claimPartitionOperation, {
      runId: run.runId,
      partitionId: '0000',
      claimToken: nextToken,
      workerNode: 'nifi-02',
      actor: ACTOR,
    });
    expect(next).toEqual({
      claimed: true,
      runStatus: 'EXTRACTING',
      partitionStatus: 'RUNNING',
      attempt: 2,
      reason: null,
      retryAfter: null,
      pool: null,
    });
    expect((await dispatchRow(t, reissue.dispatch_id)).status).toBe('ACKED');
    // the new owner writes both chunks again (chunk 0 at the same path): the partition counts them afresh
    expect((await report(chunk(run, '0000', nextToken, 0, 2, 2))).receivedChunks).toBe(1);
    const done = await report(chunk(run, '0000', nextToken, 1, 2, 1));
    expect(done).toMatchObject({ partitionStatus: 'SUCCESS', runStatus: 'EXTRACTED_VALIDATED', validationScheduled: true });
    expect((await runRow(run.runId)).extracted_count).toBe('7');
  });

  it('REISSUE mode: a stale partition that used up recovery.maxAttempts times the run out instead', async () => {
    const run = await runWithStalePartition();
    expect((await sweep({ recovery: { mode: 'REISSUE', maxAttempts: 1 } })).actions).toEqual({ timeout_stale_partition: 1 });
    expect(await runRow(run.runId)).toMatchObject({ status: 'TIMED_OUT', error_code: 'REISSUE_ATTEMPTS_EXHAUSTED' });
    expect((await partitionRows(run.runId)).map((p) => p.status)).toEqual(['TIMED_OUT', 'TIMED_OUT']);
    expect(await dispatches(run.runId)).toEqual([]);
  });

  it('treats a PENDING partition nobody claimed within recovery.stale like a stale RUNNING one (deviation 5)', async () => {
    const reissued = await startedRun(t, [3, 4]);
    const failed = await startedRun(t, [3, 4]);
    const fresh = await startedRun(t, [3, 4]);
    for (const run of [reissued, failed, fresh]) {
      const c = await claimed(t, run.runId, '0000');
      await report(chunk(run, '0000', c.claimToken, 0, 1, 3));
    }
    await age('load_partition', 'created_at', reissued.runId, '2 hours');
    await age('load_partition', 'created_at', failed.runId, '2 hours');

    expect((await sweep(REISSUE_MODE)).actions).toEqual({ reissue_partition: 2 });
    expect((await partitionRows(reissued.runId))[1]).toMatchObject({
      partition_id: '0001',
      status: 'RETRY',
      error_code: 'PARTITION_UNCLAIMED',
    });
    expect(await eventsNamed(t, reissued.runId, 'RECOVERY_REISSUED')).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ from: 'PENDING', attempt: 0, invalidatedFiles: 0 }) }),
    ]);
    expect((await partitionRows(fresh.runId))[1]!.status).toBe('PENDING');
  });

  it('FAIL mode: a PENDING partition nobody claimed times the run out (deviation 5)', async () => {
    const run = await startedRun(t, [3, 4]);
    await age('load_partition', 'created_at', run.runId, '2 hours', '0001');
    expect((await sweep()).actions).toEqual({ timeout_stale_partition: 1 });
    expect(await runRow(run.runId)).toMatchObject({
      status: 'TIMED_OUT',
      error_code: 'PARTITION_STALE',
      error_message: 'stale partitions: 0001',
    });
  });
});

describe('sweeper: run deadline', () => {
  it('times out CREATED and EXTRACTING runs older than recovery.runTimeout, fresh heartbeats or not', async () => {
    const created = await createdRun(t);
    const extracting = await startedRun(t, [3, 4]);
    await claimed(t, extracting.runId, '0000');
    const reissueCall = await operatorReissued(t, extracting.runId, '0001');
    const younger = await startedRun(t, [3]);
    await age('load_run', 'started_at', created.runId, '7 hours');
    await age('load_run', 'started_at', extracting.runId, '7 hours');

    const result = await sweep();
    expect(result).toMatchObject({ actions: { timeout_run_deadline: 2 }, failures: [], wakeDispatcher: false });
    expect(result.acted.map((a) => a.runId).sort()).toEqual([created.runId, extracting.runId].sort());
    expect(await runRow(created.runId)).toMatchObject({
      status: 'TIMED_OUT',
      error_stage: 'SWEEPER',
      error_code: 'RUN_TIMEOUT',
      error_message: 'exceeded PT6H in CREATED',
    });
    expect(await runRow(extracting.runId)).toMatchObject({ status: 'TIMED_OUT', error_message: 'exceeded PT6H in EXTRACTING' });
    expect((await partitionRows(extracting.runId)).map((p) => [p.status, p.error_code])).toEqual([
      ['TIMED_OUT', 'RUN_TIMEOUT'],
      ['TIMED_OUT', 'RUN_TIMEOUT'],
    ]);
    // the run ended, so the reissue call it no longer needs is cancelled with it (deviation 6)
    expect(await dispatchRow(t, reissueCall.dispatchId)).toMatchObject({
      status: 'CANCELLED',
      last_error: 'run timed out: RUN_TIMEOUT',
    });
    expect((await eventsNamed(t, extracting.runId, 'RUN_TIMED_OUT'))[0].details).toMatchObject({ from: 'EXTRACTING' });
    expect((await runRow(younger.runId)).status).toBe('EXTRACTING');
  });
});

describe('sweeper: rules and savepoints', () => {
  it('rolls back only a failing rule: its writes are undone and the later rules still act', async () => {
    const stale = await runWithStalePartition();
    const late = await createdRun(t);
    await age('load_run', 'started_at', late.runId, '7 hours');
    // R1 writes the partitions, then its run update is rejected
    await t.sql.query(`
      CREATE FUNCTION nifi_ops.reject_stale_timeout() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.error_code = 'PARTITION_STALE' THEN RAISE EXCEPTION 'rejected by test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER reject_stale_timeout BEFORE UPDATE ON nifi_ops.load_run
        FOR EACH ROW EXECUTE FUNCTION nifi_ops.reject_stale_timeout();`);

    const result = await sweep();
    expect(result.actions).toEqual({ timeout_run_deadline: 1 });
    expect(result.failures.map((f) => f.rule)).toEqual(['stale_partitions']);
    expect(String(result.failures[0]!.error)).toContain('rejected by test');
    expect((await runRow(stale.runId)).status).toBe('EXTRACTING');
    expect((await partitionRows(stale.runId)).map((p) => p.status)).toEqual(['RUNNING', 'PENDING']);
    expect((await runRow(late.runId)).status).toBe('TIMED_OUT');
  });

  it('returns null while another sweeper holds this cycle', async () => {
    await runWithStalePartition();
    const holder = new pg.Client({ connectionString: t.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock(hashtext('load_control_sweeper'))`);
      expect(await trySweep()).toBeNull();
      await holder.query('COMMIT');
      expect((await sweep()).actions).toEqual({ timeout_stale_partition: 1 });
    } finally {
      await holder.end();
    }
  });

  it('acts once when sweepers on their own connections race (10 repetitions)', async () => {
    const pools = [
      createDb(t.database.url, { poolSize: 2 }),
      createDb(t.database.url, { poolSize: 2 }),
      createDb(t.database.url, { poolSize: 2 }),
    ];
    try {
      for (let rep = 0; rep < 10; rep++) {
        const runs = [await runWithStalePartition(), await runWithStalePartition(), await runWithStalePartition()];
        const results = await Promise.all(pools.map((db) => trySweep({}, db)));
        const timeouts = results.reduce((n, r) => n + (r?.actions.timeout_stale_partition ?? 0), 0);
        expect(timeouts).toBe(3);
        for (const run of runs) {
          expect((await runRow(run.runId)).status).toBe('TIMED_OUT');
          expect(await eventsNamed(t, run.runId, 'RUN_TIMED_OUT')).toHaveLength(1);
        }
      }
    } finally {
      await Promise.all(pools.map((db) => db.close()));
    }
  });

  it('skips a run whose partition is in use by a report, and takes it on the next cycle', async () => {
    const run = await runWithStalePartition();
    const busy = new pg.Client({ connectionString: t.database.url });
    await busy.connect();
    try {
      await busy.query('BEGIN');
      await busy.query(`SELECT 1 FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0001' FOR UPDATE`, [run.runId]);
      expect((await sweep()).actions).toEqual({});
      await busy.query('COMMIT');
    } finally {
      await busy.end();
    }
    expect((await sweep()).actions).toEqual({ timeout_stale_partition: 1 });
  });
});

describe('sweeper: unacknowledged calls', () => {
  it('requeues a SENT call its run still waits for once ackTimeout passed, and leaves calls of ended runs to be cancelled', async () => {
    const waiting = await extractedRun(t);
    const ended = await startedRun(t, [3, 4]);
    const endedCall = (await operatorReissued(t, ended.runId, '0000', 'stuck worker')).dispatchId;
    expect((await deliveredDueCalls(t)).sort()).toEqual([waiting.dispatchId, endedCall].sort());
    const owner = await claimed(t, ended.runId, '0001');
    expect((await failedPartition(ended.runId, '0001', owner.claimToken)).runStatus).toBe('FAILED_EXTRACT');
    await t.sql.query(`UPDATE nifi_ops.load_dispatch SET sent_at = sent_at - interval '11 minutes'`);

    const result = await sweep();
    expect(result).toMatchObject({
      actions: { requeue_dispatch: 1, abandon_partition: 1, cancel_dispatch: 1 },
      failures: [],
      wakeDispatcher: true,
    });
    expect(result.acted).toContainEqual({
      action: 'requeue_dispatch',
      runId: waiting.runId,
      partitionId: null,
      dispatchId: waiting.dispatchId,
    });
    expect(result.acted).toContainEqual({ action: 'cancel_dispatch', runId: ended.runId, dispatchId: endedCall });
    expect(await dispatchRow(t, waiting.dispatchId)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_error: 'ack timeout, requeued by sweeper',
      deferred: false,
    });
    expect(await eventsNamed(t, waiting.runId, 'DISPATCH_REQUEUED')).toEqual([
      expect.objectContaining({
        event_level: 'WARN',
        actor: 'sweeper',
        details: { dispatchIds: [waiting.dispatchId] },
      }),
    ]);
    expect(await dispatchRow(t, endedCall)).toMatchObject({ status: 'CANCELLED', last_error: 'run ended in FAILED_EXTRACT' });
  });
});

describe('sweeper: stale alerts (deviation 5)', () => {
  it('alerts once per window for every non-terminal status that has not moved within its threshold', async () => {
    const created = await createdRun(t);
    const extracting = await startedRun(t, [3, 4]);
    const moving = await startedRun(t, [3, 4]);
    const extracted = await extractedRun(t);
    const validating = await stageValidatingRun(t);
    const staged = await stagingValidatedRun(t);
    const publishing = await publishingRun(t);
    const published = await publishedRun(t);
    const unknown = await publishUnknownRun(t);
    const quiet = [created, extracting, moving, extracted, validating, staged, publishing, published, unknown];
    for (const run of quiet) await age('load_run', 'heartbeat_at', run.runId, '3 hours');
    // an extracting run moves with its partitions, whose reports do not touch the run row
    await claimed(t, moving.runId, '0000');
    const fresh = await extractedRun(t);

    expect((await sweep()).actions).toEqual({ stale_alert: 8 });
    const expected: Array<[{ runId: string }, string]> = [
      [created, 'CREATED'],
      [extracting, 'EXTRACTING'],
      [extracted, 'EXTRACTED_VALIDATED'],
      [validating, 'STAGE_VALIDATING'],
      [staged, 'STAGING_VALIDATED'],
      [publishing, 'PUBLISHING'],
      [published, 'PUBLISHED'],
      [unknown, 'PUBLISH_UNKNOWN'],
    ];
    for (const [run, status] of expected) {
      expect(await eventsNamed(t, run.runId, 'RUN_STALE_ALERT')).toEqual([
        expect.objectContaining({
          event_level: 'ERROR',
          actor: 'sweeper',
          message: `no progress in ${status}`,
          details: expect.objectContaining({ status }),
        }),
      ]);
      expect((await runRow(run.runId)).status).toBe(status);
    }
    expect(await eventsNamed(t, moving.runId, 'RUN_STALE_ALERT')).toEqual([]);
    expect(await eventsNamed(t, fresh.runId, 'RUN_STALE_ALERT')).toEqual([]);

    expect((await sweep()).actions).toEqual({});
    // once the window has passed without movement, the alert repeats
    await t.sql.query(`UPDATE nifi_ops.load_event SET event_time = event_time - interval '3 hours' WHERE run_id = $1`, [staged.runId]);
    expect((await sweep()).actions).toEqual({ stale_alert: 1 });
    expect(await eventsNamed(t, staged.runId, 'RUN_STALE_ALERT')).toHaveLength(2);
  });
});

describe('sweeper: stale publishing', () => {
  it('marks a run PUBLISH_UNKNOWN when no publish result came within recovery.publishStale', async () => {
    const run = await stagingValidatedRun(t);
    const claim = await perform(t.db, claimPublishOperation, { runId: run.runId, publishToken: randomUUID(), actor: ACTOR });
    expect(claim.claimed).toBe(true);
    await age('load_run', 'publish_started_at', run.runId, '3 hours');
    expect((await sweep()).actions).toEqual({ publish_unknown: 1 });
    expect(await runRow(run.runId)).toMatchObject({
      status: 'PUBLISH_UNKNOWN',
      error_stage: 'PUBLISH',
      error_code: 'PUBLISH_STALE',
      error_message: 'no publish result within PT2H',
      completed_at: null,
    });
    expect(await eventsNamed(t, run.runId, 'PUBLISH_UNKNOWN')).toEqual([
      expect.objectContaining({
        event_level: 'ERROR',
        error_code: 'PUBLISH_STALE',
        actor: 'sweeper',
      }),
    ]);
    expect((await sweep()).actions).toEqual({});
  });
});

describe('sweeper: ended runs (deviation 6)', () => {
  it('abandons the unfinished partitions and cancels the undelivered calls of a run that ended', async () => {
    const run = await startedRun(t, [3, 4, 5]);
    const running = await claimed(t, run.runId, '0000');
    const reissued = await operatorReissued(t, run.runId, '0002');
    const failing = await claimed(t, run.runId, '0001');
    expect((await failedPartition(run.runId, '0001', failing.claimToken)).runStatus).toBe('FAILED_EXTRACT');

    expect((await sweep()).actions).toEqual({ abandon_partition: 2, cancel_dispatch: 1 });
    expect((await partitionRows(run.runId)).map((p) => [p.partition_id, p.status])).toEqual([
      ['0000', 'ABANDONED'],
      ['0001', 'FAILED'],
      ['0002', 'ABANDONED'],
    ]);
    const callId = reissued.dispatchId;
    expect(await dispatchRow(t, callId)).toMatchObject({ status: 'CANCELLED', last_error: 'run ended in FAILED_EXTRACT' });
    expect(await eventsNamed(t, run.runId, 'RUN_WORK_ABANDONED')).toEqual([
      expect.objectContaining({
        actor: 'sweeper',
        details: { runStatus: 'FAILED_EXTRACT', abandonedPartitions: ['0000', '0002'], cancelledDispatches: [callId] },
      }),
    ]);

    // the abandoned partition's owner may still report: recorded, and told the run is over
    const late = await report(chunk(run, '0000', running.claimToken, 0, 1, 3));
    expect(late).toMatchObject({ recorded: true, partitionStatus: 'ABANDONED', runStatus: 'FAILED_EXTRACT' });
    expect((await claimed(t, run.runId, '0002')).claimed).toBe(false);
    expect((await sweep()).actions).toEqual({});
  });
});
