import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { parseRunStatus, type RunStatus } from '../states.js';
import { cleanupDue, type Retention } from './retention.js';
import { inOneTransaction } from '../../db/operation.js';

export interface RecordCleanupCommand {
  runId: string;
  droppedTable: string | null;
  deletedPath: string | null;
  retention: Retention;
  actor: string;
}

export interface RecordCleanupResult {
  runStatus: RunStatus;
  changed: boolean;
}

/**
 * recordCleanup (ref §3.18): NiFi (or an operator) dropped the staging table and deleted the run path; the
 * API only records it, once. Reporting a run that is not due is a 409: nothing may be deleted for it.
 */
async function recordCleanup(tx: Tx, cmd: RecordCleanupCommand): Promise<RecordCleanupResult> {
  const [run] = await tx.$queryRaw<Array<{ status: string; cleaned: boolean; due: boolean }>>`
    SELECT r.status, r.cleaned_at IS NOT NULL AS cleaned, ${cleanupDue(cmd.retention)} AS due
      FROM nifi_ops.load_run r WHERE r.run_id = ${cmd.runId}::uuid FOR UPDATE`;
  if (!run) throw new DomainError('RUN_NOT_FOUND', { runId: cmd.runId });
  const runStatus = parseRunStatus(run.status);
  if (run.cleaned) return { runStatus, changed: false };
  if (!run.due) throw new DomainError('CLEANUP_NOT_DUE', { runStatus });

  await tx.$executeRaw`
    UPDATE nifi_ops.load_run SET cleaned_at = clock_timestamp() WHERE run_id = ${cmd.runId}::uuid AND cleaned_at IS NULL`;
  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'RUN_CLEANED',
    runId: cmd.runId,
    actor: cmd.actor,
    details: { droppedTable: cmd.droppedTable, deletedPath: cmd.deletedPath },
  });
  return { runStatus, changed: true };
}

export const recordCleanupOperation = inOneTransaction(recordCleanup);
