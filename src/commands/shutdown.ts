import type { Logger } from '../logging/logger.js';

export interface Shutdown {
  /** A signal (or a failed start) began the shutdown: readiness checks fail from now on. */
  stopping(): boolean;
  /**
   * Work to let finish when stopping, all at once: `finish` begins it at once and resolves when it is done;
   * `open` says what is still running, for the log if the time runs out.
   */
  drain(name: string, finish: () => Promise<void>, open?: () => unknown): void;
  /** Closed after everything drained, the last registered first (e.g. the database pool last). */
  close(name: string, close: () => Promise<void>): void;
  /** Drains, closes and exits with `code`; exits 1 if that takes longer than the timeout. */
  stop(code: number): Promise<void>;
  /** SIGTERM and SIGINT stop with 0; a second signal exits at once with 128 + its number. */
  handleSignals(): void;
}

const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;

export function createShutdown(options: { log: Logger; timeoutMs: number }): Shutdown {
  const { log, timeoutMs } = options;
  const exit = (code: number) => process.exit(code);
  const drains: Array<{ name: string; finish: () => Promise<void>; open?: () => unknown; done: boolean }> = [];
  const closes: Array<{ name: string; close: () => Promise<void> }> = [];
  let stopping = false;

  async function stop(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    const started = performance.now();
    log.info({ timeoutMs }, 'stopping');
    const timer = setTimeout(() => {
      const open = Object.fromEntries(drains.filter((d) => !d.done).map((d) => [d.name, d.open?.() ?? true]));
      log.error({ timeoutMs, open }, 'stop_timed_out');
      exit(1);
    }, timeoutMs);
    await Promise.all(
      drains.map(async (d) => {
        await d.finish().catch((error) => log.error({ err: error, step: d.name }, 'stop_failed'));
        d.done = true;
      }),
    );
    for (const c of closes.reverse()) {
      await c.close().catch((error) => log.error({ err: error, step: c.name }, 'stop_failed'));
    }
    clearTimeout(timer);
    log.info({ durationMs: Math.round(performance.now() - started) }, 'stopped');
    exit(code);
  }

  return {
    stopping: () => stopping,
    drain(name, finish, open) {
      drains.push({ name, finish, open, done: false });
    },
    close(name, close) {
      closes.push({ name, close });
    },
    stop,
    handleSignals() {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.on(signal, () => {
          if (!stopping) return void stop(0);
          log.warn({ signal }, 'stop_forced');
          exit(128 + SIGNAL_NUMBERS[signal]);
        });
      }
    },
  };
}
