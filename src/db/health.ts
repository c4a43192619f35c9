import type pg from 'pg';

/** /readyz answers within 2 s whatever the database does: the check gives up after this. */
const READINESS_CHECK_MS = 1500;

export type DatabaseHealth = { ok: true } | { ok: false; reason: 'unreachable' | 'read-only' | 'no answer in time' };

/**
 * Whether the database answers and can write. A standby after a failover (or a server set to
 * default_transaction_read_only) answers every query but refuses every write: that is not ready either.
 */
export async function checkDatabase(pool: pg.Pool, withinMs: number = READINESS_CHECK_MS): Promise<DatabaseHealth> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<DatabaseHealth>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: 'no answer in time' }), withinMs);
  });
  const check = pool
    .query<{ writable: boolean }>({
      text: "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable",
      query_timeout: withinMs,
    } as pg.QueryConfig)
    .then((r): DatabaseHealth => (r.rows[0]?.writable ? { ok: true } : { ok: false, reason: 'read-only' }))
    .catch((): DatabaseHealth => ({ ok: false, reason: 'unreachable' }));
  try {
    return await Promise.race([check, late]);
  } finally {
    clearTimeout(timer);
  }
}
