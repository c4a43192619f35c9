import { OPERATOR_EVENTS } from '../events/operator-events.js';
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { lockRun } from '../runs/lock-run.js';
import { Prisma } from '../../generated/prisma/client.js';
import { parseDispatchStatus, RESENDABLE_DISPATCH_STATUSES, type DispatchStatus } from '../states.js';
import { transitionDispatch } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export interface ResendDispatchCommand {
  /** The dispatch's run; null: found from the dispatch (a GATE_READY call has none). */
  runId: string | null;
  dispatchId: string;
  reason: string | null;
  actor: string;
  /** Set when a bulk action (bulk-action.ts) resends it: its id, in the event. */
  bulkActionId?: string | null;
}

export interface ResendDispatchResult {
  runId: string | null;
  dispatchId: string;
  status: DispatchStatus;
}

interface DispatchRow {
  run_id: string | null;
  status: string;
  dispatch_type: string;
  partition_id: string | null;
  consumer: string | null;
  business_date: string | null;
  readiness_version: number | null;
}

/**
 * resendDispatch (ref §3.15): a DEAD call, or a SENT one never acknowledged, goes back to PENDING with a
 * fresh attempt budget; the dispatchers are woken once it committed. Given a run id, the dispatch must be that
 * run's; without one, any dispatch — a GATE_READY call's decision is named in the event instead of a run.
 */
async function resendDispatch(tx: Tx, cmd: ResendDispatchCommand, afterCommit: AfterCommit): Promise<ResendDispatchResult> {
  // the lock order: the run's row before its dispatch's
  const runId =
    cmd.runId ??
    (
      await tx.$queryRaw<Array<{ run_id: string | null }>>`
        SELECT run_id::text FROM nifi_ops.load_dispatch WHERE dispatch_id = ${cmd.dispatchId}::uuid`
    )[0]?.run_id ??
    null;
  if (runId !== null) await lockRun(tx, runId);
  const [dispatch] = await tx.$queryRaw<DispatchRow[]>`
    SELECT run_id::text, status, dispatch_type, partition_id, consumer, to_char(business_date, 'YYYY-MM-DD') AS business_date,
           readiness_version
      FROM nifi_ops.load_dispatch
     WHERE dispatch_id = ${cmd.dispatchId}::uuid AND run_id IS NOT DISTINCT FROM ${runId}::uuid FOR UPDATE`;
  if (!dispatch) throw new DomainError('DISPATCH_NOT_FOUND', { dispatchId: cmd.dispatchId });
  const previousStatus = parseDispatchStatus(dispatch.status);
  if (!RESENDABLE_DISPATCH_STATUSES.includes(previousStatus)) {
    throw new DomainError('DISPATCH_STATUS_MISMATCH', { status: previousStatus });
  }
  const gate =
    dispatch.consumer === null
      ? {}
      : { consumer: dispatch.consumer, businessDate: dispatch.business_date, version: dispatch.readiness_version };

  await transitionDispatch(
    tx,
    { dispatchId: cmd.dispatchId },
    {
      from: [previousStatus],
      to: 'PENDING',
      set: Prisma.sql`attempt_count = 0, last_error = NULL`,
      event: {
        level: 'WARN',
        name: OPERATOR_EVENTS.resendDispatch,
        runId,
        partitionId: dispatch.partition_id,
        actor: cmd.actor,
        message: cmd.reason,
        details: {
          dispatchId: cmd.dispatchId,
          dispatchType: dispatch.dispatch_type,
          previousStatus,
          reason: cmd.reason,
          ...gate,
          ...(cmd.bulkActionId ? { bulkActionId: cmd.bulkActionId } : {}),
        },
      },
    },
  );
  afterCommit.wakeDispatcher(runId ?? cmd.dispatchId);
  return { runId, dispatchId: cmd.dispatchId, status: 'PENDING' };
}

export const resendDispatchOperation = inOneTransaction(resendDispatch);
