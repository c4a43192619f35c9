import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { dateOfColumn } from '../gate/business-date.js';
import {
  BACKFILL_DATE_STATUSES,
  OPEN_BACKFILL_STATUSES,
  parseBackfillDateStatus,
  parseBackfillStatus,
  parseDispatchStatus,
  type BackfillDateStatus,
  type BackfillStatus,
  type DispatchStatus,
} from '../states.js';
import type { BackfillOrder, BackfillReprocess } from './plan-backfill.js';

export interface BackfillRecord {
  backfillId: string;
  jobKey: string;
  from: string;
  to: string;
  reprocess: BackfillReprocess;
  maxConcurrent: number;
  order: BackfillOrder;
  pushReadiness: boolean;
  status: BackfillStatus;
  createdBy: string;
  createdAt: Date;
  pausedAt: Date | null;
  endedAt: Date | null;
  readinessReleasedAt: Date | null;
  readinessReleasedBy: string | null;
  /** How many of its dates are in each status. */
  counts: Record<BackfillDateStatus, number>;
}

export interface BackfillDateRecord {
  backfillId: string;
  businessDate: string;
  position: number;
  status: BackfillDateStatus;
  reason: string | null;
  runId: string | null;
  updatedAt: Date;
  startDispatchId: string | null;
  startDispatchStatus: DispatchStatus | null;
}

export const MAX_BACKFILLS_PAGE = 100;

interface BackfillRow {
  backfill_id: string;
  job_key: string;
  from_date: Date;
  to_date: Date;
  reprocess: string;
  max_concurrent: number;
  date_order: string;
  push_readiness: boolean;
  status: string;
  created_by: string;
  created_at: Date;
  paused_at: Date | null;
  ended_at: Date | null;
  readiness_released_at: Date | null;
  readiness_released_by: string | null;
  counts: Record<string, number>;
}

const BACKFILL_SELECT = Prisma.sql`
  SELECT b.backfill_id::text, b.job_key, b.from_date, b.to_date, b.reprocess, b.max_concurrent, b.date_order,
         b.push_readiness, b.status, b.created_by, b.created_at, b.paused_at, b.ended_at, b.readiness_released_at,
         b.readiness_released_by,
         (SELECT COALESCE(jsonb_object_agg(c.status, c.n), '{}'::jsonb)
            FROM (SELECT bd.status, count(*)::int AS n FROM nifi_ops.load_backfill_date bd
                   WHERE bd.backfill_id = b.backfill_id GROUP BY bd.status) c) AS counts
    FROM nifi_ops.load_backfill b`;

function toRecord(row: BackfillRow): BackfillRecord {
  return {
    backfillId: row.backfill_id,
    jobKey: row.job_key,
    from: dateOfColumn(row.from_date),
    to: dateOfColumn(row.to_date),
    reprocess: row.reprocess as BackfillReprocess,
    maxConcurrent: row.max_concurrent,
    order: row.date_order as BackfillOrder,
    pushReadiness: row.push_readiness,
    status: parseBackfillStatus(row.status),
    createdBy: row.created_by,
    createdAt: row.created_at,
    pausedAt: row.paused_at,
    endedAt: row.ended_at,
    readinessReleasedAt: row.readiness_released_at,
    readinessReleasedBy: row.readiness_released_by,
    counts: Object.fromEntries(BACKFILL_DATE_STATUSES.map((s) => [s, row.counts[s] ?? 0])) as Record<BackfillDateStatus, number>,
  };
}

export async function getBackfill(tx: Tx, backfillId: string): Promise<BackfillRecord | null> {
  const [row] = await tx.$queryRaw<BackfillRow[]>`${BACKFILL_SELECT} WHERE b.backfill_id = ${backfillId}::uuid`;
  return row ? toRecord(row) : null;
}

/** Backfills newest first; of one job, or open ones only, when asked. */
export async function listBackfills(
  tx: Tx,
  filter: { jobKey: string | null; openOnly: boolean },
  first: number,
): Promise<BackfillRecord[]> {
  const rows = await tx.$queryRaw<BackfillRow[]>`${BACKFILL_SELECT}
     WHERE (${filter.jobKey}::text IS NULL OR b.job_key = ${filter.jobKey})
       AND (NOT ${filter.openOnly} OR b.status = ANY(${OPEN_BACKFILL_STATUSES}::text[]))
     ORDER BY b.created_at DESC, b.backfill_id DESC
     LIMIT ${first}`;
  return rows.map(toRecord);
}

/** A backfill's dates in start order, with their START_LOAD call's delivery. */
export async function listBackfillDates(tx: Tx, backfillId: string): Promise<BackfillDateRecord[]> {
  const rows = await tx.$queryRaw<
    Array<{
      business_date: Date;
      position: number;
      status: string;
      reason: string | null;
      run_id: string | null;
      updated_at: Date;
      dispatch_id: string | null;
      dispatch_status: string | null;
    }>
  >`
    SELECT bd.business_date, bd.position, bd.status, bd.reason, bd.run_id::text, bd.updated_at,
           d.dispatch_id::text, d.status AS dispatch_status
      FROM nifi_ops.load_backfill_date bd
      LEFT JOIN nifi_ops.load_dispatch d ON d.dispatch_type = 'START_LOAD' AND d.backfill_id = bd.backfill_id
                                        AND d.business_date = bd.business_date
     WHERE bd.backfill_id = ${backfillId}::uuid
     ORDER BY bd.position`;
  return rows.map((r) => ({
    backfillId,
    businessDate: dateOfColumn(r.business_date),
    position: r.position,
    status: parseBackfillDateStatus(r.status),
    reason: r.reason,
    runId: r.run_id,
    updatedAt: r.updated_at,
    startDispatchId: r.dispatch_id,
    startDispatchStatus: r.dispatch_status === null ? null : parseDispatchStatus(r.dispatch_status),
  }));
}
