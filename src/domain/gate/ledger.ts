// One ledger of upstream attempts: external observations and Load Control's own runs, read together in one
// statement. A run is an attempt of its job for the business date its business key names (when the key is
// a calendar date YYYY-MM-DD); attempt n is the job's n-th run for that key in start order.
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { FAILED_RUN_STATUSES } from '../states.js';
import { SUCCEEDED_RUN_STATUSES, type BlockingReason, type ObservationState } from './observation-states.js';

/** EXTERNAL: reported with recordObservation. LOAD_CONTROL: a Load Control run. */
export const ATTEMPT_SOURCES = ['EXTERNAL', 'LOAD_CONTROL'] as const;
type AttemptSource = (typeof ATTEMPT_SOURCES)[number];

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

/** Every attempt of the jobs `jobIds` (a query returning job ids) for one business date, from both sources. */
function attemptsOf(jobIds: Prisma.Sql, businessDate: string): Prisma.Sql {
  return Prisma.sql`
    SELECT o.job_id, o.attempt, o.run_id, o.state, 'EXTERNAL' AS source, o.started_at
      FROM nifi_ops.gate_observation o
     WHERE o.job_id IN (${jobIds}) AND o.business_date = ${businessDate}::date
    UNION ALL
    SELECT r.job_key, (row_number() OVER (PARTITION BY r.job_key ORDER BY r.started_at, r.run_id))::int,
           r.run_id::text,
           CASE WHEN r.status = ANY(${SUCCEEDED_RUN_STATUSES}::text[]) THEN 'SUCCEEDED'
                WHEN r.status = ANY(${FAILED_RUN_STATUSES}::text[]) THEN 'FAILED'
                ELSE 'RUNNING' END,
           'LOAD_CONTROL', r.started_at
      FROM nifi_ops.load_run r
     WHERE r.job_key IN (${jobIds}) AND r.business_key = ${businessDate}`;
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
    SELECT * FROM (${attemptsOf(Prisma.sql`SELECT ${jobId}::text`, businessDate)}) a ORDER BY attempt, source`;
  return rows.map((row) => toAttempt(row)!);
}

/**
 * Readiness of a consumer's gate for one business date, in one statement: exactly the required jobs, each
 * decided by its greatest attempt. A consumer without a gate is not ready.
 */
export async function readiness(tx: Tx, consumer: string, businessDate: string): Promise<Readiness> {
  const rows = await tx.$queryRaw<AttemptRow[]>`
    WITH required AS (
        SELECT job_id FROM nifi_ops.gate_required_job WHERE consumer = ${consumer}
    ), latest AS (
        -- the same job id never has attempts from both sources (recordObservation refuses Load Control
        -- jobs); the source only makes the order total
        SELECT DISTINCT ON (job_id) *
          FROM (${attemptsOf(Prisma.sql`SELECT job_id FROM required`, businessDate)}) a
         ORDER BY job_id, attempt DESC, source
    )
    SELECT q.job_id, l.attempt, l.run_id, l.state, l.source, l.started_at
      FROM required q LEFT JOIN latest l USING (job_id)
     ORDER BY q.job_id`;
  const jobs = rows.map((row): JobReadiness => {
    const latest = toAttempt(row);
    const reason = latest === null ? 'MISSING' : latest.state === 'SUCCEEDED' ? null : latest.state;
    return { jobId: row.job_id, latest, reason };
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
