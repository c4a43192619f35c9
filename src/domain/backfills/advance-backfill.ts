// The one place a backfill moves forward, under the lock of its row: the dates whose run ended are settled, then —
// while the backfill runs and its job is not paused — QUEUED dates become STARTING, each with its START_LOAD call in
// the outbox, until maxConcurrent of its dates are active. Whoever calls it (startBackfill, resumeBackfill, every
// worker's backfill pump, at once) the count of active dates is read and raised by one holder of the lock at a time,
// so it never exceeds maxConcurrent.
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { recordNifiEvent } from '../events/events.js';
import { lockJob } from '../jobs/job-pause.js';
import {
  ACTIVE_BACKFILL_DATE_STATUSES,
  FAILED_RUN_STATUSES,
  OPEN_BACKFILL_DATE_STATUSES,
  OPEN_BACKFILL_STATUSES,
  parseBackfillStatus,
  type BackfillStatus,
} from '../states.js';
import { transitionBackfill, transitionBackfillDate } from '../transitions.js';

export interface AdvanceOutcome {
  backfillId: string;
  status: BackfillStatus;
  succeeded: string[];
  failed: string[];
  started: string[];
}

interface LockedBackfill {
  job_key: string;
  status: string;
  max_concurrent: number;
}

const dateList = (rows: Array<{ business_date: string }>) => rows.map((r) => r.business_date);

