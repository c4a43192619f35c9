import type { Tx } from '../../db/client.js';
import { cancelUndeliveredDispatches } from '../dispatch/cancel.js';
import { recordApiEvent } from '../events/events.js';
import { UNFINISHED_PARTITION_STATUSES } from '../states.js';
import { SWEEPER_ACTOR } from './settings.js';

export interface TimeoutRun {
  runId: string;
  from: string;
  errorCode: string;
  message: string;
  details: Record<string, unknown>;
}

/**
 * run → TIMED_OUT with its unfinished partitions, and its undelivered calls cancelled (deviation 6).
 * The caller holds every unfinished partition row of the run and then the run row (lockRunsWithPartitions).
 */
export async function timeoutRun(tx: Tx, t: TimeoutRun): Promise<void> {
  const partitions = await tx.$queryRaw<Array<{ partition_id: string }>>`
    UPDATE nifi_ops.load_partition
       SET status = 'TIMED_OUT', error_code = ${t.errorCode}, completed_at = clock_timestamp()
     WHERE run_id = ${t.runId}::uuid AND status = ANY(${UNFINISHED_PARTITION_STATUSES}::text[])
    RETURNING partition_id`;
  await tx.$executeRaw`
    UPDATE nifi_ops.load_run
       SET status = 'TIMED_OUT', error_stage = 'SWEEPER', error_code = ${t.errorCode}, error_message = left(${t.message}, 2000),
           completed_at = clock_timestamp(), heartbeat_at = clock_timestamp(), version_no = version_no + 1
     WHERE run_id = ${t.runId}::uuid AND status = ${t.from}`;
  const cancelled = await cancelUndeliveredDispatches(tx, t.runId, `run timed out: ${t.errorCode}`);
  await recordApiEvent(tx, {
    level: 'ERROR', name: 'RUN_TIMED_OUT', runId: t.runId, actor: SWEEPER_ACTOR, errorCode: t.errorCode, message: t.message,
    details: {
      ...t.details, from: t.from,
      timedOutPartitions: partitions.map((p) => p.partition_id).sort(), cancelledDispatches: cancelled,
    },
  });
}
