// Backfills (issue 28, point 1) on the database directly: the plan and its reasons, the start and its START_LOAD
// calls, the ACK by createRun carrying the backfill id (and its refusals), advancing as runs end, pause, resume,
// cancel and their refusals, a paused job holding its backfills, readiness held and released, two operators
// starting the same range. Roles, input parsing and the whole flow through NiFi's calls: test/api/backfills/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { advanceBackfillOperation } from '../../../src/domain/backfills/advance-backfill.js';
import {
  cancelBackfillOperation,
  pauseBackfillOperation,
  releaseBackfillReadinessOperation,
  resumeBackfillOperation,
} from '../../../src/domain/backfills/backfill-controls.js';
import { planBackfill, type BackfillReprocess } from '../../../src/domain/backfills/plan-backfill.js';
import { listBackfillDates } from '../../../src/domain/backfills/queries.js';
import { startBackfillOperation, type StartBackfillCommand } from '../../../src/domain/backfills/start-backfill.js';
import { pauseJobOperation, resumeJobOperation } from '../../../src/domain/jobs/job-pause.js';
import { markDeadOperation } from '../../../src/domain/dispatch/deliver.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { sweepOnce } from '../../../src/domain/sweeper/sweep.js';
import {
  cancelled,
  createdRun,
  deliveredDueCalls,
  type DomainTest,
  gateDefined,
  OPERATOR,
  publishedRun,
  refusal,
  startDomainTest,
  succeeded,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const REASON = 'the source was repaired';
const newJob = () => `BACKFILL_JOB_${randomUUID().slice(0, 8).toUpperCase()}`;

function startCommand(jobKey: string, more: Partial<StartBackfillCommand> = {}): StartBackfillCommand {
  return {
    jobKey,
    from: '2026-09-01',
    to: '2026-09-05',
    reprocess: 'MISSING',
    order: 'OLDEST_FIRST',
    maxConcurrent: 2,
    pushReadiness: true,
    actor: OPERATOR,
    ...more,
  };
}
const start = (jobKey: string, more: Partial<StartBackfillCommand> = {}) =>
  perform(t.db, startBackfillOperation, startCommand(jobKey, more));
const advance = (backfillId: string) => perform(t.db, advanceBackfillOperation, { backfillId, actor: 'test-pump' });
const control = { pause: pauseBackfillOperation, resume: resumeBackfillOperation, cancel: cancelBackfillOperation };
const act = (what: keyof typeof control, backfillId: string) =>
  perform(t.db, control[what], { backfillId, reason: REASON, actor: OPERATOR });
const datesOf = async (backfillId: string) =>
  (await listBackfillDates(t.db.prisma, backfillId)).map((d) =>
    [d.businessDate, d.status, d.reason ?? undefined].filter((x) => x !== undefined),
  );
/** NiFi's createRun for a started date, as the START_LOAD call's receiver makes it. */
const nifiStarts = (jobKey: string, businessKey: string, backfillId: string) => createdRun(t, { jobKey, businessKey, backfillId });

async function startCalls(backfillId: string) {
  const { rows } = await t.sql.query<{ business_date: string; status: string }>(
    `SELECT to_char(business_date, 'YYYY-MM-DD') AS business_date, status FROM nifi_ops.load_dispatch
      WHERE dispatch_type = 'START_LOAD' AND backfill_id = $1 ORDER BY business_date`,
    [backfillId],
  );
  return rows.map((r) => [r.business_date, r.status]);
}

describe('planBackfill', () => {
  it('says what each date would do, by the latest run of the date and reprocess, in the asked order', async () => {
    const jobKey = newJob();
    const done = await publishedRun(t, [3, 4], { jobKey, businessKey: '2026-09-01' });
    await succeeded(t, done.runId);
    const failed = await createdRun(t, { jobKey, businessKey: '2026-09-02' });
    await cancelled(t, failed.runId);
    const active = await createdRun(t, { jobKey, businessKey: '2026-09-03' });
    const plan = (reprocess: BackfillReprocess, order: 'OLDEST_FIRST' | 'NEWEST_FIRST' = 'OLDEST_FIRST') =>
      planBackfill(t.db.prisma, { jobKey, from: '2026-09-01', to: '2026-09-04', reprocess, order }).then((dates) =>
        dates.map((d) => [d.position, d.businessDate, d.action, d.reason]),
      );
    expect(await plan('MISSING')).toEqual([
      [1, '2026-09-01', 'SKIP', 'SUCCEEDED_BEFORE'],
      [2, '2026-09-02', 'SKIP', 'FAILED_BEFORE'],
      [3, '2026-09-03', 'SKIP', 'ACTIVE_RUN'],
      [4, '2026-09-04', 'START', 'NO_RUN'],
    ]);
    expect(await plan('FAILED')).toEqual([
      [1, '2026-09-01', 'SKIP', 'SUCCEEDED_BEFORE'],
      [2, '2026-09-02', 'START', 'LAST_RUN_FAILED'],
      [3, '2026-09-03', 'SKIP', 'ACTIVE_RUN'],
      [4, '2026-09-04', 'START', 'NO_RUN'],
    ]);
    expect(await plan('ALL', 'NEWEST_FIRST')).toEqual([
      [1, '2026-09-04', 'START', 'NO_RUN'],
      [2, '2026-09-03', 'SKIP', 'ACTIVE_RUN'],
      [3, '2026-09-02', 'START', 'LAST_RUN_FAILED'],
      [4, '2026-09-01', 'START', 'REPROCESS_ALL'],
    ]);
    const [first] = await planBackfill(t.db.prisma, {
      jobKey,
      from: '2026-09-03',
      to: '2026-09-03',
      reprocess: 'ALL',
      order: 'OLDEST_FIRST',
    });
    expect(first).toMatchObject({ latestRunId: active.runId, latestRunStatus: 'CREATED', otherBackfillId: null });
  });
});

describe('startBackfill and its dates', () => {
  it('queues the START dates, skips the others with their reason and writes START_LOAD calls for maxConcurrent of them', async () => {
    const jobKey = newJob();
    const done = await publishedRun(t, [3, 4], { jobKey, businessKey: '2026-09-02' });
    await succeeded(t, done.runId);
    const { backfill, plan } = await start(jobKey);
    expect(plan.map((p) => p.action)).toEqual(['START', 'SKIP', 'START', 'START', 'START']);
    expect(backfill).toMatchObject({ jobKey, status: 'RUNNING', maxConcurrent: 2, createdBy: OPERATOR, pushReadiness: true });
    expect(backfill.counts).toMatchObject({ QUEUED: 2, STARTING: 2, SKIPPED: 1 });
    expect(await datesOf(backfill.backfillId)).toEqual([
      ['2026-09-01', 'STARTING'],
      ['2026-09-02', 'SKIPPED', 'SUCCEEDED_BEFORE'],
      ['2026-09-03', 'STARTING'],
      ['2026-09-04', 'QUEUED'],
      ['2026-09-05', 'QUEUED'],
    ]);
    expect(await startCalls(backfill.backfillId)).toEqual([
      ['2026-09-01', 'PENDING'],
      ['2026-09-03', 'PENDING'],
    ]);
    const { rows } = await t.sql.query(
      `SELECT actor, details FROM nifi_ops.load_event WHERE job_key = $1 AND event_name = 'BACKFILL_STARTED'`,
      [jobKey],
    );
    expect(rows).toEqual([
      {
        actor: OPERATOR,
        details: {
          backfillId: backfill.backfillId,
          from: '2026-09-01',
          to: '2026-09-05',
          reprocess: 'MISSING',
          maxConcurrent: 2,
          order: 'OLDEST_FIRST',
          pushReadiness: true,
        },
      },
    ]);
  });

  it('is acknowledged by the createRun that carries its id: the date RUNS its run, the call is ACKED, the run is the backfill’s', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 1, to: '2026-09-02' });
    await deliveredDueCalls(t);
    expect(await startCalls(backfill.backfillId)).toEqual([['2026-09-01', 'SENT']]);
    const run = await nifiStarts(jobKey, '2026-09-01', backfill.backfillId);
    expect(await startCalls(backfill.backfillId)).toEqual([['2026-09-01', 'ACKED']]);
    const [date] = await listBackfillDates(t.db.prisma, backfill.backfillId);
    expect(date).toMatchObject({ status: 'RUNNING', runId: run.runId, startDispatchStatus: 'ACKED' });
    const { rows } = await t.sql.query('SELECT backfill_id::text FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0].backfill_id).toBe(backfill.backfillId);
  });

  it('refuses a createRun for a date the backfill does not start now, or of no such backfill, and creates nothing', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 1, to: '2026-09-02' });
    const queued = await refusal(nifiStarts(jobKey, '2026-09-02', backfill.backfillId));
    expect(queued.code).toBe('BACKFILL_STATUS_MISMATCH');
    expect(queued.details).toMatchObject({ backfillStatus: 'RUNNING', dateStatus: 'QUEUED' });
    for (const [job, key, id] of [
      [jobKey, '2026-10-01', backfill.backfillId],
      [newJob(), '2026-09-01', backfill.backfillId],
      [jobKey, '2026-09-01', randomUUID()],
      [jobKey, 'NOT_A_DATE', backfill.backfillId],
    ] as const) {
      expect((await refusal(nifiStarts(job, key, id))).code).toBe('BACKFILL_NOT_FOUND');
    }
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE backfill_id = $1', [backfill.backfillId]);
    expect(rows[0].n).toBe(0);
    expect(await datesOf(backfill.backfillId)).toEqual([
      ['2026-09-01', 'STARTING'],
      ['2026-09-02', 'QUEUED'],
    ]);
  });

  it('settles dates as their runs end, starts the next ones, and completes when none is left', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 2, to: '2026-09-03' });
    const first = await publishedRun(t, [3, 4], { jobKey, businessKey: '2026-09-01', backfillId: backfill.backfillId });
    const second = await nifiStarts(jobKey, '2026-09-02', backfill.backfillId);
    expect((await advance(backfill.backfillId))?.started).toEqual([]);
    await succeeded(t, first.runId);
    await cancelled(t, second.runId);
    expect(await advance(backfill.backfillId)).toMatchObject({
      status: 'RUNNING',
      succeeded: ['2026-09-01'],
      failed: ['2026-09-02'],
      started: ['2026-09-03'],
    });
    const third = await nifiStarts(jobKey, '2026-09-03', backfill.backfillId);
    await cancelled(t, third.runId);
    expect(await advance(backfill.backfillId)).toMatchObject({ status: 'COMPLETED', failed: ['2026-09-03'] });
    expect(await datesOf(backfill.backfillId)).toEqual([
      ['2026-09-01', 'SUCCEEDED'],
      ['2026-09-02', 'FAILED', 'RUN_CANCELLED'],
      ['2026-09-03', 'FAILED', 'RUN_CANCELLED'],
    ]);
    // an ended backfill is not moved again
    expect(await advance(backfill.backfillId)).toMatchObject({ status: 'COMPLETED', started: [], succeeded: [], failed: [] });
  });

  it('fails a date whose START_LOAD call died (NiFi never took it), with that reason, and goes on', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 1, to: '2026-09-02' });
    const [call] = (await listBackfillDates(t.db.prisma, backfill.backfillId)).map((d) => d.startDispatchId);
    await perform(t.db, markDeadOperation, {
      dispatchId: call!,
      runId: null,
      gate: null,
      alert: null,
      dispatchType: 'START_LOAD',
      partitionId: null,
      attempt: 20,
      httpStatus: 404,
      error: 'not this job',
      actor: 'dispatcher',
    });
    expect(await advance(backfill.backfillId)).toMatchObject({ failed: ['2026-09-01'], started: ['2026-09-02'] });
    expect((await datesOf(backfill.backfillId))[0]).toEqual(['2026-09-01', 'FAILED', 'START_LOAD_DEAD']);
  });
});

