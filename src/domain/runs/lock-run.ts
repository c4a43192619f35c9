import { channel } from 'node:diagnostics_channel';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { parseRunStatus, type RunStatus } from '../states.js';

export interface LockedRun {
  runId: string;
  jobKey: string;
  businessKey: string;
  status: RunStatus;
  parameters: Record<string, unknown>;
  hdfsRunPath: string | null;
  sourceCount: bigint | null;
  publishToken: string | null;
}

/**
 * How long each lockRun waited for the row (the statement's time, the lock wait being most of it when runs are
 * contended), published for lc_run_lock_wait_seconds: the domain knows nothing of metrics, the process's
 * metrics subscribe (src/server/metrics.ts).
 */
export const runLockWaits = channel('load-control:run-lock-wait');

/** Locks the run row for a transition (taken after any partition rows: see the lock order). */
export async function lockRun(tx: Tx, runId: string): Promise<LockedRun> {
  const started = performance.now();
  const rows = await tx.$queryRaw<
    Array<{
      job_key: string;
      business_key: string;
      status: string;
      parameters: Record<string, unknown>;
      hdfs_run_path: string | null;
      source_count: bigint | null;
      publish_token: string | null;
    }>
  >`
    SELECT job_key, business_key, status, parameters, hdfs_run_path, source_count, publish_token::text
      FROM nifi_ops.load_run WHERE run_id = ${runId}::uuid FOR UPDATE`;
  if (runLockWaits.hasSubscribers) runLockWaits.publish({ seconds: (performance.now() - started) / 1000 });
  const row = rows[0];
  if (!row) throw new DomainError('RUN_NOT_FOUND', { runId });
  return {
    runId,
    jobKey: row.job_key,
    businessKey: row.business_key,
    status: parseRunStatus(row.status),
    parameters: row.parameters,
    hdfsRunPath: row.hdfs_run_path,
    sourceCount: row.source_count,
    publishToken: row.publish_token,
  };
}
