import pgListen from 'pg-listen';
import { DISPATCH_CHANNEL } from '../domain/dispatch/wake.js';
import type { Logger } from '../server/logger.js';

export interface WakeListenerOptions {
  url: string;
  /** Shown in pg_stat_activity, so operators (and tests) can find the LISTEN connection. */
  applicationName: string;
  log: Logger;
  /** A notification arrived, or the connection was (re-)established and hints may have been missed. */
  onWake(): void;
}

export interface WakeListener {
  /** The LISTEN connection is up (for /readyz). */
  listening(): boolean;
  close(): Promise<void>;
}

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 5_000;
const retryDelay = (attempt: number) => Math.min(RETRY_MIN_MS * 2 ** attempt, RETRY_MAX_MS);

/**
 * LISTENs on `load_dispatch` through pg-listen, which reconnects after a lost connection and LISTENs
 * again; it is told to retry forever (its default gives up after 3 s). Every (re)connect wakes the
 * caller once, because notifications sent while disconnected are lost.
 */
export function listenForWakeups(options: WakeListenerOptions): WakeListener {
  const { log } = options;
  let up = false;
  let closed = false;
  let subscriber: ReturnType<typeof pgListen.default> | undefined;
  let cancelRetry: (() => void) | undefined;

  const connectOnce = async (): Promise<boolean> => {
    const s = pgListen.default(
      { connectionString: options.url, application_name: options.applicationName },
      // payloads are run ids, not JSON
      { parse: (payload: string) => payload, retryTimeout: 0, retryInterval: retryDelay, paranoidChecking: 15_000 },
    );
    let initial = true;
    s.events.on('connected', () => {
      if (initial) return; // the first LISTEN is still to come
      up = true;
      log.info('listen_reconnected');
      options.onWake();
    });
    s.events.on('reconnect', (attempt) => {
      if (up) log.warn('listen_connection_lost');
      up = false;
      log.debug({ attempt }, 'listen_reconnecting');
    });
    s.events.on('error', (error) => {
      up = false;
      log.error({ err: error }, 'listen_error');
      // pg-listen stops trying once re-LISTENing after a reconnect failed: start over with a new one
      if (!initial && subscriber === s && !closed) {
        subscriber = undefined;
        void s.close().catch(() => undefined);
        opening = open();
      }
    });
    s.notifications.on(DISPATCH_CHANNEL, () => options.onWake());
    try {
      await s.connect();
      await s.listenTo(DISPATCH_CHANNEL);
    } catch (error) {
      log.warn({ err: error }, 'listen_error');
      await s.close().catch(() => undefined);
      return false;
    }
    initial = false;
    subscriber = s;
    if (closed) {
      await s.close().catch(() => undefined);
      return true;
    }
    up = true;
    log.info({ channel: DISPATCH_CHANNEL }, 'listen_connected');
    options.onWake();
    return true;
  };

  // pg-listen recovers a lost connection, but not a first connect that fails: retry that here.
  async function open(): Promise<void> {
    for (let attempt = 0; !closed && !(await connectOnce()); attempt++) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryDelay(attempt));
        cancelRetry = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
  let opening = open();

  return {
    listening: () => up,
    async close() {
      closed = true;
      up = false;
      cancelRetry?.();
      await opening;
      await subscriber?.close().catch(() => undefined);
    },
  };
}
