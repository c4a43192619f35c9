// The gate's transaction-scoped advisory locks. Their keys live in SQL (prisma/functions/05_gate_readiness.sql),
// where the readiness triggers take them too.
import type { Tx } from '../../db/client.js';

/**
 * Serialises gate definitions (a definition may move a job's binding from another gate), and waits for the
 * readiness decisions in flight, which read the definitions under the shared form of this lock: a gate defined
 * while an attempt commits is decided by one of the two.
 */
export async function lockGateDefinitions(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT nifi_ops.lock_gate_definitions(true)`;
}

/**
 * Serialises publishers of one consumer and business date, whether or not a publication exists yet (a row
 * lock would need the row).
 */
export async function lockPublication(tx: Tx, consumer: string, businessDate: string): Promise<void> {
  await tx.$executeRaw`SELECT nifi_ops.lock_gate_publication(${consumer}, ${businessDate}::date)`;
}
