// The Jobs page: every Load Control job (a job key with runs) with its recent runs, last success and gate.
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { literalLike, runsById, type RunRecord } from '../runs/queries.js';
import { TERMINAL_RUN_STATUSES } from '../states.js';

export interface JobSummary {
  jobKey: string;
  /** The job's latest `recent` runs, newest first (at least one: a job is a job key with runs). */
  recentRuns: RunRecord[];
  lastSuccess: RunRecord | null;
  /** The gate whose bound job this is (defineGate's boundJobKey), if any. */
  gatedBy: string | null;
}

export interface JobPage {
  jobs: JobSummary[];
  hasNextPage: boolean;
}

const JOB_CURSOR_PREFIX = 'job:';

export function encodeJobCursor(jobKey: string): string {
  return Buffer.from(`${JOB_CURSOR_PREFIX}${jobKey}`).toString('base64url');
}

/** The job key a cursor names, or null when the text is no cursor this API gave out. */
export function decodeJobCursor(cursor: string): string | null {
  const text = Buffer.from(cursor, 'base64url').toString();
  if (Buffer.from(text).toString('base64url') !== cursor || !text.startsWith(JOB_CURSOR_PREFIX)) return null;
  const jobKey = text.slice(JOB_CURSOR_PREFIX.length);
  return jobKey.length > 0 && jobKey.length <= 200 && !jobKey.includes('\0') ? jobKey : null;
}

/**
 * A page of jobs in job key order, after the cursor's job. The job keys come from a skip scan of
 * ix_load_run_job_started (one index probe per job, whatever the number of runs); each job's recent runs and
 * last success are a range scan of the same index that stops after its rows.
 */
export async function jobPage(
  tx: Tx,
  filter: { jobKeyContains: string | null },
  first: number,
  recent: number,
  afterJobKey: string | null,
): Promise<JobPage> {
  const keys = await tx.$queryRaw<Array<{ job_key: string }>>`
    WITH RECURSIVE job AS (
      (SELECT job_key FROM nifi_ops.load_run WHERE job_key > ${afterJobKey ?? ''} ORDER BY job_key LIMIT 1)
      UNION ALL
      SELECT (SELECT r.job_key FROM nifi_ops.load_run r WHERE r.job_key > job.job_key ORDER BY r.job_key LIMIT 1)
        FROM job WHERE job.job_key IS NOT NULL
    )
    SELECT job_key FROM job
     WHERE job_key IS NOT NULL
       ${filter.jobKeyContains ? Prisma.sql`AND job_key ILIKE ${literalLike(filter.jobKeyContains)}` : Prisma.empty}
     LIMIT ${first + 1}`;
  const jobKeys = keys.slice(0, first).map((row) => row.job_key);
  if (jobKeys.length === 0) return { jobs: [], hasNextPage: false };
  const picked = await tx.$queryRaw<Array<{ job_key: string; recent: string[]; last_success: string | null; gated_by: string | null }>>`
    SELECT j.job_key,
           ARRAY(SELECT r.run_id::text FROM nifi_ops.load_run r WHERE r.job_key = j.job_key
                  ORDER BY r.started_at DESC, r.run_id DESC LIMIT ${recent}) AS recent,
           (SELECT r.run_id::text FROM nifi_ops.load_run r WHERE r.job_key = j.job_key AND r.status = 'SUCCESS'
             ORDER BY r.started_at DESC LIMIT 1) AS last_success,
           (SELECT g.consumer FROM nifi_ops.gate g WHERE g.bound_job_key = j.job_key) AS gated_by
      FROM unnest(${jobKeys}::text[]) AS j(job_key)`;
  const runs = new Map(
    (
      await runsById(
        tx,
        picked.flatMap((p) => [...p.recent, ...(p.last_success ? [p.last_success] : [])]),
      )
    ).map((r) => [r.runId, r]),
  );
  const byJob = new Map(picked.map((p) => [p.job_key, p]));
  return {
    jobs: jobKeys.map((jobKey) => {
      const p = byJob.get(jobKey)!;
      return {
        jobKey,
        recentRuns: p.recent.flatMap((id) => (runs.has(id) ? [runs.get(id)!] : [])),
        lastSuccess: p.last_success ? (runs.get(p.last_success) ?? null) : null,
        gatedBy: p.gated_by,
      };
    }),
    hasNextPage: keys.length > first,
  };
}

/** SUCCESS among the runs that ended (active runs do not count), or null when none ended. */
export function successRate(runs: readonly RunRecord[]): number | null {
  const ended = runs.filter((run) => TERMINAL_RUN_STATUSES.includes(run.status));
  return ended.length ? ended.filter((run) => run.status === 'SUCCESS').length / ended.length : null;
}
