import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { calendarDate, dateOfColumn } from './business-date.js';
import { evidenceOf, readiness, type Evidence } from './ledger.js';
import { boundConsumer, GatedStepNotReady } from './run-gate.js';

export interface PublishClaim {
  runId: string;
  jobKey: string;
  businessKey: string;
  publishToken: string;
  actor: string;
}

export interface PublishClaimEvidence extends Evidence {
  consumer: string;
  businessDate: string;
  publishToken: string;
  recordedAt: Date;
}

/**
 * claimPublish's gate, called inside the claimPublish transaction by the claim's winner only (the run row is
 * locked): when the run's job is bound to a gate, re-checks it for the run's business date and stores the
 * upstream attempts that authorise this publish with the claim. Not ready → DEPENDENCIES_NOT_READY
 * (GatedStepNotReady: run the step with refusableByGate so that its WARN event survives the refusal).
 * Returns the evidence written, or null when the job is not gated.
 */
export async function authorisePublishClaim(tx: Tx, claim: PublishClaim): Promise<Evidence[] | null> {
  const consumer = await boundConsumer(tx, claim.jobKey);
  if (consumer === null) return null;
  const businessDate = calendarDate(claim.businessKey);
  if (businessDate === null) {
    // only possible when the job was bound after this run was created
    throw new DomainError(
      'DEPENDENCIES_NOT_READY',
      { jobKey: claim.jobKey, businessKey: claim.businessKey, consumer, reason: 'BUSINESS_KEY_NOT_A_DATE' },
      `${claim.jobKey} is gated by ${consumer} but the run's business key ${claim.businessKey} is not a calendar date`,
    );
  }
  const current = await readiness(tx, consumer, businessDate);
  if (!current.ready) {
    throw new GatedStepNotReady({ jobKey: claim.jobKey, businessKey: claim.businessKey, runId: claim.runId, actor: claim.actor }, current);
  }
  const evidence = evidenceOf(current);
  await tx.$executeRaw`
    INSERT INTO nifi_ops.gate_publish_claim_evidence
        (run_id, job_id, consumer, business_date, publish_token, attempt, upstream_run_id)
    SELECT ${claim.runId}::uuid, e.job_id, ${consumer}, ${businessDate}::date, ${claim.publishToken}::uuid, e.attempt, e.run_id
      FROM unnest(${evidence.map((e) => e.jobId)}::text[], ${evidence.map((e) => e.attempt)}::int[],
                  ${evidence.map((e) => e.runId)}::text[]) AS e(job_id, attempt, run_id)`;
  return evidence;
}

/**
 * The upstream attempts that authorised each run's publish claim (empty for an ungated or unclaimed run), in
 * the order of runIds: one statement for a page of runs.
 */
export async function listPublishClaimEvidence(tx: Tx, runIds: readonly string[]): Promise<PublishClaimEvidence[][]> {
  const rows = await tx.$queryRaw<Array<Omit<PublishClaimEvidence, 'businessDate'> & { claimingRunId: string; businessDate: Date }>>`
    SELECT run_id AS "claimingRunId", job_id AS "jobId", attempt, upstream_run_id AS "runId", consumer,
           business_date AS "businessDate", publish_token AS "publishToken", recorded_at AS "recordedAt"
      FROM nifi_ops.gate_publish_claim_evidence
     WHERE run_id = ANY(${runIds}::uuid[])
     ORDER BY run_id, job_id`;
  const byRun = new Map<string, PublishClaimEvidence[]>(runIds.map((id) => [id, []]));
  for (const { claimingRunId, businessDate, ...evidence } of rows) {
    byRun.get(claimingRunId)?.push({ ...evidence, businessDate: dateOfColumn(businessDate) });
  }
  return runIds.map((id) => byRun.get(id)!);
}
