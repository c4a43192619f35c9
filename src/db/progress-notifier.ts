import type pg from 'pg';
import { RUN_PROGRESS_CHANNEL } from './channels.js';

export interface ProgressNotifier {
  /** A claim or chunk report for this run committed: tell the listeners, at most once per interval. */
  touch(runId: string): void;
  /** Stops the timers; pending notifications are dropped. */
  close(): void;
}

interface Window {
  timer: NodeJS.Timeout;
  dirty: boolean;
}

/**
 * Progress of the hot paths, coalesced per run. NOTIFY inside a claim or chunk transaction would
 * serialise their commits, so the API notifies after they committed, outside any transaction: the
 * first touch of a quiet run at once, later touches as one notification at the end of each interval.
 */
export function createProgressNotifier(
  pool: pg.Pool,
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): ProgressNotifier {
  // twice a second per run: each notification is one re-read of the run shared by its watchers and one SSE
  // message per watcher, and at 250 ms that fan-out cost 200 subscribers' hosts ~13% of the write throughput
  const intervalMs = options.intervalMs ?? 500;
  const windows = new Map<string, Window>();
  let closed = false;

  const notify = (runId: string) => {
    pool.query('SELECT pg_notify($1, $2)', [RUN_PROGRESS_CHANNEL, runId]).catch((error) => options.onError?.(error));
  };

  const open = (runId: string): Window => {
    const timer = setTimeout(() => {
      const window = windows.get(runId);
      if (window?.dirty && !closed) {
        notify(runId);
        windows.set(runId, open(runId));
      } else {
        windows.delete(runId);
      }
    }, intervalMs);
    timer.unref();
    return { timer, dirty: false };
  };

  return {
    touch(runId) {
      if (closed) return;
      const window = windows.get(runId);
      if (window) {
        window.dirty = true;
        return;
      }
      notify(runId);
      windows.set(runId, open(runId));
    },
    close() {
      closed = true;
      for (const window of windows.values()) clearTimeout(window.timer);
      windows.clear();
    },
  };
}
