// When an active run is stale: one definition for the sweeper's RUN_STALE_ALERT and the monitor's RUN_STALE.
import { Prisma } from '../../generated/prisma/client.js';
import { ACTIVE_RUN_STATUSES, type RunStatus } from '../states.js';

/** config.recovery's thresholds, in milliseconds. */
export interface StaleThresholds {
  stale: number;
  validationStale: number;
  publishStale: number;
}

/**
 * How long each active status may go without moving before its run is stale (deviation 5), in milliseconds:
 * extraction by recovery.stale, publishing by recovery.publishStale, every other active status (waiting ones
 * included) by recovery.validationStale.
 */
export function staleThresholds(recovery: StaleThresholds): Array<[RunStatus, number]> {
  return ACTIVE_RUN_STATUSES.map((status) => {
    switch (status) {
      case 'CREATED':
      case 'EXTRACTING':
        return [status, recovery.stale];
      case 'PUBLISHING':
        return [status, recovery.publishStale];
      default:
        return [status, recovery.validationStale];
    }
  });
}

/**
 * When run `r` last moved (ref §3.19: its heartbeat, which every step of the run refreshes). An extracting run
 * moves through its partitions too: chunk reports touch only the partition rows.
 */
export const runMovedAt = Prisma.sql`
  CASE WHEN r.status = 'EXTRACTING'
       THEN GREATEST(r.heartbeat_at, (SELECT max(p.heartbeat_at) FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id))
       ELSE r.heartbeat_at END`;
