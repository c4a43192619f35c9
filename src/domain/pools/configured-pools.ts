import type { Config } from '../../config/config.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { assignJobToPool } from './assign-job-to-pool.js';
import { definePool } from './define-pool.js';

/** The actor of the changes the configuration makes, in the event log. */
export const CONFIG_ACTOR = 'config:sources.pools';

/**
 * The configuration's `sources.pools`, applied when a `serve` or `start` process starts: each pool defined with its
 * limit and its jobs assigned to it. Only what differs is written (and audited), so a restart with the same file
 * changes nothing; an operator's later change through the API holds until a process starts with a file that says
 * otherwise. Jobs and pools the file does not name are left as they are.
 */
async function applyConfiguredPools(tx: Tx, pools: Config['sources']['pools']): Promise<{ changed: number }> {
  let changed = 0;
  const reason = 'configuration sources.pools';
  for (const pool of pools) {
    const defined = await definePool(tx, {
      name: pool.name,
      maxRunning: pool.maxRunning,
      retryAfterSeconds: pool.retryAfterSeconds,
      reason,
      actor: CONFIG_ACTOR,
    });
    if (defined.changed) changed++;
    for (const jobKey of pool.jobs) {
      if ((await assignJobToPool(tx, { jobKey, pool: pool.name, reason, actor: CONFIG_ACTOR })).changed) changed++;
    }
  }
  return { changed };
}

export const applyConfiguredPoolsOperation = inOneTransaction(applyConfiguredPools);
