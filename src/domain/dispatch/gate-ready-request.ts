// A GATE_READY call in its receiver's format. Every format carries the decision's dispatch id (the X-Dispatch-Id
// header, and in the body), the same on every retry, so a receiver can drop the repeats of an at-least-once delivery.
import type { LeasedDecision } from './lease.js';
import type { DispatchRequest } from './request.js';

/**
 * gates.credentials: the headers (Authorization and others) every call to the origin carries, or for an Airflow API
 * the user whose JWT the dispatcher gets (src/worker/airflow-tokens.ts).
 */
export interface GateCredential {
  origin: string;
  headers: Record<string, string>;
  airflowToken: { username: string; password: string } | null;
}

const joinPath = (base: string, path: string) => `${base.replace(/\/+$/, '')}${path}`;

export const credentialFor = (credentials: readonly GateCredential[], url: string): GateCredential | undefined =>
  credentials.find((c) => c.origin === new URL(url).origin);

/** Where Airflow 3 hands out its API's JWTs (POST {username, password} → {access_token}), under its base URL. */
export const airflowTokenUrl = (notifyUrl: string) => joinPath(notifyUrl, '/auth/token');

/** The decision as Load Control's own body: what a GENERIC receiver gets, and what the orchestrators get as metadata. */
function decisionBody(dispatchId: string, decision: LeasedDecision) {
  return {
    dispatchId,
    consumer: decision.consumer,
    businessDate: decision.businessDate,
    version: decision.version,
    ready: decision.ready,
    evidence: decision.evidence.map((e) => ({ jobId: e.jobId, attempt: e.attempt, runId: e.runId })),
    decidedAt: decision.decidedAt,
  };
}

/**
 * GENERIC: POST notifyUrl with the decision. AIRFLOW: Airflow 3's `POST {notifyUrl}/api/v2/assets/events`
 * (CreateAssetEventsBody: `asset_id`, `partition_key` — the business date — and `extra`, which carries the
 * decision). DAGSTER: `POST {notifyUrl}/report_asset_materialization/{asset key}` with `partition` (the business
 * date), `data_version` (the decision's version), `description` and `metadata` (the evidence run ids and the
 * decision). Only a ready decision is ever an orchestrator's call (nifi_ops.decide_readiness writes no other).
 */
export function gateReadyRequest(credentials: readonly GateCredential[], dispatchId: string, decision: LeasedDecision): DispatchRequest {
  const headers = {
    ...credentialFor(credentials, decision.notifyUrl)?.headers,
    'Content-Type': 'application/json',
    'X-Dispatch-Id': dispatchId,
  };
  const body = decisionBody(dispatchId, decision);
  switch (decision.format) {
    case 'GENERIC':
      return { url: decision.notifyUrl, headers, body };
    case 'AIRFLOW':
      return {
        url: joinPath(decision.notifyUrl, '/api/v2/assets/events'),
        headers,
        body: { asset_id: Number(decision.asset), partition_key: decision.businessDate, extra: { load_control: body } },
      };
    case 'DAGSTER':
      return {
        url: joinPath(decision.notifyUrl, `/report_asset_materialization/${decision.asset!.split('/').map(encodeURIComponent).join('/')}`),
        headers,
        body: {
          partition: decision.businessDate,
          data_version: String(decision.version),
          description: `Ready for ${decision.consumer} on ${decision.businessDate} (Load Control readiness version ${decision.version})`,
          metadata: { evidence_run_ids: body.evidence.map((e) => e.runId), load_control: body },
        },
      };
  }
}
