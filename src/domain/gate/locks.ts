// Transaction-scoped advisory locks of the gate, in their own class so no other advisory lock collides.
import type { Tx } from '../../db/client.js';

const GATE_LOCK_CLASS = 0x47415445; // 'GATE'
const DEFINITIONS_KEY = 0;

/** Serialises gate definitions: a definition may move a job's binding from another gate. */
export async function lockGateDefinitions(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${GATE_LOCK_CLASS}::int, ${DEFINITIONS_KEY}::int)`;
}

/**
 * Serialises publishers of one consumer and business date, whether or not a publication exists yet (a row
 * lock would need the row). A hash collision only makes two keys wait for each other.
 */
export async function lockPublication(tx: Tx, consumer: string, businessDate: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${GATE_LOCK_CLASS}::int, hashtext(${consumer} || '|' || ${businessDate}))`;
}