describe('pause, resume and cancel of a backfill', () => {
  it('pauses (no date starts), resumes (the next start at once), and answers replays with changed: false', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 1, to: '2026-09-03' });
    const paused = await act('pause', backfill.backfillId);
    expect(paused).toMatchObject({ changed: true, backfill: { status: 'PAUSED' } });
    expect(paused.backfill.pausedAt).toBeInstanceOf(Date);
    expect((await act('pause', backfill.backfillId)).changed).toBe(false);
    const run = await nifiStarts(jobKey, '2026-09-01', backfill.backfillId);
    await cancelled(t, run.runId);
    // the running date settles; no new date starts while paused
    expect(await advance(backfill.backfillId)).toMatchObject({ status: 'PAUSED', failed: ['2026-09-01'], started: [] });
    const resumed = await act('resume', backfill.backfillId);
    expect(resumed).toMatchObject({ changed: true, backfill: { status: 'RUNNING', pausedAt: null } });
    expect(await datesOf(backfill.backfillId)).toEqual([
      ['2026-09-01', 'FAILED', 'RUN_CANCELLED'],
      ['2026-09-02', 'STARTING'],
      ['2026-09-03', 'QUEUED'],
    ]);
    expect((await act('resume', backfill.backfillId)).changed).toBe(false);
    const { rows } = await t.sql.query(
      `SELECT event_name, actor, message FROM nifi_ops.load_event WHERE job_key = $1 AND event_name IN ('BACKFILL_PAUSED', 'BACKFILL_RESUMED') ORDER BY event_time`,
      [jobKey],
    );
    expect(rows).toEqual([
      { event_name: 'BACKFILL_PAUSED', actor: OPERATOR, message: REASON },
      { event_name: 'BACKFILL_RESUMED', actor: OPERATOR, message: REASON },
    ]);
  });

  it('cancels: dates not started are CANCELLED with their undelivered calls, a running load finishes and is recorded', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 2, to: '2026-09-04' });
    await deliveredDueCalls(t);
    const running = await publishedRun(t, [3, 4], { jobKey, businessKey: '2026-09-01', backfillId: backfill.backfillId });
    const result = await act('cancel', backfill.backfillId);
    expect(result).toMatchObject({ changed: true, backfill: { status: 'CANCELLED' } });
    expect(await startCalls(backfill.backfillId)).toEqual([
      ['2026-09-01', 'ACKED'],
      ['2026-09-02', 'CANCELLED'],
    ]);
    expect((await act('cancel', backfill.backfillId)).changed).toBe(false);
    await succeeded(t, running.runId);
    expect(await advance(backfill.backfillId)).toMatchObject({ status: 'CANCELLED', succeeded: ['2026-09-01'], started: [] });
    expect(await datesOf(backfill.backfillId)).toEqual([
      ['2026-09-01', 'SUCCEEDED'],
      ['2026-09-02', 'CANCELLED', 'BACKFILL_CANCELLED'],
      ['2026-09-03', 'CANCELLED', 'BACKFILL_CANCELLED'],
      ['2026-09-04', 'CANCELLED', 'BACKFILL_CANCELLED'],
    ]);
  });

  it('refuses moves its state machine does not have, and an unknown backfill, changing nothing', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { to: '2026-09-01' });
    await act('cancel', backfill.backfillId);
    for (const what of ['pause', 'resume'] as const) {
      const error = await refusal(act(what, backfill.backfillId));
      expect(error.code).toBe('BACKFILL_STATUS_MISMATCH');
      expect(error.details).toMatchObject({ backfillStatus: 'CANCELLED' });
    }
    const done = await start(newJob(), { to: '2026-09-01', reprocess: 'MISSING' });
    const completed = await perform(t.db, startBackfillOperation, startCommand(done.backfill.jobKey, { to: '2026-09-01' }));
    expect(completed.backfill).toMatchObject({ status: 'COMPLETED', counts: { SKIPPED: 1 } });
    expect((await refusal(act('cancel', completed.backfill.backfillId))).code).toBe('BACKFILL_STATUS_MISMATCH');
    expect((await refusal(act('pause', randomUUID()))).code).toBe('BACKFILL_NOT_FOUND');
  });
});

