import { DEFAULT_RETRY_AFTER_SECONDS } from '../../config/source-pools.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { recordApiEvent } from '../events/events.js';
import { sourcePool, type SourcePool } from './source-pools.js';

export interface DefinePoolCommand {
  name: string;
  maxRunning: number;
  /** null: keep the pool's (a new pool: DEFAULT_RETRY_AFTER_SECONDS). */
  retryAfterSeconds: number | null;
  reason: string | null;
  actor: string;
}

export interface DefinePoolResult {
  pool: SourcePool;
  changed: boolean;
}

/**
 * definePool: creates a source pool or changes its limit. A lower limit takes no slot from a partition already
 * RUNNING; new claims simply wait until the pool's use is under it. Audited as SOURCE_POOL_DEFINED (no run).
 */
export async function definePool(tx: Tx, cmd: DefinePoolCommand): Promise<DefinePoolResult> {
  const [before] = await tx.$queryRaw<Array<{ maxRunning: number; retryAfterSeconds: number }>>`
    SELECT max_running AS "maxRunning", retry_after_seconds AS "retryAfterSeconds"
      FROM nifi_ops.source_pool WHERE pool_name = ${cmd.name} FOR UPDATE`;
  const retryAfterSeconds = cmd.retryAfterSeconds ?? before?.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
  const changed = !before || before.maxRunning !== cmd.maxRunning || before.retryAfterSeconds !== retryAfterSeconds;
  if (changed) {
    // a concurrent first definition of the same name waits on the primary key, then updates
    await tx.$executeRaw`
      INSERT INTO nifi_ops.source_pool AS sp (pool_name, max_running, retry_after_seconds, updated_by)
      VALUES (${cmd.name}, ${cmd.maxRunning}, ${retryAfterSeconds}, ${cmd.actor})
      ON CONFLICT (pool_name) DO UPDATE
        SET max_running = EXCLUDED.max_running, retry_after_seconds = EXCLUDED.retry_after_seconds,
            updated_at = clock_timestamp(), updated_by = EXCLUDED.updated_by`;
    await recordApiEvent(tx, {
      level: 'INFO',
      name: 'SOURCE_POOL_DEFINED',
      runId: null,
      actor: cmd.actor,
      message: cmd.reason,
      details: {
        pool: cmd.name,
        previous: before ?? null,
        maxRunning: cmd.maxRunning,
        retryAfterSeconds,
        reason: cmd.reason,
      },
    });
  }
  return { pool: (await sourcePool(tx, cmd.name))!, changed };
}

export const definePoolOperation = inOneTransaction(definePool);
