import type pg from 'pg';
import type { Tx } from '../../db/client.js';
import { asStatements, inOneTransaction } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DISPATCH_RECEIVED_STATUS, type DispatchStatus, type DispatchType } from '../states.js';
import { transitionDispatch } from '../transitions.js';
import { backoffMs } from './backoff.js';

/** Where a call stands in its delivery: what every outbox row shows, whoever the call is for. */
export interface DeliveryState {
  dispatchId: string;
  status: DispatchStatus;
  attemptCount: number;
  nextAttemptAt: Date;
  lastHttpStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  ackedAt: Date | null;
  deadAt: Date | null;
  cancelledAt: Date | null;
}

/** What came back from one HTTP call: a response, or no response at all (refused, reset, timed out). */
export type DeliveryAttempt = { httpStatus: number; responseText: string } | { httpStatus: null; error: string };

export type DeliveryDecision =
  | { action: 'SENT'; httpStatus: number }
  | { action: 'RETRY'; httpStatus: number | null; error: string; delayMs: number }
  | { action: 'DEAD'; httpStatus: number | null; error: string };

export interface RetryPolicy {
  maxAttempts: number;
  backoffMin: number;
  backoffMax: number;
}

/** Client errors that mean "later" rather than "never" (ref §4.4). */
const RETRYABLE_4XX = [408, 425, 429];

/**
 * 2xx → SENT (received, not yet acknowledged); other 4xx → DEAD at once; 408/425/429, 3xx, 5xx and
 * network errors → retry after a backoff, until the attempts are used up → DEAD (ref §5.1).
 */
export function decideDelivery(attempt: DeliveryAttempt, attemptCount: number, policy: RetryPolicy): DeliveryDecision {
  const { httpStatus } = attempt;
  if (httpStatus !== null && httpStatus >= 200 && httpStatus < 300) return { action: 'SENT', httpStatus };
  const error = httpStatus === null ? attempt.error : attempt.responseText || `HTTP ${httpStatus}`;
  if (httpStatus !== null && httpStatus >= 400 && httpStatus < 500 && !RETRYABLE_4XX.includes(httpStatus)) {
    return { action: 'DEAD', httpStatus, error };
  }
  if (attemptCount >= policy.maxAttempts) return { action: 'DEAD', httpStatus, error: `max attempts reached: ${error}` };
  return { action: 'RETRY', httpStatus, error, delayMs: backoffMs(attemptCount, policy.backoffMin, policy.backoffMax) };
}

/**
 * PENDING → what a 2xx makes of each call (DISPATCH_RECEIVED_STATUS: SENT for NiFi's, ACKED for a gate
 * receiver's), one statement per status for a whole batch. Only from PENDING: an ACK that beat this bookkeeping
 * stays ACKED (ref §12.1.3). Returns the ids that changed.
 */
export async function markReceived(
  sql: pg.Pool,
  received: Array<{ dispatchId: string; dispatchType: DispatchType; httpStatus: number }>,
): Promise<Set<string>> {
  const changed = new Set<string>();
  for (const to of new Set(received.map((r) => DISPATCH_RECEIVED_STATUS[r.dispatchType]))) {
    const batch = received.filter((r) => DISPATCH_RECEIVED_STATUS[r.dispatchType] === to);
    const rows = await transitionDispatch(
      sql,
      {
        picked: Prisma.sql`SELECT * FROM unnest(${batch.map((s) => s.dispatchId)}::uuid[], ${batch.map((s) => s.httpStatus)}::integer[])
                           AS s(dispatch_id, http_status)`,
      },
      { from: ['PENDING'], to, set: Prisma.sql`last_http_status = picked.http_status, last_error = NULL` },
    );
    for (const row of rows) changed.add(row.dispatch_id);
  }
  return changed;
}

/** Stays PENDING, due again after the backoff; the failure is kept for operators. */
export async function deferDispatch(
  sql: pg.Pool,
  dispatchId: string,
  failure: { httpStatus: number | null; error: string; delayMs: number },
): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE nifi_ops.load_dispatch
        SET next_attempt_at = clock_timestamp() + make_interval(secs => $2::float8),
            last_http_status = $3, last_error = left($4, 2000)
      WHERE dispatch_id = $1 AND status = 'PENDING'`,
    [dispatchId, failure.delayMs / 1000, failure.httpStatus, failure.error],
  );
  return rowCount === 1;
}

export interface DeadDispatch {
  dispatchId: string;
  /** Null for a GATE_READY call; `gate` names its decision. */
  runId: string | null;
  gate: { consumer: string; businessDate: string; version: number } | null;
  /** An ALERT_WEBHOOK call's receiver and occurrence. */
  alert: { receiver: string; dedupKey: string } | null;
  dispatchType: DispatchType;
  partitionId: string | null;
  attempt: number;
  httpStatus: number | null;
  error: string;
  actor: string;
}

/** PENDING → DEAD, dated (deviation 11); DISPATCH_DEAD is written only if this call changed the row. */
export async function markDead(tx: Tx, dead: DeadDispatch): Promise<boolean> {
  const changed = await transitionDispatch(
    tx,
    { dispatchId: dead.dispatchId },
    {
      from: ['PENDING'],
      to: 'DEAD',
      set: Prisma.sql`last_http_status = ${dead.httpStatus}::integer, last_error = left(${dead.error}, 2000)`,
      event: {
        level: 'ERROR',
        name: 'DISPATCH_DEAD',
        runId: dead.runId,
        partitionId: dead.partitionId,
        actor: dead.actor,
        message: dead.error,
        details: {
          dispatchId: dead.dispatchId,
          type: dead.dispatchType,
          httpStatus: dead.httpStatus,
          attempt: dead.attempt,
          ...dead.gate,
          ...dead.alert,
        },
      },
    },
  );
  return changed.length > 0;
}

export const markReceivedOperation = asStatements(markReceived);
export const deferDispatchOperation = asStatements(
  (sql, { dispatchId, failure }: { dispatchId: string; failure: Parameters<typeof deferDispatch>[2] }) =>
    deferDispatch(sql, dispatchId, failure),
);
export const markDeadOperation = inOneTransaction(markDead);