describe('a paused job holds its backfills', () => {
  it('writes no START_LOAD call while the job is paused, and goes on once it is resumed', async () => {
    const jobKey = newJob();
    await perform(t.db, pauseJobOperation, { jobKey, reason: 'maintenance window', actor: OPERATOR });
    const { backfill } = await start(jobKey, { to: '2026-09-02' });
    expect(backfill.counts).toMatchObject({ QUEUED: 2, STARTING: 0 });
    expect(await startCalls(backfill.backfillId)).toEqual([]);
    await perform(t.db, resumeJobOperation, { jobKey, reason: 'maintenance is over', actor: OPERATOR });
    expect((await advance(backfill.backfillId))?.started).toEqual(['2026-09-01', '2026-09-02']);
  });
});

describe('two operators starting the same range', () => {
  it('gives the dates to the first backfill; the second skips them (IN_OTHER_BACKFILL) and completes', async () => {
    const jobKey = newJob();
    const [a, b] = await Promise.all([start(jobKey), start(jobKey)]);
    const [first, second] = a.backfill.createdAt < b.backfill.createdAt ? [a, b] : [b, a];
    expect(first.plan.every((p) => p.action === 'START')).toBe(true);
    expect(second.plan.map((p) => [p.reason, p.otherBackfillId])).toEqual(Array(5).fill(['IN_OTHER_BACKFILL', first.backfill.backfillId]));
    expect(second.backfill.status).toBe('COMPLETED');
  });
});

