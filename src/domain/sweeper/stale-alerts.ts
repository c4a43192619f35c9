import type { Tx } from '../../db/client.js';
import { runMovedAt, staleThresholds } from '../runs/stale-runs.js';
import { SWEEPER_ACTOR, seconds, type RuleOutcome, type SweeperSettings } from './settings.js';

/**
 * R4 stale alert (ref §5.2, deviation 5): a RUN_STALE_ALERT for every run in a non-terminal status that
 * has not moved within that status's threshold — EXTRACTED_VALIDATED and STAGING_VALIDATED included —
 * at most one per run and status per threshold window. An extracting run moves when any of its
 * partitions does (chunk reports do not touch the run row). No state changes.
 */
export async function sweepStaleAlerts(tx: Tx, settings: SweeperSettings): Promise<RuleOutcome> {
  const thresholds = staleThresholds(settings.recovery);
  const statuses = thresholds.map(([status]) => status);
  const secs = thresholds.map(([, ms]) => seconds(ms));
  const alerts = await tx.$queryRaw<Array<{ run_id: string }>>`
    WITH movement AS (
      SELECT r.run_id, r.status, t.secs, ${runMovedAt} AS moved_at
        FROM nifi_ops.load_run r
        JOIN unnest(${statuses}::text[], ${secs}::float8[]) AS t(status, secs) ON t.status = r.status
       -- the join's statuses again as a filter, for the planner: an index scan of the active runs, not of all
       WHERE r.status = ANY(${statuses}::text[])
    )
    SELECT m.run_id::text, nifi_ops.record_api_event('ERROR', 'RUN_STALE_ALERT', m.run_id, NULL, ${SWEEPER_ACTOR},
             p_message => 'no progress in ' || m.status,
             p_details => jsonb_build_object('status', m.status, 'movedAt', m.moved_at, 'thresholdSeconds', m.secs)) AS event_id
      FROM movement m
     WHERE m.moved_at < clock_timestamp() - make_interval(secs => m.secs)
       AND NOT EXISTS (
             SELECT 1 FROM nifi_ops.load_event e
              WHERE e.run_id = m.run_id AND e.event_name = 'RUN_STALE_ALERT' AND e.details ->> 'status' = m.status
                AND e.event_time > clock_timestamp() - make_interval(secs => m.secs))`;
  return { acted: alerts.map((a) => ({ action: 'stale_alert', runId: a.run_id })) };
}
