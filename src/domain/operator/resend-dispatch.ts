import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../errors.js';
import { lockRun } from '../runs/lock-run.js';
import { Prisma } from '../../generated/prisma/client.js';
import { parseDispatchStatus, RESENDABLE_DISPATCH_STATUSES, type DispatchStatus } from '../states.js';
import { transitionDispatch } from '../transitions.js';

export interface ResendDispatchCommand {
  runId: string;
  dispatchId: string;
  reason: string | null;
  actor: string;
}

export interface ResendDispatchResult {
  runId: string;
  dispatchId: string;
  status: DispatchStatus;
}

/**
 * resendDispatch (ref §3.15): a DEAD call, or a SENT one never acknowledged, goes back to PENDING with a
 * fresh attempt budget; the dispatchers are woken once it committed.
 */
export async function resendDispatch(tx: Tx, cmd: ResendDispatchCommand, afterCommit: AfterCommit): Promise<ResendDispatchResult> {
  await lockRun(tx, cmd.runId);
  const [dispatch] = await tx.$queryRaw<Array<{ status: string; dispatch_type: string; partition_id: string | null }>>`
    SELECT status, dispatch_type, partition_id FROM nifi_ops.load_dispatch
     WHERE dispatch_id = ${cmd.dispatchId}::uuid AND run_id = ${cmd.runId}::uuid FOR UPDATE`;
  if (!dispatch) throw new DomainError('DISPATCH_NOT_FOUND', { dispatchId: cmd.dispatchId });
  const previousStatus = parseDispatchStatus(dispatch.status);
  if (!RESENDABLE_DISPATCH_STATUSES.includes(previousStatus)) {
    throw new DomainError('DISPATCH_STATUS_MISMATCH', { status: previousStatus });
  }

  await transitionDispatch(
    tx,
    { dispatchId: cmd.dispatchId },
    {
      from: [previousStatus],
      to: 'PENDING',
      set: Prisma.sql`attempt_count = 0, last_error = NULL`,
      event: {
        level: 'WARN',
        name: 'DISPATCH_RESENT',
        runId: cmd.runId,
        partitionId: dispatch.partition_id,
        actor: cmd.actor,
        message: cmd.reason,
        details: { dispatchId: cmd.dispatchId, dispatchType: dispatch.dispatch_type, previousStatus, reason: cmd.reason },
      },
    },
  );
  afterCommit.wakeDispatcher(cmd.runId);
  return { runId: cmd.runId, dispatchId: cmd.dispatchId, status: 'PENDING' };
}
