// What a backfill would do with each business date of its range: start a load, or skip the date and why. The dry run
// (planBackfill) answers it; startBackfill records it, in the same transaction that reads it.
import type { Tx } from '../../db/client.js';

import { ACTIVE_RUN_STATUSES, OPEN_BACKFILL_DATE_STATUSES, parseRunStatus, type RunStatus } from '../states.js';

export const BACKFILL_REPROCESS = ['MISSING', 'FAILED', 'ALL'] as const;
export type BackfillReprocess = (typeof BACKFILL_REPROCESS)[number];
export const BACKFILL_ORDERS = ['OLDEST_FIRST', 'NEWEST_FIRST'] as const;
export type BackfillOrder = (typeof BACKFILL_ORDERS)[number];

/** Business dates one backfill may span: a year, leap day included. */
export const MAX_BACKFILL_DATES = 366;
export const MAX_BACKFILL_CONCURRENCY = 100;

export const PLANNED_ACTIONS = ['START', 'SKIP'] as const;
type PlannedAction = (typeof PLANNED_ACTIONS)[number];

/**
 * Why a date starts or is skipped: NO_RUN (never loaded), LAST_RUN_FAILED (reprocess FAILED or ALL), REPROCESS_ALL
 * (its success loaded again), or SUCCEEDED_BEFORE / FAILED_BEFORE (reprocess says leave it), ACTIVE_RUN (a run of
 * the date is under way: createRun would refuse it), IN_OTHER_BACKFILL (an open backfill of the job has it).
 */
export const PLAN_REASONS = [
  'NO_RUN',
  'LAST_RUN_FAILED',
  'REPROCESS_ALL',
  'SUCCEEDED_BEFORE',
  'FAILED_BEFORE',
  'ACTIVE_RUN',
  'IN_OTHER_BACKFILL',
] as const;
type PlanReason = (typeof PLAN_REASONS)[number];

export interface BackfillRange {
  jobKey: string;
  from: string;
  to: string;
  reprocess: BackfillReprocess;
  order: BackfillOrder;
}

export interface PlannedDate {
  businessDate: string;
  /** 1-based place in the start order (skipped dates keep theirs). */
  position: number;
  action: PlannedAction;
  reason: PlanReason;
  latestRunId: string | null;
  latestRunStatus: RunStatus | null;
  /** For IN_OTHER_BACKFILL: the backfill that has the date. */
  otherBackfillId: string | null;
}

interface DateRow {
  business_date: string;
  run_id: string | null;
  status: string | null;
  other_backfill_id: string | null;
}

function decide(row: DateRow, reprocess: BackfillReprocess): { action: PlannedAction; reason: PlanReason } {
  if (row.other_backfill_id !== null) return { action: 'SKIP', reason: 'IN_OTHER_BACKFILL' };
  if (row.status === null) return { action: 'START', reason: 'NO_RUN' };
  const status = parseRunStatus(row.status);
  if (ACTIVE_RUN_STATUSES.includes(status)) return { action: 'SKIP', reason: 'ACTIVE_RUN' };
  if (status === 'SUCCESS')
    return reprocess === 'ALL' ? { action: 'START', reason: 'REPROCESS_ALL' } : { action: 'SKIP', reason: 'SUCCEEDED_BEFORE' };
  return reprocess === 'MISSING' ? { action: 'SKIP', reason: 'FAILED_BEFORE' } : { action: 'START', reason: 'LAST_RUN_FAILED' };
}

/** Each date of the range in start order, with what a backfill started now would do with it. */
export async function planBackfill(tx: Tx, range: BackfillRange): Promise<PlannedDate[]> {
  const rows = await tx.$queryRaw<DateRow[]>`
    WITH dates AS (
        SELECT to_char(d, 'YYYY-MM-DD') AS business_date
          FROM generate_series(${range.from}::date, ${range.to}::date, interval '1 day') AS d
    ), latest AS (
        SELECT DISTINCT ON (r.business_key) r.business_key, r.run_id::text, r.status
          FROM nifi_ops.load_run r
         WHERE r.job_key = ${range.jobKey} AND r.business_key IN (SELECT business_date FROM dates)
         ORDER BY r.business_key, r.started_at DESC, r.run_id DESC
    ), other AS (
        SELECT DISTINCT ON (bd.business_date) to_char(bd.business_date, 'YYYY-MM-DD') AS business_date,
               bd.backfill_id::text
          FROM nifi_ops.load_backfill_date bd
          JOIN nifi_ops.load_backfill b ON b.backfill_id = bd.backfill_id
         WHERE b.job_key = ${range.jobKey} AND bd.business_date BETWEEN ${range.from}::date AND ${range.to}::date
           AND bd.status = ANY(${OPEN_BACKFILL_DATE_STATUSES}::text[])
         ORDER BY bd.business_date, b.created_at
    )
    SELECT d.business_date, l.run_id, l.status, o.backfill_id AS other_backfill_id
      FROM dates d
      LEFT JOIN latest l ON l.business_key = d.business_date
      LEFT JOIN other o ON o.business_date = d.business_date
     ORDER BY d.business_date`;
  if (range.order === 'NEWEST_FIRST') rows.reverse();
  return rows.map((row, i) => ({
    businessDate: row.business_date,
    position: i + 1,
    ...decide(row, range.reprocess),
    latestRunId: row.run_id,
    latestRunStatus: row.status === null ? null : parseRunStatus(row.status),
    otherBackfillId: row.other_backfill_id,
  }));
}
