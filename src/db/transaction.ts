import type pg from 'pg';
import type { ActingAs } from '../auth/principal.js';
import { DomainError } from '../contract/errors.js';
import { DeclaredEffects, type AfterCommit } from './after-commit.js';
import type { Db, Tx } from './client.js';
import { isDatabaseUnavailable, isRetryableConflict } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Upper bound of the first backoff in ms; doubles per attempt, with full jitter. */
  baseDelayMs?: number;
}

const DEFAULT_RETRY: RetryOptions = { attempts: 5, baseDelayMs: 20 };

/** The 503 of a request the database did not serve in time, or could not serve at all. */
export function databaseUnavailable(): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', { reason: 'database unavailable' }, 'database unavailable, retry later');
}

/** Whether this is the 503 of databaseUnavailable: sending the same statements again now would meet the same database. */
export function isUnavailableAnswer(error: unknown): boolean {
  return error instanceof DomainError && error.code === 'SERVICE_UNAVAILABLE' && error.details?.reason === 'database unavailable';
}

async function withRetries<T>(options: RetryOptions, run: () => Promise<T>): Promise<T> {
  const base = options.baseDelayMs ?? 20;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (error instanceof DomainError) throw error;
      if (isRetryableConflict(error)) {
        if (attempt < options.attempts) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * base * 2 ** (attempt - 1)));
          continue;
        }
        throw new DomainError('SERVICE_UNAVAILABLE', { reason: 'contention', attempts: attempt }, 'contention persisted, retry later');
      }
      if (isDatabaseUnavailable(error)) throw databaseUnavailable();
      throw error;
    }
  }
}

/**
 * Runs fn in one database transaction (acting for `actingAs`, when given, in the audit trail); deadlocks and serialization failures re-run it, then 503. Getting a
 * connection is bounded by the pool's acquire timeout, the whole transaction by the statement timeout.
 * What fn declares on afterCommit runs once, after the commit of the attempt that committed.
 */
export async function inTransaction<T>(
  db: Db,
  fn: (tx: Tx, afterCommit: AfterCommit) => Promise<T>,
  options: RetryOptions = DEFAULT_RETRY,
  actingAs: ActingAs | null = null,
): Promise<T> {
  const { acquireTimeout, statementTimeout } = db.timeouts;
  const { effects, result } = await withRetries(options, async () => {
    const effects = new DeclaredEffects();
    const run = async (tx: Tx) => {
      // the events this transaction writes record who it acts for (load_event's actor_* defaults)
      if (actingAs) await tx.$queryRaw`SELECT nifi_ops.acting_as(NULL::text, ${actingAs.method}, ${actingAs.issuer}, ${actingAs.subject})`;
      return fn(tx, effects);
    };
    const result = await db.prisma.$transaction((tx) => effects.capture(() => run(tx)), {
      maxWait: acquireTimeout,
      timeout: statementTimeout,
    });
    return { effects, result };
  });
  return effects.settle(db.notices, result);
}

/**
 * Runs fn with the pool directly, for the hot paths that are one SQL statement (an implicit transaction),
 * where an interactive transaction would cost several extra round trips per call. What fn declares on
 * afterCommit runs once fn's statements succeeded, as with inTransaction.
 */
export async function inStatement<T>(
  db: Db,
  fn: (sql: pg.Pool, afterCommit: AfterCommit) => Promise<T>,
  options: RetryOptions = DEFAULT_RETRY,
): Promise<T> {
  const { effects, result } = await withRetries(options, async () => {
    const effects = new DeclaredEffects();
    return { effects, result: await effects.capture(() => fn(db.pool, effects)) };
  });
  return effects.settle(db.notices, result);
}
