import { lineageRequest, type LineageTarget } from '../lineage/run-event.js';
import { alertWebhookRequest, type AlertWebhookTarget } from '../notifications/alert-notification.js';
import { gateReadyRequest, type GateCredential } from './gate-ready-request.js';
import type { LeasedDispatch } from './lease.js';

export interface DispatchRequest {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Where the calls go: NiFi's control receiver, the receivers of alerts.webhooks by name, lineage.url when enabled. */
export interface DispatchTargets {
  /** nifi.receiverUrl; null: NiFi's calls are not leased (leaseDispatches' nifi option). */
  receiverUrl: string | null;
  alertWebhooks: readonly AlertWebhookTarget[];
  lineage: LineageTarget | null;
  gateCredentials: readonly GateCredential[];
  /** The console's public URL, that alert webhooks link to; null: no links. */
  consoleUrl: string | null;
}

/**
 * The call to NiFi's control receiver (PG-05), exactly as ref §3.23: POST {receiverUrl}/validate/{jobKey}
 * or /reissue/{jobKey}, X-Run-Id and X-Dispatch-Id headers, numerics as strings, nulls kept; a backfill's
 * POST {receiverUrl}/start/{jobKey} with X-Dispatch-Id and its business key and backfill id. A GATE_READY call
 * goes to its gate's receiver in the gate's format (gate-ready-request.ts). An ALERT_WEBHOOK call goes to its receiver
 * (alert-notification.ts), a LINEAGE_EVENT to lineage.url (src/domain/lineage/run-event.ts).
 */
export function dispatchRequest(targets: DispatchTargets, d: LeasedDispatch): DispatchRequest {
  if (d.lineage) {
    // the lease takes LINEAGE_EVENT calls only while lineage is enabled (stillWaiting): none here is a bug
    if (!targets.lineage) throw new Error('lineage is not enabled');
    return lineageRequest(targets.lineage, d.dispatchId, d.runId!, d.lineage);
  }
  if (d.alert) {
    const { receiver } = d.alert;
    // the lease takes only calls whose receiver is configured (stillWaiting): another one here is a bug
    const target = targets.alertWebhooks.find((w) => w.name === receiver);
    if (!target) throw new Error(`alert receiver ${receiver} is not configured`);
    return alertWebhookRequest(target, d.dispatchId, d.alert.occurrence, targets.consoleUrl);
  }
  if (d.decision) return gateReadyRequest(targets.gateCredentials, d.dispatchId, d.decision);
  // the lease takes NiFi's calls only with a receiver to send them to: one here without is a bug
  if (!targets.receiverUrl) throw new Error('nifi.receiverUrl is not set');
  const base = targets.receiverUrl.replace(/\/+$/, '');
  if (d.dispatchType === 'START_LOAD') {
    // no run yet: the createRun this starts carries the backfill id, and is the call's ACK
    return {
      url: `${base}/start/${encodeURIComponent(d.jobKey!)}`,
      headers: { 'Content-Type': 'application/json', 'X-Dispatch-Id': d.dispatchId },
      body: { dispatchId: d.dispatchId, backfillId: d.backfillId, businessKey: d.businessKey },
    };
  }
  const headers = { 'Content-Type': 'application/json', 'X-Run-Id': d.runId!, 'X-Dispatch-Id': d.dispatchId };
  if (d.dispatchType === 'VALIDATE_RUN') {
    return { url: `${base}/validate/${encodeURIComponent(d.jobKey!)}`, headers, body: { runId: d.runId, dispatchId: d.dispatchId } };
  }
  return {
    url: `${base}/reissue/${encodeURIComponent(d.jobKey!)}`,
    headers,
    body: {
      runId: d.runId,
      dispatchId: d.dispatchId,
      partitionId: d.partitionId,
      businessKey: d.businessKey,
      snapshotScn: d.snapshotScn,
      hdfsRunPath: d.hdfsRunPath,
      lowerBound: d.lowerBound,
      upperBound: d.upperBound,
      upperInclusive: d.upperInclusive,
      isNullPartition: d.isNullPartition,
      expectedRowCount: d.expectedRowCount,
    },
  };
}