/** Advances one backfill in the caller's transaction; null when there is no such backfill. */
export async function advanceBackfill(tx: Tx, backfillId: string, actor: string, afterCommit: AfterCommit): Promise<AdvanceOutcome | null> {
  const [backfill] = await tx.$queryRaw<LockedBackfill[]>`
    SELECT job_key, status, max_concurrent FROM nifi_ops.load_backfill WHERE backfill_id = ${backfillId}::uuid FOR UPDATE`;
  if (!backfill) return null;
  let status = parseBackfillStatus(backfill.status);

  const ended = (runStatuses: readonly string[]) => Prisma.sql`
    SELECT bd.backfill_id, bd.business_date, r.status AS run_status
      FROM nifi_ops.load_backfill_date bd JOIN nifi_ops.load_run r ON r.run_id = bd.run_id
     WHERE bd.backfill_id = ${backfillId}::uuid AND bd.status = 'RUNNING' AND r.status = ANY(${runStatuses}::text[])`;
  const succeeded = await transitionBackfillDate<{ business_date: string }>(
    tx,
    { picked: ended(['SUCCESS']) },
    { from: ['RUNNING'], to: 'SUCCEEDED', set: Prisma.sql`reason = NULL`, returning: Prisma.sql`t.business_date::text` },
  );
  const runFailed = await transitionBackfillDate<{ business_date: string }>(
    tx,
    { picked: ended(FAILED_RUN_STATUSES) },
    {
      from: ['RUNNING'],
      to: 'FAILED',
      set: Prisma.sql`reason = 'RUN_' || picked.run_status`,
      returning: Prisma.sql`t.business_date::text`,
    },
  );
  // a call NiFi never took (DEAD, or cancelled by hand): the date ends with that reason instead of holding its place
  const notStarted = await transitionBackfillDate<{ business_date: string }>(
    tx,
    {
      picked: Prisma.sql`
        SELECT bd.backfill_id, bd.business_date, d.status AS dispatch_status
          FROM nifi_ops.load_backfill_date bd
          JOIN nifi_ops.load_dispatch d ON d.dispatch_type = 'START_LOAD' AND d.backfill_id = bd.backfill_id
                                       AND d.business_date = bd.business_date
         WHERE bd.backfill_id = ${backfillId}::uuid AND bd.status = 'STARTING' AND d.status IN ('DEAD', 'CANCELLED')`,
    },
    {
      from: ['STARTING'],
      to: 'FAILED',
      set: Prisma.sql`reason = 'START_LOAD_' || picked.dispatch_status`,
      returning: Prisma.sql`t.business_date::text`,
    },
  );

  let started: Array<{ business_date: string }> = [];
  if (status === 'RUNNING') {
    const job = await lockJob(tx, backfill.job_key, 'share');
    if (!job.paused) {
      const [active] = await tx.$queryRaw<Array<{ n: number }>>`
        SELECT count(*)::int AS n FROM nifi_ops.load_backfill_date
         WHERE backfill_id = ${backfillId}::uuid AND status = ANY(${ACTIVE_BACKFILL_DATE_STATUSES}::text[])`;
      await tx.$executeRaw`SELECT nifi_ops.fault_point('advance_backfill_counted')`;
      // the count stays true until this transaction ends: every other advance of the backfill waits for its row
      started = await transitionBackfillDate<{ business_date: string }>(
        tx,
        {
          picked: Prisma.sql`
            SELECT bd.backfill_id, bd.business_date FROM nifi_ops.load_backfill_date bd
             WHERE bd.backfill_id = ${backfillId}::uuid AND bd.status = 'QUEUED'
             ORDER BY bd.position
             LIMIT ${Math.max(0, backfill.max_concurrent - active!.n)}::int`,
        },
        { from: ['QUEUED'], to: 'STARTING', set: Prisma.sql`reason = NULL`, returning: Prisma.sql`t.business_date::text` },
      );
      if (started.length > 0) {
        await tx.$executeRaw`
          INSERT INTO nifi_ops.load_dispatch (dispatch_id, dispatch_type, backfill_id, business_date)
          SELECT gen_random_uuid(), 'START_LOAD', ${backfillId}::uuid, d
            FROM unnest(${dateList(started)}::date[]) AS d`;
        afterCommit.wakeDispatcher(backfillId);
      }
    }
    const [open] = await tx.$queryRaw<Array<{ open: boolean }>>`
      SELECT EXISTS (SELECT 1 FROM nifi_ops.load_backfill_date
                      WHERE backfill_id = ${backfillId}::uuid AND status = ANY(${OPEN_BACKFILL_DATE_STATUSES}::text[])) AS open`;
    if (!open!.open) {
      await transitionBackfill(tx, { backfillId }, { from: ['RUNNING'], to: 'COMPLETED' });
      status = 'COMPLETED';
    }
  }

  const failed = [...dateList(runFailed), ...dateList(notStarted)];
  if (succeeded.length + failed.length + started.length > 0 || status === 'COMPLETED') {
    await recordNifiEvent(tx, {
      level: failed.length > 0 ? 'WARN' : 'INFO',
      name: status === 'COMPLETED' ? 'BACKFILL_COMPLETED' : 'BACKFILL_ADVANCED',
      runId: null,
      jobKey: backfill.job_key,
      processGroup: 'LOAD_CONTROL_API',
      details: { backfillId, succeeded: dateList(succeeded), failed, started: dateList(started) },
      actor,
    });
  }
  return { backfillId, status, succeeded: dateList(succeeded), failed, started: dateList(started) };
}

/** The backfills a pump looks at: open ones, and ended ones whose dates still wait for their runs to end. */
async function backfillsToAdvance(tx: Tx): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ backfill_id: string }>>`
    SELECT b.backfill_id::text FROM nifi_ops.load_backfill b
     WHERE b.status = ANY(${OPEN_BACKFILL_STATUSES}::text[])
        OR EXISTS (SELECT 1 FROM nifi_ops.load_backfill_date bd
                    WHERE bd.backfill_id = b.backfill_id AND bd.status = ANY(${ACTIVE_BACKFILL_DATE_STATUSES}::text[]))
     ORDER BY b.created_at`;
  return rows.map((r) => r.backfill_id);
}

export const advanceBackfillOperation = inOneTransaction((tx, { backfillId, actor }: { backfillId: string; actor: string }, afterCommit) =>
  advanceBackfill(tx, backfillId, actor, afterCommit),
);
export const backfillsToAdvanceOperation = inOneTransaction((tx) => backfillsToAdvance(tx));
