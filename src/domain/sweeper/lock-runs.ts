import type { Tx } from '../../db/client.js';
import { parseRunStatus, UNFINISHED_PARTITION_STATUSES, type RunStatus } from '../states.js';

export interface SweepableRun {
  runId: string;
  status: RunStatus;
}

/**
 * Locks, in our lock order, every unfinished partition of the candidate runs (ascending ids) and then
 * the run rows still in one of `statuses`, skipping rows other transactions hold. A run is returned
 * only if all its unfinished partitions were locked too; the others are busy and wait for the next cycle.
 */
export async function lockRunsWithPartitions(tx: Tx, runIds: string[], statuses: readonly RunStatus[]): Promise<SweepableRun[]> {
  if (runIds.length === 0) return [];
  const partitions = await tx.$queryRaw<Array<{ run_id: string }>>`
    SELECT run_id::text FROM nifi_ops.load_partition
     WHERE run_id = ANY(${runIds}::uuid[]) AND status = ANY(${UNFINISHED_PARTITION_STATUSES}::text[])
     ORDER BY run_id, partition_id
       FOR UPDATE SKIP LOCKED`;
  const runs = await tx.$queryRaw<Array<{ run_id: string; status: string }>>`
    SELECT run_id::text, status FROM nifi_ops.load_run
     WHERE run_id = ANY(${runIds}::uuid[]) AND status = ANY(${statuses}::text[])
     ORDER BY run_id
       FOR UPDATE SKIP LOCKED`;
  if (runs.length === 0) return [];
  const unfinished = await tx.$queryRaw<Array<{ run_id: string; n: number }>>`
    SELECT run_id::text, count(*)::int AS n FROM nifi_ops.load_partition
     WHERE run_id = ANY(${runs.map((r) => r.run_id)}::uuid[]) AND status = ANY(${UNFINISHED_PARTITION_STATUSES}::text[])
     GROUP BY run_id`;
  const locked = new Map<string, number>();
  for (const p of partitions) locked.set(p.run_id, (locked.get(p.run_id) ?? 0) + 1);
  const total = new Map(unfinished.map((u) => [u.run_id, u.n]));
  return runs
    .filter((r) => (locked.get(r.run_id) ?? 0) === (total.get(r.run_id) ?? 0))
    .map((r) => ({ runId: r.run_id, status: parseRunStatus(r.status) }));
}
