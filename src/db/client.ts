import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { type Config, DATABASE_TIMEOUT_DEFAULTS, type DatabaseTimeouts } from '../config/config.js';
import { PrismaClient, type Prisma } from '../generated/prisma/client.js';
import { createCommitNotices, type CommitNotices } from './after-commit.js';
import { endStatementSpan, inCallersContext, startStatementSpan } from './statement-spans.js';

/**
 * The one handle domain functions take: a transaction opened by the transaction helper (domain functions never
 * open their own), or, for reads, the client itself (each statement its own snapshot). With no models in
 * schema.prisma it offers the typed raw queries only. The rule's one exception: operations declared in
 * `statement` mode (src/db/operation.ts) take the pool, for the hot paths measured faster as single statements.
 */
export type Tx = Prisma.TransactionClient;

/** One pool shared by Prisma (through the pg adapter) and the single-statement hot paths. */
export interface Db {
  prisma: PrismaClient;
  pool: pg.Pool;
  /** What every statement and connection of this pool is bounded by; the transaction helper uses them too. */
  timeouts: DatabaseTimeouts;
  /** How the transaction helper sends the effects declared for after a commit. */
  notices: CommitNotices;
  close(): Promise<void>;
}

/**
 * How much longer than statement_timeout the client waits for an answer before it gives the connection up:
 * the server cancels a slow statement itself; only a server that does not answer at all (frozen, or gone
 * without a word) reaches this.
 */
const READ_GRACE_MS = 1000;

/**
 * When a request that waits for the database in more than one place is answered 503 anyway: a report queued
 * behind a stuck batch of the group commit, a request queued for an execution thread. A request waits for a
 * connection within acquireTimeout, then for its statement within statementTimeout (plus the read grace when
 * the server does not answer at all).
 */
export function answerBound(timeouts: DatabaseTimeouts): number {
  return timeouts.acquireTimeout + timeouts.statementTimeout;
}

/**
 * The server settings every session of ours has: the statement timeout, a transaction left open by a client
 * that vanished not holding its locks for long, and no JIT — the ledger's statements are short and indexed; JIT
 * compiles only when the planner's estimate is large, and with a year of history behind it a misestimate turned
 * a 2 ms statement into a 3 s one (bench/history).
 */
function sessionSettings(timeouts: DatabaseTimeouts) {
  return { statement_timeout: timeouts.statementTimeout, idle_in_transaction_session_timeout: timeouts.statementTimeout * 2, jit: 'off' };
}

/** The pg client options that bound a connection's time: connecting, each statement, an idle transaction. */
export function boundedConnection(timeouts: DatabaseTimeouts): pg.ClientConfig {
  const { jit, ...timeoutSettings } = sessionSettings(timeouts);
  return {
    ...readBounds(timeouts),
    ...timeoutSettings,
    options: `-c jit=${jit}`,
  };
}

/** The client side of the bounds, which a transaction pooler lets through. */
function readBounds(timeouts: DatabaseTimeouts): pg.ClientConfig {
  return {
    connectionTimeoutMillis: timeouts.connectTimeout,
    query_timeout: timeouts.statementTimeout + READ_GRACE_MS,
    // a peer that vanished without closing (a failover, a cut network) is noticed between statements too
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

/**
 * Through a transaction pooler (PgBouncer, pool_mode = transaction) each transaction may get another server
 * connection, and PgBouncer refuses the startup parameters that carry the session settings: they come with
 * every transaction instead, in one round trip with its BEGIN.
 */
function beginWithSettings(timeouts: DatabaseTimeouts): string {
  const settings = Object.entries(sessionSettings(timeouts)).map(([name, value]) => `SET LOCAL ${name} = '${value}'`);
  return ['BEGIN', ...settings].join('; ');
}

/**
 * A connection whose statement went unanswered past its read timeout is destroyed: pg would otherwise keep
 * it, with every later statement queued behind the lost one, and hand it out again.
 */
function clientClass(timeouts: DatabaseTimeouts, pooled: boolean): typeof pg.Client {
  const bounds = pooled ? readBounds(timeouts) : boundedConnection(timeouts);
  const begin = beginWithSettings(timeouts);
  return class BoundedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, ...bounds });
      // a connection that breaks while checked out reports through its statements; this must not crash
      this.on('error', () => undefined);
    }

    // pg's query() has many overloads: the callback, when there is one, is the last argument
    query(...args: unknown[]): never {
      if (pooled) args[0] = forPooler(args[0], begin);
      const span = startStatementSpan(this, args[0]);
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === 'function') {
        args[last] = (error: unknown, ...rest: unknown[]) => {
          if (isReadTimeout(error)) this.giveUp();
          if (span) endStatementSpan(span, error, rest[0]);
          callback(error, ...rest);
        };
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result instanceof Promise) {
        result.then(
          (answer: unknown) => {
            if (span) endStatementSpan(span, null, answer);
          },
          (error: unknown) => {
            if (isReadTimeout(error)) this.giveUp();
            if (span) endStatementSpan(span, error, undefined);
          },
        );
      } else if (span && typeof callback !== 'function') {
        // a submittable (a cursor) reports on its own; its span says only that it was sent
        span.end();
      }
      return result as never;
    }

    private giveUp(): void {
      (this as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    }
  };
}

