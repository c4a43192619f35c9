// Pausing a job (issue 28, point 3): while a job is paused createRun refuses its new runs with JOB_PAUSED (NiFi's kit
// waits and asks again), its backfills start no date, and the loads already running finish. The pause lives on the
// job's row of nifi_ops.load_job, created on demand: a job is otherwise known only by its runs.
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { inOneTransaction } from '../../db/operation.js';
import { recordNifiEvent } from '../events/events.js';

export interface JobPause {
  jobKey: string;
  paused: boolean;
  pausedAt: Date | null;
  pausedBy: string | null;
  pauseReason: string | null;
}

interface JobRow {
  job_key: string;
  paused_at: Date | null;
  paused_by: string | null;
  pause_reason: string | null;
}

const toJobPause = (row: JobRow): JobPause => ({
  jobKey: row.job_key,
  paused: row.paused_at !== null,
  pausedAt: row.paused_at,
  pausedBy: row.paused_by,
  pauseReason: row.pause_reason,
});

const notPaused = (jobKey: string): JobPause => ({ jobKey, paused: false, pausedAt: null, pausedBy: null, pauseReason: null });

/**
 * The job's row, created if missing, locked FOR SHARE (`share`) or FOR UPDATE. A createRun holds it shared until it
 * commits, so a pause (FOR UPDATE) waits for the runs being created and every createRun after it sees the pause.
 */
export async function lockJob(tx: Tx, jobKey: string, mode: 'share' | 'update'): Promise<JobPause> {
  await tx.$executeRaw`INSERT INTO nifi_ops.load_job (job_key) VALUES (${jobKey}) ON CONFLICT (job_key) DO NOTHING`;
  const rows =
    mode === 'share'
      ? await tx.$queryRaw<JobRow[]>`
          SELECT job_key, paused_at, paused_by, pause_reason FROM nifi_ops.load_job WHERE job_key = ${jobKey} FOR SHARE`
      : await tx.$queryRaw<JobRow[]>`
          SELECT job_key, paused_at, paused_by, pause_reason FROM nifi_ops.load_job WHERE job_key = ${jobKey} FOR UPDATE`;
  return toJobPause(rows[0]!);
}

function jobPausedError(job: JobPause): DomainError {
  return new DomainError(
    'JOB_PAUSED',
    { jobKey: job.jobKey, pausedAt: job.pausedAt?.toISOString(), pausedBy: job.pausedBy, reason: job.pauseReason },
    `${job.jobKey} is paused since ${job.pausedAt?.toISOString()} by ${job.pausedBy}: ${job.pauseReason}`,
  );
}

/** createRun's check, after its own answers to replays and duplicates: a paused job starts no new run. */
export async function assertJobNotPaused(tx: Tx, jobKey: string): Promise<void> {
  const job = await lockJob(tx, jobKey, 'share');
  if (job.paused) throw jobPausedError(job);
}

export async function jobPause(tx: Tx, jobKey: string): Promise<JobPause> {
  const [row] = await tx.$queryRaw<JobRow[]>`
    SELECT job_key, paused_at, paused_by, pause_reason FROM nifi_ops.load_job WHERE job_key = ${jobKey}`;
  return row ? toJobPause(row) : notPaused(jobKey);
}

export async function pausedJobs(tx: Tx): Promise<JobPause[]> {
  const rows = await tx.$queryRaw<JobRow[]>`
    SELECT job_key, paused_at, paused_by, pause_reason FROM nifi_ops.load_job
     WHERE paused_at IS NOT NULL ORDER BY paused_at, job_key`;
  return rows.map(toJobPause);
}

export interface JobPauseCommand {
  jobKey: string;
  reason: string;
  actor: string;
}

export interface JobPauseResult {
  job: JobPause;
  changed: boolean;
}

async function pauseJob(tx: Tx, cmd: JobPauseCommand): Promise<JobPauseResult> {
  const job = await lockJob(tx, cmd.jobKey, 'update');
  if (job.paused) return { job, changed: false };
  const [row] = await tx.$queryRaw<JobRow[]>`
    UPDATE nifi_ops.load_job SET paused_at = clock_timestamp(), paused_by = ${cmd.actor}, pause_reason = ${cmd.reason}
     WHERE job_key = ${cmd.jobKey}
    RETURNING job_key, paused_at, paused_by, pause_reason`;
  await recordJobEvent(tx, 'JOB_PAUSED', cmd);
  return { job: toJobPause(row!), changed: true };
}

async function resumeJob(tx: Tx, cmd: JobPauseCommand): Promise<JobPauseResult> {
  const job = await lockJob(tx, cmd.jobKey, 'update');
  if (!job.paused) return { job, changed: false };
  await tx.$executeRaw`
    UPDATE nifi_ops.load_job SET paused_at = NULL, paused_by = NULL, pause_reason = NULL WHERE job_key = ${cmd.jobKey}`;
  await recordJobEvent(tx, 'JOB_RESUMED', cmd, { pausedAt: job.pausedAt, pausedBy: job.pausedBy, pauseReason: job.pauseReason });
  return { job: notPaused(cmd.jobKey), changed: true };
}

async function recordJobEvent(tx: Tx, name: string, cmd: JobPauseCommand, details: Record<string, unknown> = {}): Promise<void> {
  await recordNifiEvent(tx, {
    level: 'WARN',
    name,
    runId: null,
    jobKey: cmd.jobKey,
    processGroup: 'LOAD_CONTROL_API',
    message: cmd.reason,
    details: { reason: cmd.reason, ...details },
    actor: cmd.actor,
  });
}

export const pauseJobOperation = inOneTransaction(pauseJob);
export const resumeJobOperation = inOneTransaction(resumeJob);
