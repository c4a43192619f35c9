import type http from 'node:http';
import net, { type Socket } from 'node:net';
import type { Logger } from './logger.js';

/** A request received and not yet answered, for the log of a drain that ran out of time. */
export interface OpenRequest {
  method: string;
  url: string;
  requestId: string | undefined;
  ageMs: number;
}

export interface DrainableServer {
  /** drain() was called: readiness is down. */
  readonly draining: boolean;
  open(): OpenRequest[];
  /**
   * Stops accepting connections; every request already received, also one that arrives later on a
   * connection still open, is answered, the last one of each connection with `Connection: close`, which
   * closes it. Connections idle from the start are closed after IDLE_GRACE_MS. Resolves when none is left.
   */
  drain(): Promise<void>;
}

/**
 * How long a drain keeps the keep-alive connections that are idle at its start. A client may be writing its
 * next request on one at this very moment: closing it then resets that request. Within the grace, the
 * request is answered (with `Connection: close`); busy clients send theirs within milliseconds.
 */
const IDLE_GRACE_MS = 1000;

/** Tracks a server's requests per connection, so that it can be drained rather than cut off. */
export function drainable(server: http.Server): DrainableServer {
  const pending = new Map<Socket, Array<{ req: http.IncomingMessage; res: http.ServerResponse; at: number }>>();
  let draining = false;
  let graceOver = false;
  let drained: Promise<void> | undefined;

  // Node drops the responses queued behind one that says `Connection: close` (pipelined requests, whose
  // handlers have run), so only the last request received on a connection may say it
  const markLast = (queue: Array<{ res: http.ServerResponse }>) => {
    for (const { res } of queue.slice(0, -1)) if (!res.headersSent) res.removeHeader('Connection');
    const last = queue.at(-1)?.res;
    if (last && !last.headersSent) last.setHeader('Connection', 'close');
  };

  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const queue = pending.get(socket) ?? [];
    const entry = { req, res, at: performance.now() };
    queue.push(entry);
    pending.set(socket, queue);
    if (draining) markLast(queue);
    res.once('close', () => {
      queue.splice(queue.indexOf(entry), 1);
      if (queue.length === 0) pending.delete(socket);
      // a response whose headers went out before the drain (an SSE stream) left its connection open
      if (graceOver) server.closeIdleConnections();
    });
  });

  return {
    get draining() {
      return draining;
    },
    open() {
      const now = performance.now();
      return [...pending.values()].flat().map(({ req, at }) => ({
        method: req.method ?? '',
        url: req.url ?? '',
        requestId: typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined,
        ageMs: Math.round(now - at),
      }));
    },
    drain() {
      draining = true;
      drained ??= new Promise<void>((resolve) => {
        for (const queue of pending.values()) markLast(queue);
        // net.Server's close only stops accepting; http.Server's would also cut the connections idle now
        net.Server.prototype.close.call(server, () => resolve());
        setTimeout(() => {
          graceOver = true;
          server.closeIdleConnections();
        }, IDLE_GRACE_MS).unref();
      });
      return drained;
    },
  };
}

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
