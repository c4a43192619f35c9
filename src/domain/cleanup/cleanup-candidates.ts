import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { parseRunStatus, type RunStatus } from '../states.js';
import { cleanupDue, type Retention } from './retention.js';

export interface CleanupCandidatesQuery {
  jobKey: string | null;
  limit: number;
  retention: Retention;
  /** config.cleanup.maxBatch caps every candidate list. */
  maxBatch: number;
}

export interface CleanupCandidate {
  runId: string;
  jobKey: string;
  businessKey: string;
  status: RunStatus;
  hdfsRunPath: string | null;
  stageTable: string | null;
  completedAt: Date;
}

/** cleanupCandidates (ref §3.17): ended runs past retention whose staging table and files may go, oldest first. */
export async function cleanupCandidates(tx: Tx, query: CleanupCandidatesQuery): Promise<CleanupCandidate[]> {
  const limit = Math.min(query.limit, query.maxBatch);
  const job = query.jobKey === null ? Prisma.empty : Prisma.sql`AND r.job_key = ${query.jobKey}`;
  const candidates = await tx.$queryRaw<Array<Omit<CleanupCandidate, 'status'> & { status: string }>>`
    SELECT r.run_id::text AS "runId", r.job_key AS "jobKey", r.business_key AS "businessKey", r.status,
           r.hdfs_run_path AS "hdfsRunPath", r.stage_table_name AS "stageTable",
           COALESCE(r.completed_at, r.heartbeat_at) AS "completedAt"
      FROM nifi_ops.load_run r
     WHERE ${cleanupDue(query.retention)} ${job}
     ORDER BY COALESCE(r.completed_at, r.heartbeat_at), r.run_id
     LIMIT ${limit}`;
  return candidates.map((c) => ({ ...c, status: parseRunStatus(c.status) }));
}
