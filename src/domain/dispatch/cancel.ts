import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { UNDELIVERED_DISPATCH_STATUSES } from '../states.js';
import { transitionDispatch } from '../transitions.js';

/**
 * A run that ended no longer wants its undelivered calls: PENDING/SENT → CANCELLED (deviation 6).
 * Dispatch rows come last in the lock order; the caller holds the run's partition and run rows.
 */
export async function cancelUndeliveredDispatches(tx: Tx, runId: string, reason: string): Promise<string[]> {
  const rows = await transitionDispatch(
    tx,
    { runId },
    {
      from: UNDELIVERED_DISPATCH_STATUSES,
      to: 'CANCELLED',
      set: Prisma.sql`last_error = left(${reason}, 2000)`,
    },
  );
  return rows.map((r) => r.dispatch_id);
}
