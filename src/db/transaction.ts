import type pg from 'pg';
import { DomainError } from '../domain/errors.js';
import type { Db, Tx } from './client.js';
import { isDatabaseUnavailable, isRetryableConflict } from './errors.js';

export interface RetryOptions {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Upper bound of the first backoff in ms; doubles per attempt, with full jitter. */
  baseDelayMs?: number;
}

const DEFAULT_RETRY: RetryOptions = { attempts: 5, baseDelayMs: 20 };

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
      if (isDatabaseUnavailable(error)) {
        throw new DomainError('SERVICE_UNAVAILABLE', { reason: 'database unavailable' }, 'database unavailable, retry later');
      }
      throw error;
    }
  }
}

/**
 * Runs fn in one database transaction; deadlocks and serialization failures re-run it, then 503. Getting a
 * connection is bounded by the pool's acquire timeout, the whole transaction by the statement timeout.
 */
export function inTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>, options: RetryOptions = DEFAULT_RETRY): Promise<T> {
  const { acquireTimeout, statementTimeout } = db.timeouts;
  return withRetries(options, () => db.prisma.$transaction(fn, { maxWait: acquireTimeout, timeout: statementTimeout }));
}

/**
 * Runs fn with the pool directly, for the hot paths that are one SQL statement (an implicit transaction),
 * where an interactive transaction would cost several extra round trips per call.
 */
export function inStatement<T>(db: Db, fn: (sql: pg.Pool) => Promise<T>, options: RetryOptions = DEFAULT_RETRY): Promise<T> {
  return withRetries(options, () => fn(db.pool));
}
