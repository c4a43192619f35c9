// A stalled load: an extracting run whose RUNNING partitions have not reported within monitor.stallAfter, or
// that has not moved at all for that long (nobody claims its partitions). One definition for the STALLED_RUN
// alert, the lc_stalled_* gauges and the run page's stall panel; flagged well before the sweeper acts at
// recovery.stale (stale-partitions.ts), which is what makes it worth a person's look.
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { runMovedAt } from '../runs/stale-runs.js';
import { type PartitionRecord, quietestRunningPartitions } from '../runs/queries.js';

/** The partitions a stall panel lists at most, the longest silent first. */
export const STALL_PARTITIONS_SHOWN = 50;
/** Partition ids an alert's message names at most. */
const IDS_IN_MESSAGE = 10;

const threshold = (stallAfterMs: number) => Prisma.sql`clock_timestamp() - make_interval(secs => ${stallAfterMs / 1000}::float8)`;

/** Over alias `p` (load_partition): RUNNING and silent for stallAfter (ix_load_partition_recovery). */
export const silentPartition = (stallAfterMs: number) => Prisma.sql`p.status = 'RUNNING' AND p.heartbeat_at < ${threshold(stallAfterMs)}`;

/**
 * Every stalled run as a row of the monitor's `alerts` CTE (monitor-summary.ts): WARN, dated when its longest
 * silent partition last reported (or when the run last moved), naming the silent partitions.
 */
export function stalledRunAlerts(stallAfterMs: number): Prisma.Sql {
  return Prisma.sql`
      SELECT 'STALLED_RUN', 'WARN', r.run_id, r.job_key, r.business_key, r.status, COALESCE(s.oldest, m.moved_at),
             CASE WHEN s.partitions > 0
                  THEN s.partitions || ' RUNNING partition(s) without a heartbeat since '
                       || to_char(s.oldest AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ': '
                       || array_to_string(s.ids[1:${IDS_IN_MESSAGE}], ', ')
                       || CASE WHEN s.partitions > ${IDS_IN_MESSAGE} THEN ', …' ELSE '' END
                  ELSE 'no progress since ' || to_char(m.moved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
             NULL::uuid, NULL::text, NULL::text
        FROM nifi_ops.load_run r
        CROSS JOIN LATERAL (
          SELECT count(*)::int AS partitions, min(p.heartbeat_at) AS oldest,
                 array_agg(p.partition_id ORDER BY p.heartbeat_at, p.partition_id) AS ids
            FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id AND ${silentPartition(stallAfterMs)}) s
        CROSS JOIN LATERAL (SELECT ${runMovedAt} AS moved_at) m
       WHERE r.status = 'EXTRACTING' AND (s.partitions > 0 OR m.moved_at < ${threshold(stallAfterMs)})`;
}

/** How many runs are stalled now, and how many RUNNING partitions of extracting runs are silent (lc_stalled_*). */
export async function countStalls(tx: Tx, stallAfterMs: number): Promise<{ runs: number; partitions: number }> {
  const [counts] = await tx.$queryRaw<Array<{ runs: number; partitions: number }>>`
    WITH stalled AS (${stalledRunAlerts(stallAfterMs)})
    SELECT (SELECT count(*)::int FROM stalled) AS runs,
           (SELECT count(*)::int FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r ON r.run_id = p.run_id
             WHERE r.status = 'EXTRACTING' AND ${silentPartition(stallAfterMs)}) AS partitions`;
  return counts!;
}

/** What the run page needs to judge a stall as time passes: the threshold, the run's last movement, its quietest partitions. */
export interface RunStall {
  stallAfterMs: number;
  /** When the run or any of its partitions last moved. */
  lastProgressAt: Date;
  /**
   * Its RUNNING partitions, the longest silent first, at most STALL_PARTITIONS_SHOWN: those that stall first as time
   * passes, so a page can tell which are silent now without reading again while nothing reports.
   */
  quietest: PartitionRecord[];
}

export async function runStall(tx: Tx, runId: string, stallAfterMs: number): Promise<RunStall> {
  const [moved] = await tx.$queryRaw<Array<{ moved_at: Date }>>`
    SELECT ${runMovedAt} AS moved_at FROM nifi_ops.load_run r WHERE r.run_id = ${runId}::uuid`;
  const quietest = await quietestRunningPartitions(tx, runId, STALL_PARTITIONS_SHOWN);
  return { stallAfterMs, lastProgressAt: moved!.moved_at, quietest };
}
