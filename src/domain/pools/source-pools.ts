// Reading the source pools (README "Source pools") with their use: what the API's sourcePools query, the console's
// panel and the lc_pool_* gauges show. claim_partition counts the same way (prisma/functions/02_claim_partition.sql).
import type pg from 'pg';
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';

export interface SourcePool {
  name: string;
  maxRunning: number;
  retryAfterSeconds: number;
  /** Partitions of the pool's jobs RUNNING now. */
  running: number;
  /** The jobs assigned to it, in key order. */
  jobs: string[];
  updatedAt: Date;
  updatedBy: string;
}

const POOLS_WITH_USE = `
  SELECT sp.pool_name AS "name", sp.max_running AS "maxRunning", sp.retry_after_seconds AS "retryAfterSeconds",
         (SELECT count(*)::int FROM nifi_ops.load_partition p
            JOIN nifi_ops.load_run r ON r.run_id = p.run_id
            JOIN nifi_ops.source_pool_job j ON j.job_key = r.job_key
           WHERE p.status = 'RUNNING' AND j.pool_name = sp.pool_name) AS "running",
         ARRAY(SELECT j.job_key::text FROM nifi_ops.source_pool_job j WHERE j.pool_name = sp.pool_name ORDER BY j.job_key) AS "jobs",
         sp.updated_at AS "updatedAt", sp.updated_by AS "updatedBy"
    FROM nifi_ops.source_pool sp`;

export function listSourcePools(tx: Tx): Promise<SourcePool[]> {
  return tx.$queryRaw<SourcePool[]>`${Prisma.raw(POOLS_WITH_USE)} ORDER BY sp.pool_name`;
}

export async function sourcePool(tx: Tx, name: string): Promise<SourcePool | null> {
  const rows = await tx.$queryRaw<SourcePool[]>`${Prisma.raw(POOLS_WITH_USE)} WHERE sp.pool_name = ${name}`;
  return rows[0] ?? null;
}

/** For the gauges, which read on the worker's pool. */
export async function countPoolUse(sql: pg.Pool): Promise<Array<Pick<SourcePool, 'name' | 'maxRunning' | 'running'>>> {
  const { rows } = await sql.query<SourcePool>(`${POOLS_WITH_USE} ORDER BY sp.pool_name`);
  return rows.map(({ name, maxRunning, running }) => ({ name, maxRunning, running }));
}
