export interface PollLoopOptions {
  /** One pass over what is due; a pass that throws is handed to onError, and the loop goes on. */
  pass: () => Promise<unknown>;
  /** The pause after each pass, unless a wake-up cuts it short. */
  intervalMs: number;
  onError: (error: unknown) => void;
}

export interface PollLoop {
  /** Runs passes until stopped; a second start does nothing. */
  start(): void;
  /** A hint that work is due: a sleeping loop starts its next pass at once, a busy one right after its pass. */
  wake(): void;
  /** Lets the pass in flight finish and runs no other. */
  stop(): Promise<void>;
  /** How long the pass in flight has been running, if one is: what a stop still waits for. */
  passing(): { forMs: number } | null;
  /** When the last pass ended (whether or not it found work or failed). */
  lastPassAt(): Date | null;
}

/** The worker's loops, the dispatcher's and the sweeper's: a pass, then a pause that a wake-up or a stop ends. */
export function createPollLoop(options: PollLoopOptions): PollLoop {
  let loop: Promise<void> | undefined;
  let stopping = false;
  let woken = false;
  let interrupt: (() => void) | undefined;
  let passStarted: number | null = null;
  let lastPassAt: Date | null = null;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopping) return resolve();
      const timer = setTimeout(resolve, ms);
      interrupt = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      interrupt = undefined;
    });

  async function run(): Promise<void> {
    while (!stopping) {
      // cleared before the pass: a wake-up arriving during the pass makes the next one start at once
      woken = false;
      passStarted = performance.now();
      try {
        await options.pass();
      } catch (error) {
        options.onError(error);
      } finally {
        passStarted = null;
        lastPassAt = new Date();
      }
      await pause(options.intervalMs);
    }
  }

  return {
    start() {
      loop ??= run();
    },
    wake() {
      woken = true;
      interrupt?.();
    },
    async stop() {
      stopping = true;
      interrupt?.();
      await loop;
    },
    passing: () => (passStarted === null ? null : { forMs: Math.round(performance.now() - passStarted) }),
    lastPassAt: () => lastPassAt,
  };
}
