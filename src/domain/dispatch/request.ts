import type { LeasedDispatch } from './lease.js';

export interface DispatchRequest {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * The call to NiFi's control receiver (PG-05), exactly as ref §3.23: POST {receiverUrl}/validate/{jobKey}
 * or /reissue/{jobKey}, X-Run-Id and X-Dispatch-Id headers, numerics as strings, nulls kept. A GATE_READY call
 * goes to its gate's notifyUrl: the decision (consumer, business date, version, ready and the evidence's run ids),
 * X-Dispatch-Id the same on every retry of one decision, so a receiver can drop the repeats of an at-least-once
 * delivery.
 */
export function dispatchRequest(receiverUrl: string, d: LeasedDispatch): DispatchRequest {
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
  const base = receiverUrl.replace(/\/+$/, '');
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
