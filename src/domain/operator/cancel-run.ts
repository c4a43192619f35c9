import { OPERATOR_EVENTS } from '../events/operator-events.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { lockRun } from '../runs/lock-run.js';
import { Prisma } from '../../generated/prisma/client.js';
import { cancelUndeliveredDispatches } from '../dispatch/cancel.js';
import { canTransitionRun, UNFINISHED_PARTITION_STATUSES, type RunStatus } from '../states.js';
import { transitionPartition, transitionRun } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export interface CancelRunCommand {
  runId: string;
  reason: string;
  actor: string;
  /** Set when a bulk action (bulk-action.ts) cancels the run: its id, in the event. */
  bulkActionId?: string | null;
}

export interface CancelRunResult {
  runStatus: RunStatus;
  changed: boolean;
  abandonedPartitions: number;
  cancelledDispatches: number;
}

/**
 * cancelRun (deviation 4): an operator ends an active run that has not started publishing. PUBLISHING and
 * PUBLISH_UNKNOWN are refused (the target may be half-written: that needs resolveUnknown); a PUBLISHED
 * run may be cancelled and its events say it was published first. In the same transaction (deviation 6)
 * the run's unfinished partitions become ABANDONED and its undelivered dispatches CANCELLED.
 */
async function cancelRun(tx: Tx, cmd: CancelRunCommand): Promise<CancelRunResult> {
  // Lock order: partition rows (ascending id), then the run row, then dispatch rows. A manifest that
  // commits between the two locks adds partitions this transaction then locks out of order; the
  // deadlock that may cause (with a claim of one of them) is retried by the transaction helper.
  await tx.$queryRaw`
    SELECT partition_id FROM nifi_ops.load_partition
     WHERE run_id = ${cmd.runId}::uuid AND status = ANY(${UNFINISHED_PARTITION_STATUSES}::text[])
     ORDER BY partition_id FOR UPDATE`;
  const run = await lockRun(tx, cmd.runId);
  if (run.status === 'CANCELLED') return { runStatus: run.status, changed: false, abandonedPartitions: 0, cancelledDispatches: 0 };
  if (!canTransitionRun(run.status, 'CANCELLED')) throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });

  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: [run.status],
      to: 'CANCELLED',
      set: Prisma.sql`error_stage = 'OPERATOR', error_code = 'RUN_CANCELLED', error_message = ${cmd.reason}`,
    },
  );
  const abandonedPartitions = (
    await transitionPartition(
      tx,
      { runId: cmd.runId },
      {
        from: UNFINISHED_PARTITION_STATUSES,
        to: 'ABANDONED',
        set: Prisma.sql`error_code = 'RUN_CANCELLED'`,
      },
    )
  ).length;
  const cancelledDispatches = (await cancelUndeliveredDispatches(tx, cmd.runId, null)).length;

  const publishedThenCancelled = run.status === 'PUBLISHED';
  await recordApiEvent(tx, {
    level: 'WARN',
    name: OPERATOR_EVENTS.cancelRun,
    runId: cmd.runId,
    actor: cmd.actor,
    errorCode: 'RUN_CANCELLED',
    message: publishedThenCancelled ? `published, then cancelled: ${cmd.reason}` : cmd.reason,
    details: {
      from: run.status,
      reason: cmd.reason,
      publishedThenCancelled,
      abandonedPartitions,
      cancelledDispatches,
      ...(cmd.bulkActionId ? { bulkActionId: cmd.bulkActionId } : {}),
    },
  });
  return { runStatus: 'CANCELLED', changed: true, abandonedPartitions, cancelledDispatches };
}

export const cancelRunOperation = inOneTransaction(cancelRun);
