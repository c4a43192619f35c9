import type pg from 'pg';

export const DISPATCH_CHANNEL = 'load_dispatch';

/**
 * Wakes listening dispatchers after an outbox row was committed. Sent after the commit, outside the
 * deciding transaction (NOTIFY serialises commits); a lost hint only delays delivery to the next poll.
 */
export async function wakeDispatcher(sql: pg.Pool, runId: string): Promise<void> {
  await sql.query('SELECT pg_notify($1, $2)', [DISPATCH_CHANNEL, runId]).catch(() => undefined);
}
