import pgListen, { type Subscriber } from 'pg-listen';
import type { Logger } from 'pino';
import { DATABASE_TIMEOUT_DEFAULTS, type DatabaseTimeouts } from '../config/config.js';
import { boundedConnection } from './client.js';

// pg-listen is CommonJS with `exports.default`: Node's ESM import sees module.exports as the default.
const createSubscriber = (typeof pgListen === 'function' ? pgListen : pgListen.default) as typeof pgListen.default;

/** One consumer of the process's LISTEN connection. */
export interface ListenRoute {
  channels: readonly string[];
  onNotification(channel: string, payload: string): void;
  /**
   * Its channels are LISTENed: after the first connect (`lostAt` undefined) and after every reconnect, when
   * `lostAt` is when the loss was noticed. Notifications sent in between are lost for good.
   */
  onListening?(lostAt: Date | undefined): void;
  /** The connection was lost (noticed at `at`); onListening follows when it is back. */
  onLost?(at: Date): void;
}

export interface ListenerOptions {
  url: string;
  log: Logger;
  /** Shown in pg_stat_activity, so operators (and tests) can find the connection. */
  applicationName: string;
  /** Longest wait between connection attempts (the first retry waits 250 ms, then doubling). */
  maxRetryDelayMs?: number;
  /** How often an idle connection is probed, so a silently dead one is noticed. */
  probeIntervalMs?: number;
  /** Bounds on connecting and on each statement (the probe included): a frozen server is noticed too. */
  timeouts?: DatabaseTimeouts;
}

const PG_LISTEN_RETRY_MS = 3000;

/** pg_stat_activity's application_name of the LISTEN connection `load-control serve` and `start` share. */
export const PROCESS_LISTENER_NAME = 'load-control listen';

export interface Listener {
  /** Adds a consumer; its channels are LISTENed at once if connected, and after every reconnect. */
  route(route: ListenRoute): void;
  /** Connected and listening on every routed channel: part of /readyz. */
  connected(): boolean;
  close(): Promise<void>;
}

/**
 * The process's one LISTEN connection (realtime and the dispatcher share it), reconnecting forever.
 * pg-listen re-establishes a lost connection and re-issues LISTEN for a few seconds; when it gives up, or
 * the very first connection fails, the subscriber is replaced by a fresh one, after a growing delay, for
 * as long as it takes.
 */
export function startListener(options: ListenerOptions): Listener {
  const { log } = options;
  const maxDelay = options.maxRetryDelayMs ?? 5000;
  const retryDelay = (attempt: number) => Math.min(250 * 2 ** Math.max(attempt - 1, 0), maxDelay);
  const routes: ListenRoute[] = [];
  let subscriber: Subscriber | undefined;
  /** The channels the current subscriber LISTENs on (pg-listen repeats them after its reconnects). */
  let listened = new Set<string>();
  let connected = false;
  let closing = false;
  let lostAt: Date | undefined;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const unlistened = () => routes.flatMap((r) => r.channels).filter((c) => !listened.has(c));

  const noticeLoss = (reason: string, error?: unknown) => {
    if (connected || !lostAt) {
      lostAt ??= new Date();
      log.warn({ err: error, reason }, 'listen_connection_lost');
      for (const route of routes) route.onLost?.(lostAt);
    }
    connected = false;
  };

  const becameConnected = () => {
    connected = true;
    failures = 0;
    const since = lostAt;
    lostAt = undefined;
    if (since) log.info({ lostAt: since }, 'listen_reconnected');
    else log.info({ channels: [...listened] }, 'listen_connected');
    for (const route of routes) route.onListening?.(since);
  };

  const replace = (error: unknown) => {
    noticeLoss('listener failed', error);
    const old = subscriber;
    subscriber = undefined;
    void old?.close().catch(() => undefined);
    if (closing) return;
    failures += 1;
    retryTimer = setTimeout(() => void open(), retryDelay(failures));
  };

  /** LISTENs on every routed channel not yet LISTENed on; false (and the subscriber replaced) if that failed. */
  const listenToUnlistened = async (current: Subscriber): Promise<boolean> => {
    try {
      // routes added while these LISTENs run are picked up by the next round
      for (let pending = unlistened(); pending.length > 0; pending = unlistened()) {
        for (const channel of pending) {
          await current.listenTo(channel);
          listened.add(channel);
        }
      }
      return true;
    } catch (error) {
      if (subscriber === current) replace(error);
      return false;
    }
  };

  const open = async () => {
    if (closing) return;
    const current = createSubscriber(
      {
        ...boundedConnection(options.timeouts ?? DATABASE_TIMEOUT_DEFAULTS),
        connectionString: options.url,
        application_name: options.applicationName,
      },
      {
        parse: (payload: string) => payload,
        // bounded: pg-listen's retry loop does not stop when its subscriber is closed
        retryTimeout: PG_LISTEN_RETRY_MS,
        retryInterval: retryDelay,
        paranoidChecking: options.probeIntervalMs ?? 10_000,
      },
    );
    subscriber = current;
    listened = new Set();
    let initialised = false;
    current.events.on('notification', ({ channel, payload }) => {
      for (const route of routes) if (route.channels.includes(channel)) route.onNotification(channel, String(payload ?? ''));
    });
    current.events.on('reconnect', (attempt) => {
      if (attempt === 1) noticeLoss('connection lost, reconnecting');
    });
    current.events.on('connected', () => {
      // a replaced subscriber may still finish a reconnect loop of its own (pg-listen does not stop it)
      if (subscriber !== current) {
        void current.close().catch(() => undefined);
        return;
      }
      // pg-listen also announces the first connect, before our LISTENs below: only reconnects count here.
      // It repeats its own LISTENs; a route added while it was reconnecting still needs one.
      if (initialised) void listenToUnlistened(current).then((ok) => ok && becameConnected());
    });
    current.events.on('error', (error) => {
      if (subscriber === current) replace(error);
    });
    try {
      await current.connect();
      if (!(await listenToUnlistened(current))) return;
      initialised = true;
      if (closing) {
        await current.close().catch(() => undefined);
        return;
      }
      becameConnected();
    } catch (error) {
      if (subscriber === current) replace(error);
    }
  };

  const listenNow = async (route: ListenRoute) => {
    const current = subscriber!;
    if ((await listenToUnlistened(current)) && subscriber === current && connected) route.onListening?.(undefined);
  };

  void open();

  return {
    route(route) {
      routes.push(route);
      // otherwise the first connect or the next reconnect LISTENs on it
      if (connected) void listenNow(route);
    },
    connected: () => connected,
    async close() {
      closing = true;
      connected = false;
      clearTimeout(retryTimer);
      const current = subscriber;
      subscriber = undefined;
      await current?.close().catch(() => undefined);
    },
  };
}
