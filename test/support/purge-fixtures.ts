// What the purge's tests share, in the domain tier and the api tier: the retention they purge by, and ageing a
// run past it.
import type { Db } from '../../src/db/client.js';
import {
  PURGED_TABLES,
  noRows,
  purgeLedger,
  type PurgeBatch,
  type PurgeOptions,
  type RowCounts,
} from '../../src/domain/retention/purge.js';
import type { TestApi } from './api.js';

export const DAY = 86_400_000;
const RETENTION = 90 * DAY;

export const cutoff = () => new Date(Date.now() - RETENTION);

/** One purge of everything that ended before the retention, in batches of 1,000 rows unless told otherwise. */
export const purgeOnce = (
  db: Db,
  options: { batchRows?: number; budgetMs?: number; afterBatch?: (b: PurgeBatch) => void; archive?: PurgeOptions['archive'] } = {},
) => purgeLedger(db, { before: cutoff(), batchRows: 1000, ...options });

/** Moves a run's start, last heartbeat and end (if it ended) `days` into the past. */
export async function endedDaysAgo(world: Pick<TestApi, 'sql'>, runId: string, days: number): Promise<void> {
  await world.sql.query(
    `UPDATE nifi_ops.load_run SET completed_at = completed_at - $2 * interval '1 day',
            heartbeat_at = heartbeat_at - $2 * interval '1 day', started_at = started_at - $2 * interval '1 day'
      WHERE run_id = $1`,
    [runId, days],
  );
}

/** How many rows of each purged table the run has. */
export async function detailRows(world: Pick<TestApi, 'sql'>, runId: string): Promise<RowCounts> {
  const counts = noRows();
  for (const table of PURGED_TABLES) {
    const { rows } = await world.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.${table} WHERE run_id = $1`, [runId]);
    counts[table] = rows[0].n;
  }
  return counts;
}
