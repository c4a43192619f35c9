import type { Tx } from '../../db/client.js';
import { UNDELIVERED_DISPATCH_STATUSES } from '../states.js';

/**
 * A run that ended no longer wants its undelivered calls: PENDING/SENT → CANCELLED (deviation 6).
 * Dispatch rows come last in the lock order; the caller holds the run's partition and run rows.
 */
export async function cancelUndeliveredDispatches(tx: Tx, runId: string, reason: string): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ dispatch_id: string }>>`
    UPDATE nifi_ops.load_dispatch
       SET status = 'CANCELLED', cancelled_at = clock_timestamp(), last_error = left(${reason}, 2000)
     WHERE run_id = ${runId}::uuid AND status = ANY(${UNDELIVERED_DISPATCH_STATUSES}::text[])
    RETURNING dispatch_id::text`;
  return rows.map((r) => r.dispatch_id);
}
