import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { RUN_WAITING_DISPATCH_TYPES, UNDELIVERED_DISPATCH_STATUSES } from '../states.js';
import { transitionDispatch } from '../transitions.js';

/**
 * A run that ended no longer wants its undelivered calls: PENDING/SENT → CANCELLED (deviation 6) — those that wait
 * for a status of it; its lineage events report the end and go on. Dispatch rows come last in the lock order; the
 * caller holds the run's partition and run rows. With a reason, it is each call's last error.
 */
export async function cancelUndeliveredDispatches(tx: Tx, runId: string, reason: string | null): Promise<string[]> {
  const rows = await transitionDispatch(
    tx,
    {
      picked: Prisma.sql`SELECT d.dispatch_id FROM nifi_ops.load_dispatch d
                          WHERE d.run_id = ${runId}::uuid AND d.dispatch_type = ANY(${RUN_WAITING_DISPATCH_TYPES}::text[])`,
    },
    {
      from: UNDELIVERED_DISPATCH_STATUSES,
      to: 'CANCELLED',
      ...(reason === null ? {} : { set: Prisma.sql`last_error = left(${reason}, 2000)` }),
    },
  );
  return rows.map((r) => r.dispatch_id);
}
