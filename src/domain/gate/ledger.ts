// One ledger of upstream attempts: external observations and Load Control's own runs, read together in one
// statement (nifi_ops.gate_attempts and nifi_ops.gate_readiness, prisma/functions/05_gate_readiness.sql — the
// readiness triggers decide with the same statements). A run is an attempt of its job for the business date its
// business key names (when the key is a calendar date YYYY-MM-DD); attempt n is the job's n-th run for that key in
// start order.
import type { Tx } from '../../db/client.js';
import type { DeadlineOutcome, ExpectedBy } from './expected-by.js';
import type { BlockingReason, ObservationState } from './observation-states.js';

/** EXTERNAL: reported with recordObservation. LOAD_CONTROL: a Load Control run. */
export const ATTEMPT_SOURCES = ['EXTERNAL', 'LOAD_CONTROL'] as const;
export type AttemptSource = (typeof ATTEMPT_SOURCES)[number];

export interface LedgerAttempt {
  jobId: string;
  attempt: number;
  runId: string;
  state: ObservationState;
  source: AttemptSource;
  startedAt: Date;
}

export interface JobReadiness {
  jobId: string;
  /** The greatest attempt recorded for the date, if any: it alone decides (a newer attempt hides an older success). */
  latest: LedgerAttempt | null;
  /** Null when the latest attempt succeeded. */
  reason: BlockingReason | null;
  /** The job's expected-by deadline, if the gate has one for it, and the instant it falls on for this date. */
  expectedBy: ExpectedBy | null;
  deadline: Date | null;
  /** What the sweeper found when the first deadline for this job and date passed; null before (or without one). */
  deadlineOutcome: DeadlineOutcome | null;
}

export interface Readiness {
  consumer: string;
  businessDate: string;
  gateDefined: boolean;
  ready: boolean;
  jobs: JobReadiness[];
}

/** The upstream attempts that authorise an output: job, attempt and run id of each required job. */
export interface Evidence {
  jobId: string;
  attempt: number;
  runId: string;
}

interface AttemptRow {
  job_id: string;
  attempt: number | null;
  run_id: string | null;
  state: ObservationState | null;
  source: AttemptSource | null;
  started_at: Date | null;
}

interface JobRow extends AttemptRow {
  expected_days_after: number | null;
  expected_time: string | null;
  expected_time_zone: string | null;
  deadline: Date | null;
  deadline_outcome: DeadlineOutcome | null;
}

function toAttempt(row: AttemptRow): LedgerAttempt | null {
  if (row.attempt === null) return null;
  return {
    jobId: row.job_id,
    attempt: row.attempt,
    runId: row.run_id!,
    state: row.state!,
    source: row.source!,
    startedAt: row.started_at!,
  };
}

/** All attempts of one job for one business date, oldest attempt first. */
export async function listAttempts(tx: Tx, jobId: string, businessDate: string): Promise<LedgerAttempt[]> {
  const rows = await tx.$queryRaw<AttemptRow[]>`
    SELECT * FROM nifi_ops.gate_attempts(ARRAY[${jobId}::text], ${businessDate}::date) ORDER BY attempt, source`;
  return rows.map((row) => toAttempt(row)!);
}

/** How many attempts of one job for one date listAttemptsOf gives (the newest): bounded work per evidence. */
export const MAX_ATTEMPTS_PER_KEY = 20;

/**
 * The attempts of each (job, business date), oldest first — at most the newest MAX_ATTEMPTS_PER_KEY — in the
 * order of keys: one statement for every evidence of a page of publications.
 */
export async function listAttemptsOf(tx: Tx, keys: ReadonlyArray<{ jobId: string; businessDate: string }>): Promise<LedgerAttempt[][]> {
  const rows = await tx.$queryRaw<Array<AttemptRow & { ordinal: bigint }>>`
    SELECT k.ordinal, a.*
      FROM unnest(${keys.map((k) => k.jobId)}::text[], ${keys.map((k) => k.businessDate)}::date[])
           WITH ORDINALITY AS k(job_id, business_date, ordinal)
      CROSS JOIN LATERAL (
        SELECT * FROM nifi_ops.gate_attempts(ARRAY[k.job_id], k.business_date) g
         ORDER BY g.attempt DESC, g.source LIMIT ${MAX_ATTEMPTS_PER_KEY}) a
     ORDER BY k.ordinal, a.attempt, a.source`;
  const byKey: LedgerAttempt[][] = keys.map(() => []);
  for (const row of rows) byKey[Number(row.ordinal) - 1]!.push(toAttempt(row)!);
  return byKey;
}

/**
 * Readiness of a consumer's gate for one business date, in one statement: exactly the required jobs, each
 * decided by its greatest attempt, with its expected-by deadline for the date. A consumer without a gate is not
 * ready.
 */
export async function readiness(tx: Tx, consumer: string, businessDate: string): Promise<Readiness> {
  const rows = await tx.$queryRaw<JobRow[]>`
    SELECT r.*, q.expected_days_after, to_char(q.expected_time, 'HH24:MI') AS expected_time, q.expected_time_zone,
           nifi_ops.observation_deadline(${businessDate}::date, q.expected_days_after, q.expected_time, q.expected_time_zone)
             AS deadline,
           c.outcome AS deadline_outcome
      FROM nifi_ops.gate_readiness(${consumer}, ${businessDate}::date) r
      JOIN nifi_ops.gate_required_job q ON q.consumer = ${consumer} AND q.job_id = r.job_id
      LEFT JOIN nifi_ops.gate_deadline_check c ON c.job_id = r.job_id AND c.business_date = ${businessDate}::date
     ORDER BY r.job_id`;
  const jobs = rows.map((row): JobReadiness => {
    const latest = toAttempt(row);
    const reason = latest === null ? 'MISSING' : latest.state === 'SUCCEEDED' ? null : latest.state;
    const expectedBy =
      row.expected_days_after === null
        ? null
        : { daysAfter: row.expected_days_after, time: row.expected_time!, timeZone: row.expected_time_zone! };
    return { jobId: row.job_id, latest, reason, expectedBy, deadline: row.deadline, deadlineOutcome: row.deadline_outcome };
  });
  // a gate always requires at least one job (defineGate), so no rows means no gate
  const gateDefined = jobs.length > 0;
  return { consumer, businessDate, gateDefined, ready: gateDefined && jobs.every((j) => j.reason === null), jobs };
}

/** The evidence a ready gate gives: each required job's latest (successful) attempt. */
export function evidenceOf(ready: Readiness): Evidence[] {
  return ready.jobs.map((job) => ({ jobId: job.jobId, attempt: job.latest!.attempt, runId: job.latest!.runId }));
}

/** The DEPENDENCIES_NOT_READY details: the gate, the date and why each blocking job blocks. */
export function notReadyDetails(notReady: Readiness): Record<string, unknown> {
  return {
    consumer: notReady.consumer,
    businessDate: notReady.businessDate,
    gateDefined: notReady.gateDefined,
    blocking: notReady.jobs
      .filter((job) => job.reason !== null)
      .map((job) => ({ jobId: job.jobId, reason: job.reason, attempt: job.latest?.attempt ?? null, runId: job.latest?.runId ?? null })),
  };
}

export function notReadyMessage(notReady: Readiness): string {
  if (!notReady.gateDefined) return `no gate is defined for ${notReady.consumer}`;
  const blocking = notReady.jobs.filter((job) => job.reason !== null).map((job) => `${job.jobId} ${job.reason}`);
  return `${notReady.consumer} is not ready for ${notReady.businessDate}: ${blocking.join(', ')}`;
}
