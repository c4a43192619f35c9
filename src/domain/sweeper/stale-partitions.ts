import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { reissuePartition } from '../partitions/reissue-partition.js';
import { lockRunsWithPartitions } from './lock-runs.js';
import { SWEEPER_ACTOR, seconds, type RuleOutcome, type SweeperSettings } from './settings.js';
import { timeoutRun } from './timeout-run.js';

/**
 * R1 stale partitions (ref §5.2, deviation 5): in EXTRACTING runs, a RUNNING partition whose heartbeat
 * is older than recovery.stale, or a PENDING one nobody claimed within recovery.stale of the manifest.
 * REISSUE mode resets each such partition for a new owner until one of them used up recovery.maxAttempts;
 * otherwise (FAIL mode, or exhausted) the whole run times out.
 */
/** Over alias `p` (load_partition): RUNNING without a heartbeat, or PENDING unclaimed, for `staleSeconds`. */
const isStale = (staleSeconds: number) => Prisma.sql`(
  (p.status = 'RUNNING' AND p.heartbeat_at < clock_timestamp() - make_interval(secs => ${staleSeconds}::float8))
  OR (p.status = 'PENDING' AND p.created_at < clock_timestamp() - make_interval(secs => ${staleSeconds}::float8)))`;

export async function sweepStalePartitions(tx: Tx, settings: SweeperSettings, afterCommit: AfterCommit): Promise<RuleOutcome> {
  const { mode, maxAttempts } = settings.recovery;
  const stale = isStale(seconds(settings.recovery.stale));
  const candidates = await tx.$queryRaw<Array<{ run_id: string }>>`
    SELECT DISTINCT p.run_id::text FROM nifi_ops.load_partition p
      JOIN nifi_ops.load_run r ON r.run_id = p.run_id
     WHERE r.status = 'EXTRACTING' AND ${stale}`;
  const runs = await lockRunsWithPartitions(
    tx,
    candidates.map((c) => c.run_id),
    ['EXTRACTING'],
  );
  const outcome: RuleOutcome = { acted: [] };

  for (const run of runs) {
    // re-read under our locks: a report may have refreshed a heartbeat since the candidates were chosen
    const partitions = await tx.$queryRaw<Array<{ partition_id: string; attempt_count: number; status: string }>>`
      SELECT p.partition_id, p.attempt_count, p.status FROM nifi_ops.load_partition p
       WHERE p.run_id = ${run.runId}::uuid AND ${stale}
       ORDER BY p.partition_id`;
    if (partitions.length === 0) continue;
    const exhausted = partitions.some((p) => p.attempt_count >= maxAttempts);

    if (mode === 'REISSUE' && !exhausted) {
      for (const p of partitions) {
        const unclaimed = p.status === 'PENDING';
        const { dispatchId } = await reissuePartition(
          tx,
          {
            runId: run.runId,
            partitionId: p.partition_id,
            errorCode: unclaimed ? 'PARTITION_UNCLAIMED' : 'HEARTBEAT_STALE',
            reason: unclaimed ? 'never claimed; reset by sweeper for reissue' : 'reset by sweeper for reissue',
            actor: SWEEPER_ACTOR,
          },
          afterCommit,
        );
        outcome.acted.push({ action: 'reissue_partition', runId: run.runId, partitionId: p.partition_id, dispatchId });
      }
      await tx.$executeRaw`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() WHERE run_id = ${run.runId}::uuid`;
    } else {
      const ids = partitions.map((p) => p.partition_id);
      await timeoutRun(tx, {
        runId: run.runId,
        from: 'EXTRACTING',
        errorCode: mode === 'REISSUE' ? 'REISSUE_ATTEMPTS_EXHAUSTED' : 'PARTITION_STALE',
        message: `stale partitions: ${ids.join(',')}`,
        details: { stalePartitions: ids },
      });
      outcome.acted.push({ action: 'timeout_stale_partition', runId: run.runId });
    }
  }
  return outcome;
}
