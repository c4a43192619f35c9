import { randomBytes, randomUUID } from 'node:crypto';
import type { Principal } from '../../auth/principal.js';
import { tokenDigest } from '../../auth/tokens.js';
import { ROLES, type Role } from '../../config/config.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { type FieldsOf, selectList } from '../../db/select-list.js';
import { recordApiEvent } from '../events/events.js';

/** Ended and expired sessions are kept this long for the operators' view, then deleted by the next sign-in. */
const KEPT_AFTER_END = '30 days';

export interface ConsoleSession {
  sessionId: string;
  name: string;
  issuer: string;
  subject: string;
  roles: Role[];
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

const SESSION_FIELDS: FieldsOf<ConsoleSession> = {
  sessionId: true,
  name: true,
  issuer: true,
  subject: true,
  roles: true,
  createdAt: true,
  lastSeenAt: true,
  expiresAt: true,
};
const SESSION_COLUMNS = selectList(SESSION_FIELDS);

export interface NewSession {
  /** The cookie's value: only its digest is stored. */
  secret: string;
  /** What X-CSRF-Token must carry on the session's state-changing requests. */
  csrfToken: string;
  sessionId: string;
}

/** A new session for a person the provider signed in; deletes the sessions that ended long ago. */
export async function startConsoleSession(
  tx: Tx,
  person: { name: string; issuer: string; subject: string; roles: readonly Role[]; idToken: string | null; ttlMs: number },
): Promise<NewSession> {
  const session = {
    secret: randomBytes(32).toString('base64url'),
    csrfToken: randomBytes(24).toString('base64url'),
    sessionId: randomUUID(),
  };
  await tx.$executeRaw`
    DELETE FROM nifi_ops.lc_console_session
     WHERE COALESCE(ended_at, expires_at) < clock_timestamp() - ${KEPT_AFTER_END}::interval`;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.lc_console_session (session_id, secret_sha256, csrf_token, issuer, subject, name, roles, id_token, expires_at)
    VALUES (${session.sessionId}::uuid, ${tokenDigest(session.secret)}, ${session.csrfToken}, ${person.issuer}, ${person.subject},
            ${person.name}, ${[...person.roles]}::text[], ${person.idToken},
            clock_timestamp() + ${person.ttlMs} * interval '1 millisecond')`;
  return session;
}

export interface LiveSession {
  principal: Principal;
  sessionId: string;
  csrfToken: string;
  idToken: string | null;
}

/**
 * The live session a cookie's secret names, seen now (its idle time starts again), or null: unknown, ended by
 * sign-out or an operator, past its expiry, or idle longer than `idleMs`.
 */
export async function touchConsoleSession(tx: Tx, secret: string, idleMs: number): Promise<LiveSession | null> {
  const rows = await tx.$queryRaw<
    Array<{ sessionId: string; csrfToken: string; issuer: string; subject: string; name: string; roles: string[]; idToken: string | null }>
  >`
    UPDATE nifi_ops.lc_console_session SET last_seen_at = clock_timestamp()
     WHERE secret_sha256 = ${tokenDigest(secret)} AND ended_at IS NULL AND expires_at > clock_timestamp()
       AND last_seen_at > clock_timestamp() - ${idleMs} * interval '1 millisecond'
    RETURNING session_id::text AS "sessionId", csrf_token AS "csrfToken", issuer, subject, name, roles, id_token AS "idToken"`;
  const row = rows[0];
  if (!row) return null;
  return {
    sessionId: row.sessionId,
    csrfToken: row.csrfToken,
    idToken: row.idToken,
    principal: {
      name: row.name,
      roles: ROLES.filter((role) => row.roles.includes(role)),
      method: 'SESSION',
      issuer: row.issuer,
      subject: row.subject,
    },
  };
}

/** Sign-out: the session named by the cookie's secret ends; its ID token is returned for the provider's logout. */
export async function signOutConsoleSession(tx: Tx, secret: string): Promise<{ idToken: string | null } | null> {
  const rows = await tx.$queryRaw<Array<{ idToken: string | null }>>`
    UPDATE nifi_ops.lc_console_session SET ended_at = clock_timestamp(), ended_by = name
     WHERE secret_sha256 = ${tokenDigest(secret)} AND ended_at IS NULL
    RETURNING id_token AS "idToken"`;
  return rows[0] ?? null;
}

/** The sessions that are live now (not ended, not expired), newest first. */
export async function listConsoleSessions(tx: Tx): Promise<ConsoleSession[]> {
  return tx.$queryRaw<ConsoleSession[]>`
    SELECT ${SESSION_COLUMNS} FROM nifi_ops.lc_console_session
     WHERE ended_at IS NULL AND expires_at > clock_timestamp()
     ORDER BY created_at DESC LIMIT 500`;
}

export interface EndConsoleSessionCommand {
  sessionId: string;
  reason: string;
  actor: string;
}

/** An operator ends a person's session: its next request is refused 401. Ending an ended one changes nothing. */
async function endConsoleSession(tx: Tx, cmd: EndConsoleSessionCommand): Promise<{ changed: boolean }> {
  const rows = await tx.$queryRaw<Array<{ name: string; subject: string; issuer: string }>>`
    UPDATE nifi_ops.lc_console_session SET ended_at = clock_timestamp(), ended_by = ${cmd.actor}
     WHERE session_id = ${cmd.sessionId}::uuid AND ended_at IS NULL
    RETURNING name, subject, issuer`;
  const ended = rows[0];
  if (!ended) return { changed: false };
  await recordApiEvent(tx, {
    level: 'WARN',
    name: 'CONSOLE_SESSION_ENDED',
    runId: null,
    actor: cmd.actor,
    message: cmd.reason,
    details: { sessionId: cmd.sessionId, name: ended.name, issuer: ended.issuer, subject: ended.subject },
  });
  return { changed: true };
}

export const endConsoleSessionOperation = inOneTransaction(endConsoleSession);
