import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { cancelUndeliveredDispatches } from '../dispatch/cancel.js';
import { recordApiEvent } from '../events/events.js';
import { UNFINISHED_PARTITION_STATUSES, type RunStatus } from '../states.js';
import { transitionPartition, transitionRun } from '../transitions.js';
import { SWEEPER_ACTOR } from './settings.js';

export interface TimeoutRun {
  runId: string;
  from: RunStatus;
  errorCode: string;
  message: string;
  details: Record<string, unknown>;
}

/**
 * run → TIMED_OUT with its unfinished partitions, and its undelivered calls cancelled (deviation 6).
 * The caller holds every unfinished partition row of the run and then the run row (lockRunsWithPartitions).
 */
export async function timeoutRun(tx: Tx, t: TimeoutRun): Promise<void> {
  const partitions = await transitionPartition(
    tx,
    { runId: t.runId },
    {
      from: UNFINISHED_PARTITION_STATUSES,
      to: 'TIMED_OUT',
      set: Prisma.sql`error_code = ${t.errorCode}`,
    },
  );
  await transitionRun(
    tx,
    { runId: t.runId },
    {
      from: [t.from],
      to: 'TIMED_OUT',
      set: Prisma.sql`error_stage = 'SWEEPER', error_code = ${t.errorCode}, error_message = left(${t.message}, 2000)`,
    },
  );
  const cancelled = await cancelUndeliveredDispatches(tx, t.runId, `run timed out: ${t.errorCode}`);
  await recordApiEvent(tx, {
    level: 'ERROR',
    name: 'RUN_TIMED_OUT',
    runId: t.runId,
    actor: SWEEPER_ACTOR,
    errorCode: t.errorCode,
    message: t.message,
    details: {
      ...t.details,
      from: t.from,
      timedOutPartitions: partitions.map((p) => p.partition_id).sort(),
      cancelledDispatches: cancelled,
    },
  });
}