describe('readiness held by a backfill with pushReadiness false', () => {
  async function gateCalls(consumer: string) {
    const { rows } = await t.sql.query<{ business_date: string; readiness_version: number }>(
      `SELECT to_char(business_date, 'YYYY-MM-DD') AS business_date, readiness_version FROM nifi_ops.load_dispatch
        WHERE dispatch_type = 'GATE_READY' AND consumer = $1 ORDER BY business_date, readiness_version`,
      [consumer],
    );
    return rows.map((r) => [r.business_date, r.readiness_version]);
  }

  it('records its runs’ decisions without calling the gate, then pushes the current one of each date once on release', async () => {
    const jobKey = newJob();
    const consumer = `consumer_${randomUUID().slice(0, 8)}`;
    await gateDefined(t, consumer, [jobKey], { notifyUrl: 'http://127.0.0.1:9/ready' });
    const { backfill } = await start(jobKey, { to: '2026-09-01', pushReadiness: false });
    expect(backfill).toMatchObject({ pushReadiness: false, readinessReleasedAt: null });
    const run = await publishedRun(t, [3, 4], { jobKey, businessKey: '2026-09-01', backfillId: backfill.backfillId });
    await succeeded(t, run.runId);
    const { rows: decisions } = await t.sql.query(
      `SELECT version, ready, held_by_backfill::text FROM nifi_ops.gate_readiness_decision WHERE consumer = $1 ORDER BY version`,
      [consumer],
    );
    expect(decisions).toEqual([{ version: 1, ready: true, held_by_backfill: backfill.backfillId }]);
    expect(await gateCalls(consumer)).toEqual([]);

    const released = await perform(t.db, releaseBackfillReadinessOperation, {
      backfillId: backfill.backfillId,
      reason: REASON,
      actor: OPERATOR,
    });
    expect(released).toMatchObject({ changed: true, backfill: { readinessReleasedBy: OPERATOR } });
    expect(await gateCalls(consumer)).toEqual([['2026-09-01', 1]]);
    const again = await perform(t.db, releaseBackfillReadinessOperation, {
      backfillId: backfill.backfillId,
      reason: REASON,
      actor: OPERATOR,
    });
    expect(again.changed).toBe(false);
    expect(await gateCalls(consumer)).toEqual([['2026-09-01', 1]]);
  });

  it('refuses a release for a backfill that pushes its readiness itself', async () => {
    const { backfill } = await start(newJob(), { to: '2026-09-01' });
    const error = await refusal(
      perform(t.db, releaseBackfillReadinessOperation, { backfillId: backfill.backfillId, reason: REASON, actor: OPERATOR }),
    );
    expect(error.code).toBe('BACKFILL_STATUS_MISMATCH');
  });

  it('pushes the decisions of a backfill with pushReadiness true as they are made', async () => {
    const jobKey = newJob();
    const consumer = `consumer_${randomUUID().slice(0, 8)}`;
    await gateDefined(t, consumer, [jobKey], { notifyUrl: 'http://127.0.0.1:9/ready' });
    const { backfill } = await start(jobKey, { to: '2026-09-01' });
    const run = await publishedRun(t, [3, 4], { jobKey, businessKey: '2026-09-01', backfillId: backfill.backfillId });
    await succeeded(t, run.runId);
    expect(await gateCalls(consumer)).toEqual([['2026-09-01', 1]]);
  });
});

