import pgListen, { type Subscriber } from 'pg-listen';
import type { Logger } from 'pino';

// pg-listen is CommonJS with `exports.default`: Node's ESM import sees module.exports as the default.
const createSubscriber = (typeof pgListen === 'function' ? pgListen : pgListen.default) as typeof pgListen.default;

export interface ListenerOptions {
  url: string;
  channels: readonly string[];
  log: Logger;
  /** Shown in pg_stat_activity, so operators (and tests) can find the connection. */
  applicationName: string;
  onNotification(channel: string, payload: string): void;
  /**
   * The connection was lost and is back, listening again. Notifications sent in between are lost for
   * good: `lostAt` is when the loss was noticed, for re-reading what may have changed since.
   */
  onReconnected(lostAt: Date): void;
  /** Longest wait between connection attempts (the first retry waits 250 ms, then doubling). */
  maxRetryDelayMs?: number;
  /** How often an idle connection is probed, so a silently dead one is noticed. */
  probeIntervalMs?: number;
}

const PG_LISTEN_RETRY_MS = 3000;

export interface Listener {
  /** Connected and listening on every channel: part of /readyz. */
  connected(): boolean;
  close(): Promise<void>;
}

/**
 * The process's one LISTEN connection, reconnecting forever. pg-listen re-establishes a lost connection
 * and re-issues LISTEN for a few seconds; when it gives up, or the very first connection fails, the
 * subscriber is replaced by a fresh one, after a growing delay, for as long as it takes.
 */
export function startListener(options: ListenerOptions): Listener {
  const { log } = options;
  const maxDelay = options.maxRetryDelayMs ?? 5000;
  const retryDelay = (attempt: number) => Math.min(250 * 2 ** Math.max(attempt - 1, 0), maxDelay);
  let subscriber: Subscriber | undefined;
  let connected = false;
  let closing = false;
  let lostAt: Date | undefined;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const noticeLoss = (reason: string, error?: unknown) => {
    if (connected || !lostAt) {
      lostAt ??= new Date();
      log.warn({ err: error, reason }, 'listen_connection_lost');
    }
    connected = false;
  };

  const becameConnected = () => {
    connected = true;
    failures = 0;
    if (lostAt) {
      const since = lostAt;
      lostAt = undefined;
      log.info({ lostAt: since }, 'listen_reconnected');
      options.onReconnected(since);
    } else {
      log.info({ channels: options.channels }, 'listen_connected');
    }
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

  const open = async () => {
    if (closing) return;
    const current = createSubscriber(
      { connectionString: options.url, application_name: options.applicationName },
      {
        parse: (payload: string) => payload,
        // bounded: pg-listen's retry loop does not stop when its subscriber is closed
        retryTimeout: PG_LISTEN_RETRY_MS,
        retryInterval: retryDelay,
        paranoidChecking: options.probeIntervalMs ?? 10_000,
      },
    );
    subscriber = current;
    let initialised = false;
    current.events.on('notification', ({ channel, payload }) => options.onNotification(channel, String(payload ?? '')));
    current.events.on('reconnect', (attempt) => {
      if (attempt === 1) noticeLoss('connection lost, reconnecting');
    });
    current.events.on('connected', () => {
      // a replaced subscriber may still finish a reconnect loop of its own (pg-listen does not stop it)
      if (subscriber !== current) {
        void current.close().catch(() => undefined);
        return;
      }
      // pg-listen also announces the first connect, before our LISTENs below: only reconnects count here
      if (initialised) becameConnected();
    });
    current.events.on('error', (error) => {
      if (subscriber === current) replace(error);
    });
    try {
      await current.connect();
      for (const channel of options.channels) await current.listenTo(channel);
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

  void open();

  return {
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
