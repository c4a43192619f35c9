// A gate's GATE_READY calls: one per readiness decision while the gate has a receiver (notifyUrl), written by the
// decision itself (nifi_ops.decide_readiness) and delivered by the dispatcher like every other call.
import type { Tx } from '../../db/client.js';
import { selectList } from '../../db/select-list.js';
import { Prisma } from '../../generated/prisma/client.js';
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

/** A GATE_READY row of nifi_ops.load_dispatch: its consumer, business date and version are set (ck_load_dispatch_target). */
/** A GATE_READY call as stored: its delivery (status still as text) and what it is about. */
type GateDispatchRow = Omit<DeliveryState, 'status'> & {
  status: string;
  consumer: string;
  businessDate: Date;
  readinessVersion: number;
};

const GATE_DISPATCH_COLUMNS = selectList<GateDispatchRow>({
  dispatchId: true,
  consumer: true,
  businessDate: true,
  readinessVersion: true,
  status: true,
  attemptCount: true,
  nextAttemptAt: true,
  lastHttpStatus: true,
  lastError: true,
  createdAt: true,
  ackedAt: true,
  deadAt: true,
  cancelledAt: true,
});

/** A gate's latest calls, newest first; with a business date, that date's only. */
export async function listGateDispatches(
  tx: Tx,
  consumer: string,
  businessDate: string | null,
  last: number,
): Promise<GateDispatchRecord[]> {
  const rows = await tx.$queryRaw<GateDispatchRow[]>`
    SELECT ${GATE_DISPATCH_COLUMNS} FROM nifi_ops.load_dispatch
     WHERE dispatch_type = 'GATE_READY' AND consumer = ${consumer}
       ${businessDate === null ? Prisma.empty : Prisma.sql`AND business_date = ${businessDate}::date`}
     ORDER BY created_at DESC, dispatch_id DESC
     LIMIT ${last}`;
  return rows.map(({ businessDate, readinessVersion, status, ...d }) => ({
    ...d,
    businessDate: dateOfColumn(businessDate),
    version: readinessVersion,
    status: parseDispatchStatus(status),
  }));
}
