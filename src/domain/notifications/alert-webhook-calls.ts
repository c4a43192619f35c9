// The ALERT_WEBHOOK calls as operators see them: where each stands in its delivery, to which receiver (by name:
// the URL and headers stay in the configuration) and the occurrence it posts.
import type { Tx } from '../../db/client.js';
import type { DeliveryState } from '../dispatch/deliver.js';
import { parseDispatchStatus } from '../states.js';
import { ALERT_NOTIFICATION_JSON, type AlertNotification } from './alert-notification.js';

export interface AlertWebhookCall extends DeliveryState {
  receiver: string;
  occurrence: AlertNotification;
}

export const MAX_ALERT_WEBHOOK_CALLS_PAGE = 100;

interface CallRow {
  dispatch_id: string;
  receiver: string;
  status: string;
  attempt_count: number;
  next_attempt_at: Date;
  last_http_status: number | null;
  last_error: string | null;
  created_at: Date;
  acked_at: Date | null;
  dead_at: Date | null;
  cancelled_at: Date | null;
  occurrence: AlertNotification;
}

/** The latest calls, newest first (ix_load_dispatch_alert_webhook_created); with a receiver, that receiver's only. */
export async function listAlertWebhookCalls(tx: Tx, receiver: string | null, last: number): Promise<AlertWebhookCall[]> {
  const rows = await tx.$queryRaw<CallRow[]>`
    SELECT d.dispatch_id::text, d.receiver, d.status, d.attempt_count, d.next_attempt_at, d.last_http_status, d.last_error,
           d.created_at, d.acked_at, d.dead_at, d.cancelled_at, ${ALERT_NOTIFICATION_JSON} AS occurrence
      FROM nifi_ops.load_dispatch d JOIN nifi_ops.alert_occurrence o ON o.dedup_key = d.alert_dedup_key
     WHERE d.dispatch_type = 'ALERT_WEBHOOK' AND (${receiver}::text IS NULL OR d.receiver = ${receiver}::text)
     ORDER BY d.created_at DESC, d.dispatch_id DESC
     LIMIT ${last}::integer`;
  return rows.map((r) => ({
    dispatchId: r.dispatch_id,
    receiver: r.receiver,
    status: parseDispatchStatus(r.status),
    attemptCount: r.attempt_count,
    nextAttemptAt: r.next_attempt_at,
    lastHttpStatus: r.last_http_status,
    lastError: r.last_error,
    createdAt: r.created_at,
    ackedAt: r.acked_at,
    deadAt: r.dead_at,
    cancelledAt: r.cancelled_at,
    occurrence: r.occurrence,
  }));
}
