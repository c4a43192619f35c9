import type pg from 'pg';
import { ACTIVE_RUN_STATUSES, BACKLOG_DISPATCH_STATUSES, RUN_STATUSES } from '../states.js';

export interface BacklogCounts {
  /** Dispatches by backlog status. */
  dispatches: Record<string, number>;
  /** Active runs by status; every other run status is present with 0 (ref §5.2 refresh_gauges). */
  runs: Record<string, number>;
}

export async function countBacklog(sql: pg.Pool): Promise<BacklogCounts> {
  const { rows } = await sql.query<{ kind: string; status: string; n: number }>(
    `SELECT 'dispatch' AS kind, status, count(*)::int AS n FROM nifi_ops.load_dispatch
      WHERE status = ANY($1::text[]) GROUP BY status
     UNION ALL
     SELECT 'run', status, count(*)::int FROM nifi_ops.load_run
      WHERE status = ANY($2::text[]) GROUP BY status`,
    [BACKLOG_DISPATCH_STATUSES, ACTIVE_RUN_STATUSES],
  );
  const counts: BacklogCounts = {
    dispatches: Object.fromEntries(BACKLOG_DISPATCH_STATUSES.map((s) => [s, 0])),
    runs: Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])),
  };
  for (const row of rows) (row.kind === 'dispatch' ? counts.dispatches : counts.runs)[row.status] = row.n;
  return counts;
}
