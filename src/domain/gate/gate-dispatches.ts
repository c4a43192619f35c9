// A gate's GATE_READY calls: one per readiness decision while the gate has a receiver (notifyUrl), written by the
// decision itself (nifi_ops.decide_readiness) and delivered by the dispatcher like every other call.
import type { Tx } from '../../db/client.js';
import type { DeliveryState } from '../dispatch/deliver.js';
import { parseDispatchStatus } from '../states.js';
import { dateOfColumn } from './business-date.js';

export interface GateDispatchRecord extends DeliveryState {
  consumer: string;
  businessDate: string;
  /** The decision delivered. */
  version: number;
}

export const MAX_GATE_DISPATCHES_PAGE = 100;

/** A gate's latest calls, newest first; with a business date, that date's only. */
export async function listGateDispatches(
  tx: Tx,
  consumer: string,
  businessDate: string | null,
  last: number,
): Promise<GateDispatchRecord[]> {
  const rows = await tx.loadDispatch.findMany({
    where: { dispatchType: 'GATE_READY', consumer, ...(businessDate === null ? {} : { businessDate: new Date(businessDate) }) },
    orderBy: [{ createdAt: 'desc' }, { dispatchId: 'desc' }],
    take: last,
  });
  return rows.map((d) => ({
    dispatchId: d.dispatchId,
    consumer: d.consumer!,
    businessDate: dateOfColumn(d.businessDate!),
    version: d.readinessVersion!,
    status: parseDispatchStatus(d.status),
    attemptCount: d.attemptCount,
    nextAttemptAt: d.nextAttemptAt,
    lastHttpStatus: d.lastHttpStatus,
    lastError: d.lastError,
    createdAt: d.createdAt,
    ackedAt: d.ackedAt,
    deadAt: d.deadAt,
    cancelledAt: d.cancelledAt,
  }));
}
