import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { DATABASE_TIMEOUT_DEFAULTS, type DatabaseTimeouts } from '../config/config.js';
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

/** The pg client options that bound a connection's time: connecting, each statement, an idle transaction. */
export function boundedConnection(timeouts: DatabaseTimeouts): pg.ClientConfig {
  return {
    connectionTimeoutMillis: timeouts.connectTimeout,
    statement_timeout: timeouts.statementTimeout,
    query_timeout: timeouts.statementTimeout + READ_GRACE_MS,
    // a transaction left open by a client that vanished must not hold its locks for long
    idle_in_transaction_session_timeout: timeouts.statementTimeout * 2,
    // a peer that vanished without closing (a failover, a cut network) is noticed between statements too
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // The ledger's statements are short and indexed; JIT compiles only when the planner's estimate is large,
    // and with a year of history behind it a misestimate turned a 2 ms statement into a 3 s one (bench/history)
    options: '-c jit=off',
  };
}

/**
 * A connection whose statement went unanswered past its read timeout is destroyed: pg would otherwise keep
 * it, with every later statement queued behind the lost one, and hand it out again.
 */
function clientClass(timeouts: DatabaseTimeouts): typeof pg.Client {
  const bounds = boundedConnection(timeouts);
  return class BoundedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, ...bounds });
      // a connection that breaks while checked out reports through its statements; this must not crash
      this.on('error', () => undefined);
    }

    // pg's query() has many overloads: the callback, when there is one, is the last argument
    query(...args: unknown[]): never {
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

function isReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
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
  } = {},
): Db {
  const timeouts = options.timeouts ?? DATABASE_TIMEOUT_DEFAULTS;
  const pool = new Pool({
    connectionString: url,
    application_name: options.applicationName,
    max: options.poolSize ?? 10,
    Client: clientClass(timeouts),
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