describe('a START_LOAD call NiFi received but never acknowledged', () => {
  const sweep = () =>
    inTransaction(t.db, (tx, afterCommit) =>
      sweepOnce(tx, { recovery: t.config.recovery, dispatch: { ackTimeout: 60_000, maxAttempts: 2 } }, afterCommit),
    );
  const ageSent = (backfillId: string) =>
    t.sql.query(`UPDATE nifi_ops.load_dispatch SET sent_at = sent_at - interval '1 hour' WHERE backfill_id = $1 AND status = 'SENT'`, [
      backfillId,
    ]);

  it('is sent again after the ACK timeout, dies when its attempts are spent, and its date then fails and frees its place', async () => {
    const jobKey = newJob();
    const { backfill } = await start(jobKey, { maxConcurrent: 1, to: '2026-09-02' });
    await deliveredDueCalls(t);
    await ageSent(backfill.backfillId);
    await sweep();
    expect(await startCalls(backfill.backfillId)).toEqual([['2026-09-01', 'PENDING']]);
    const { rows: requeued } = await t.sql.query(
      `SELECT run_id, details FROM nifi_ops.load_event WHERE event_name = 'DISPATCH_REQUEUED' AND details->'dispatchIds' ? $1`,
      [(await listBackfillDates(t.db.prisma, backfill.backfillId))[0]!.startDispatchId],
    );
    expect(requeued).toHaveLength(1);
    expect(requeued[0].run_id).toBeNull();

    await deliveredDueCalls(t);
    await ageSent(backfill.backfillId);
    await sweep();
    expect(await startCalls(backfill.backfillId)).toEqual([['2026-09-01', 'DEAD']]);
    expect(await advance(backfill.backfillId)).toMatchObject({ failed: ['2026-09-01'], started: ['2026-09-02'] });
  });
});
