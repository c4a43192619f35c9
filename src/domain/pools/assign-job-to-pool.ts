import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { inOneTransaction } from '../../db/operation.js';
import { recordApiEvent } from '../events/events.js';

export interface AssignJobToPoolCommand {
  jobKey: string;
  /** null: the job leaves its pool and is no longer limited. */
  pool: string | null;
  reason: string | null;
  actor: string;
}

export interface AssignJobToPoolResult {
  jobKey: string;
  pool: string | null;
  previousPool: string | null;
  changed: boolean;
}

/**
 * assignJobToPool: puts a job into a source pool (out of the one it was in) or, with null, out of any. Its RUNNING
 * partitions count towards the new pool from now on; a move never takes a slot from a RUNNING partition. Audited as
 * SOURCE_POOL_JOB_ASSIGNED. Refused with POOL_NOT_FOUND for a pool not defined.
 */
export async function assignJobToPool(tx: Tx, cmd: AssignJobToPoolCommand): Promise<AssignJobToPoolResult> {
  if (cmd.pool !== null) {
    // FOR KEY SHARE: the pool cannot vanish under the assignment, and claims (FOR UPDATE of the pool) are not held up
    const [pool] = await tx.$queryRaw<Array<{ found: number }>>`
      SELECT 1 AS found FROM nifi_ops.source_pool WHERE pool_name = ${cmd.pool} FOR KEY SHARE`;
    if (!pool) throw new DomainError('POOL_NOT_FOUND', { pool: cmd.pool });
  }
  const [before] = await tx.$queryRaw<Array<{ pool: string }>>`
    SELECT pool_name AS pool FROM nifi_ops.source_pool_job WHERE job_key = ${cmd.jobKey} FOR UPDATE`;
  const previousPool = before?.pool ?? null;
  if (previousPool === cmd.pool) return { jobKey: cmd.jobKey, pool: cmd.pool, previousPool, changed: false };

  if (cmd.pool === null) {
    await tx.$executeRaw`DELETE FROM nifi_ops.source_pool_job WHERE job_key = ${cmd.jobKey}`;
  } else {
    await tx.$executeRaw`
      INSERT INTO nifi_ops.source_pool_job (job_key, pool_name, assigned_by) VALUES (${cmd.jobKey}, ${cmd.pool}, ${cmd.actor})
      ON CONFLICT (job_key) DO UPDATE
        SET pool_name = EXCLUDED.pool_name, assigned_at = clock_timestamp(), assigned_by = EXCLUDED.assigned_by`;
  }
  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'SOURCE_POOL_JOB_ASSIGNED',
    runId: null,
    actor: cmd.actor,
    message: cmd.reason,
    details: { jobKey: cmd.jobKey, pool: cmd.pool, previousPool, reason: cmd.reason },
  });
  return { jobKey: cmd.jobKey, pool: cmd.pool, previousPool, changed: true };
}

export const assignJobToPoolOperation = inOneTransaction(assignJobToPool);