/**
 * A statement as a transaction pooler needs it: unnamed (a statement prepared on one server connection is not
 * there on the next), and a transaction's BEGIN with the session settings.
 */
function forPooler(statement: unknown, begin: string): unknown {
  const text = typeof statement === 'string' ? statement : (statement as { text?: unknown } | null)?.text;
  if (typeof text === 'string' && text.trim().toUpperCase() === 'BEGIN') {
    return typeof statement === 'string' ? begin : { ...(statement as object), text: begin };
  }
  if (typeof statement === 'object' && statement !== null && 'name' in statement && !('submit' in statement)) {
    const { name: _prepared, ...unnamed } = statement as { name?: string };
    return unnamed;
  }
  return statement;
}

type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;

/** pg's pool, handing each waiting caller its connection in that caller's trace context (inCallersContext). */
class Pool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    if (!callback) return super.connect();
    super.connect(inCallersContext(callback));
    return undefined;
  }
}

/**
 * The pool in front of a transaction pooler: a statement sent on the pool (an implicit transaction of its own)
 * is sent in a transaction of its own, so that it has the session settings too (BoundedClient's BEGIN).
 */
class PooledPool extends Pool {
  // pg's query() has many overloads; ours (and Prisma's adapter) use the promise forms only
  override query(...args: unknown[]): never {
    if (typeof args.at(-1) === 'function') throw new Error('a pool in front of a transaction pooler takes no query callbacks');
    return this.inOwnTransaction(args) as never;
  }

  private async inOwnTransaction(args: unknown[]): Promise<unknown> {
    const client = await this.connect();
    let broken: unknown;
    try {
      await client.query('BEGIN');
      const result = await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackFailed: unknown) => {
        broken = rollbackFailed;
      });
      throw error;
    } finally {
      client.release(broken as Error | undefined);
    }
  }
}

function isReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
}

/** database.directUrl names the server itself: database.url leads to a transaction pooler (PgBouncer). */
export function behindTransactionPooler(config: Config): boolean {
  return config.database.directUrl !== null;
}

// NUMERIC and BIGINT arrive as strings from pg; the domain converts them where it needs numbers.
export function createDb(
  url: string,
  options: {
    poolSize?: number;
    timeouts?: DatabaseTimeouts;
    onNotifyError?: (error: unknown) => void;
    /** What pg_stat_activity shows for this pool's connections. */
    applicationName?: string;
    /** `url` leads to a transaction pooler (database.directUrl is set): settings per transaction, no named statements. */
    transactionPooler?: boolean;
  } = {},
): Db {
  const timeouts = options.timeouts ?? DATABASE_TIMEOUT_DEFAULTS;
  const pooled = options.transactionPooler ?? false;
  const pool = new (pooled ? PooledPool : Pool)({
    connectionString: url,
    application_name: options.applicationName,
    max: options.poolSize ?? 10,
    Client: clientClass(timeouts, pooled),
    // waiting for a free connection (or a new one: connectTimeout bounds that part) ends after acquireTimeout
    connectionTimeoutMillis: timeouts.acquireTimeout,
  });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  const notices = createCommitNotices(pool, options.onNotifyError);
  return {
    prisma,
    pool,
    timeouts,
    notices,
    async close() {
      notices.close();
      await prisma.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}
