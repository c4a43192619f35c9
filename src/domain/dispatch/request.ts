import type { LeasedDispatch } from './lease.js';

export interface DispatchRequest {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * The call to NiFi's control receiver (PG-05), exactly as ref §3.23: POST {receiverUrl}/validate/{jobKey}
 * or /reissue/{jobKey}, X-Run-Id and X-Dispatch-Id headers, numerics as strings, nulls kept.
 */
export function dispatchRequest(receiverUrl: string, d: LeasedDispatch): DispatchRequest {
  const base = receiverUrl.replace(/\/+$/, '');
  const headers = { 'Content-Type': 'application/json', 'X-Run-Id': d.runId, 'X-Dispatch-Id': d.dispatchId };
  if (d.dispatchType === 'VALIDATE_RUN') {
    return { url: `${base}/validate/${encodeURIComponent(d.jobKey)}`, headers, body: { runId: d.runId, dispatchId: d.dispatchId } };
  }
  return {
    url: `${base}/reissue/${encodeURIComponent(d.jobKey)}`,
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
