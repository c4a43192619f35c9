// Console sessions in PostgreSQL: found by the cookie's secret only while live (not ended, not past expiry, not
// idle too long), each request starting the idle time again; sign-out ends one; sessions long ended are deleted.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../../src/db/transaction.js';
import {
  listConsoleSessions,
  signOutConsoleSession,
  startConsoleSession,
  touchConsoleSession,
} from '../../../src/domain/sessions/console-sessions.js';
import { type DomainTest, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const HOUR = 3_600_000;
const person = (subject: string, ttlMs = 8 * HOUR) => ({
  name: `Person ${subject}`,
  issuer: 'https://idp.test',
  subject,
  roles: ['viewer'] as const,
  idToken: 'id.token.here',
  ttlMs,
});
const start = (subject: string, ttlMs?: number) => inTransaction(t.db, (tx) => startConsoleSession(tx, person(subject, ttlMs)));
const age = (sessionId: string, column: 'last_seen_at' | 'expires_at' | 'ended_at', by: string) =>
  t.sql.query(`UPDATE nifi_ops.lc_console_session SET ${column} = clock_timestamp() - $2::interval WHERE session_id = $1`, [sessionId, by]);

describe('console sessions', () => {
  it('are found by their secret, not by their digest, and each request restarts the idle time', async () => {
    const s = await start(`s-${randomUUID()}`);
    const live = await touchConsoleSession(t.db.prisma, s.secret, 30 * 60_000);
    expect(live).toMatchObject({ sessionId: s.sessionId, csrfToken: s.csrfToken, principal: { method: 'SESSION', roles: ['viewer'] } });
    expect(await touchConsoleSession(t.db.prisma, 'not-the-secret', 30 * 60_000)).toBeNull();
    const { rows } = await t.sql.query('SELECT secret_sha256 FROM nifi_ops.lc_console_session WHERE session_id = $1', [s.sessionId]);
    expect(await touchConsoleSession(t.db.prisma, rows[0].secret_sha256.toString('hex'), 30 * 60_000)).toBeNull();

    await age(s.sessionId, 'last_seen_at', '29 minutes');
    expect(await touchConsoleSession(t.db.prisma, s.secret, 30 * 60_000)).not.toBeNull();
    // the touch above made it fresh again
    await age(s.sessionId, 'last_seen_at', '31 minutes');
    expect(await touchConsoleSession(t.db.prisma, s.secret, 30 * 60_000)).toBeNull();
  });

  it('end at their expiry whatever their activity, and at sign-out', async () => {
    const expiring = await start(`e-${randomUUID()}`);
    await age(expiring.sessionId, 'expires_at', '1 second');
    expect(await touchConsoleSession(t.db.prisma, expiring.secret, HOUR)).toBeNull();
    expect((await listConsoleSessions(t.db.prisma)).map((s) => s.sessionId)).not.toContain(expiring.sessionId);

    const leaving = await start(`l-${randomUUID()}`);
    expect((await listConsoleSessions(t.db.prisma)).map((s) => s.sessionId)).toContain(leaving.sessionId);
    expect(await inTransaction(t.db, (tx) => signOutConsoleSession(tx, leaving.secret))).toEqual({ idToken: 'id.token.here' });
    expect(await inTransaction(t.db, (tx) => signOutConsoleSession(tx, leaving.secret))).toBeNull();
    expect(await touchConsoleSession(t.db.prisma, leaving.secret, HOUR)).toBeNull();
  });

  it('are deleted 30 days after they ended, by the next sign-in', async () => {
    const old = await start(`o-${randomUUID()}`);
    await age(old.sessionId, 'ended_at', '31 days');
    await start(`n-${randomUUID()}`);
    const { rows } = await t.sql.query('SELECT 1 FROM nifi_ops.lc_console_session WHERE session_id = $1', [old.sessionId]);
    expect(rows).toEqual([]);
  });
});
