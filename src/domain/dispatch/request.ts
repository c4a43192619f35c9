import { alertWebhookRequest, type AlertWebhookTarget } from '../notifications/alert-notification.js';
import type { LeasedDispatch } from './lease.js';

export interface DispatchRequest {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Where the calls go: NiFi's control receiver, and the receivers of alerts.webhooks by name. */
export interface DispatchTargets {
  receiverUrl: string;
  alertWebhooks: readonly AlertWebhookTarget[];
  /** The console's public URL, that alert webhooks link to; null: no links. */
  consoleUrl: string | null;
}

/**
 * The call to NiFi's control receiver (PG-05), exactly as ref §3.23: POST {receiverUrl}/validate/{jobKey}
 * or /reissue/{jobKey}, X-Run-Id and X-Dispatch-Id headers, numerics as strings, nulls kept. A GATE_READY call
 * goes to its gate's notifyUrl: the decision (consumer, business date, version, ready and the evidence's run ids),
 * X-Dispatch-Id the same on every retry of one decision, so a receiver can drop the repeats of an at-least-once
 * delivery. An ALERT_WEBHOOK call goes to its receiver (alert-notification.ts).
 */
export function dispatchRequest(targets: DispatchTargets, d: LeasedDispatch): DispatchRequest {
  if (d.alert) {
    const { receiver } = d.alert;
    // the lease takes only calls whose receiver is configured (stillWaiting): another one here is a bug
    const target = targets.alertWebhooks.find((w) => w.name === receiver);
    if (!target) throw new Error(`alert receiver ${receiver} is not configured`);
    return alertWebhookRequest(target, d.dispatchId, d.alert.occurrence, targets.consoleUrl);
  }
  if (d.decision) {
    const { decision } = d;
    return {
      url: decision.notifyUrl,
      headers: { 'Content-Type': 'application/json', 'X-Dispatch-Id': d.dispatchId },
      body: {
        dispatchId: d.dispatchId,
        consumer: decision.consumer,
        businessDate: decision.businessDate,
        version: decision.version,
        ready: decision.ready,
        evidence: decision.evidence.map((e) => ({ jobId: e.jobId, attempt: e.attempt, runId: e.runId })),
        decidedAt: decision.decidedAt,
      },
    };
  }
  const base = targets.receiverUrl.replace(/\/+$/, '');
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
