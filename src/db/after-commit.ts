import type pg from 'pg';
import type { DomainError } from '../contract/errors.js';
import { DISPATCH_CHANNEL } from './channels.js';
import { createProgressNotifier } from './progress-notifier.js';

/**
 * What a domain function declares for after its transaction commits. Nothing is sent before the commit
 * (NOTIFY inside a transaction serialises commits), nothing when it rolls back, and an attempt that a
 * deadlock re-runs leaves nothing behind: only the attempt that committed has its effects run.
 */
export interface AfterCommit {
  /** An outbox row became due: wake the listening dispatchers. The hint (a run id, or who woke them) is informative only. */
  wakeDispatcher(hint: string): void;
  /** A claim or chunk report moved this run: a progress notice for its watchers, coalesced per run. */
  runProgressed(runId: string): void;
  /**
   * Ends the transaction's function here, like a throw, but what it wrote commits; the caller then gets this
   * error (after the other effects ran). For a refusal whose record must survive it (FAILED_MANIFEST).
   */
  raise(error: DomainError): never;
}

/** How the effects are sent: NOTIFYs with ids only. A failed one is passed to onError, never to the caller. */
export interface CommitNotices {
  wakeDispatcher(hint: string): Promise<void>;
  runProgressed(runId: string): void;
  /** Stops the progress timers; notices still pending are dropped. */
  close(): void;
}

export function createCommitNotices(pool: pg.Pool, onError: (error: unknown) => void = () => undefined): CommitNotices {
  const progress = createProgressNotifier(pool, { onError });
  return {
    async wakeDispatcher(hint) {
      // a lost hint only delays delivery to the dispatchers' next poll
      await pool.query('SELECT pg_notify($1, $2)', [DISPATCH_CHANNEL, hint]).catch(onError);
    },
    runProgressed: (runId) => progress.touch(runId),
    close: () => progress.close(),
  };
}

/** The raise of one attempt, recognised by the transaction helper, which commits instead of rolling back. */
class Raised {
  constructor(readonly error: DomainError) {}
}

/** The effects one attempt declared; the transaction helper makes one per attempt and settles the one that committed. */
export class DeclaredEffects implements AfterCommit {
  private readonly wakes = new Set<string>();
  private readonly progressed = new Set<string>();
  private raised: Raised | null = null;

  wakeDispatcher(hint: string): void {
    this.wakes.add(hint);
  }

  runProgressed(runId: string): void {
    this.progressed.add(runId);
  }

  raise(error: DomainError): never {
    this.raised = new Raised(error);
    throw this.raised;
  }

  /** Runs fn; its raise ends it normally, so that its transaction commits. */
  async capture<T>(fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      if (error !== null && error === this.raised) return undefined;
      throw error;
    }
  }

  /** After the commit: sends the notices, then raises the declared error, if any, else answers result. */
  async settle<T>(notices: CommitNotices, result: T | undefined): Promise<T> {
    await Promise.all([...this.wakes].map((hint) => notices.wakeDispatcher(hint)));
    for (const runId of this.progressed) notices.runProgressed(runId);
    if (this.raised) throw this.raised.error;
    return result as T;
  }
}
