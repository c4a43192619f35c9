import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { behindTransactionPooler, createDb, type Db } from '../db/client.js';
import { startListener, type Listener } from '../db/listener.js';
import { readiness } from '../domain/gate/ledger.js';
import { alertThresholds, monitorSummary } from '../domain/monitor/monitor-summary.js';
import { ALERT_CHANNEL, READINESS_CHANGED_CHANNEL, RUN_CHANGED_CHANNEL, RUN_PROGRESS_CHANNEL } from '../db/channels.js';
import { MAX_ALERT_LIMIT, MonitorFeed } from './monitor-feed.js';
import { ReadinessFeed } from './readiness-feed.js';
import { RunFeed } from './run-feed.js';
import { RunProgressFeed } from './run-progress.js';
import { StatusFeed } from './status-feed.js';
import { createSharedReader } from './shared-reader.js';

/** What subscriptions reach through ctx.services.realtime. */
export interface Realtime {
  runs: RunFeed;
  progress: RunProgressFeed;
  status: StatusFeed;
  monitor: MonitorFeed;
  readiness: ReadinessFeed;
  /**
   * Connections of realtime's own for its re-reads and for resolving subscriptions' fields, so that a
   * backlog of requests waiting for the API's pool never delays what subscribers are shown; its
   * `prisma` shares each event's nested reads among the run's subscribers (shared-reader.ts).
   */
  db: Db;
  /** The LISTEN connection is up: part of /readyz. */
  listening(): boolean;
  /**
   * Ends every subscription, and from now on each new one at once: its SSE stream ends with `complete`
   * (a stopping server). Realtime's connections stay open for the fields of events still being sent.
   */
  endSubscriptions(): void;
  close(): Promise<void>;
}

export interface RealtimeOptions {
  url: string;
  config: Config;
  log: Logger;
  /**
   * The process's LISTEN connection, shared with the dispatcher (`load-control start`); without it realtime
   * opens one of its own, named REALTIME_APPLICATION_NAME in pg_stat_activity.
   */
  listener?: Listener;
  /** Size of realtime's own pool (default 4). */
  poolSize?: number;
  /** MonitorFeed timings (tests shorten them). */
  monitor?: { coalesceMs?: number; refreshMs?: number };
}

export const REALTIME_APPLICATION_NAME = 'load-control realtime';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Realtime for one process: committed change → NOTIFY (ids only) → this process's one LISTEN
 * connection → the feeds, which re-read what their subscribers show and push it to their streams.
 */
export function startRealtime(options: RealtimeOptions): Realtime {
  const { config } = options;
  const db = createDb(options.url, {
    poolSize: options.poolSize ?? 4,
    timeouts: config.database,
    transactionPooler: behindTransactionPooler(config),
  });
  const log = options.log.child({ component: 'realtime' });
  const runs = new RunFeed(db.prisma, log);
  // its reads are its own (deltas), never shared with runChanged's subscribers through the shared reader
  const progress = new RunProgressFeed(db.prisma, db.pool, log);
  const monitor = new MonitorFeed({
    read: () =>
      monitorSummary(db.prisma, {
        alertLimit: MAX_ALERT_LIMIT,
        recovery: alertThresholds(config),
        retention: config.cleanup,
        maxBatch: config.cleanup.maxBatch,
      }),
    log,
    ...options.monitor,
  });
  const readinessFeed = new ReadinessFeed((consumer, businessDate) => readiness(db.prisma, consumer, businessDate), log);
  const listener =
    options.listener ??
    startListener({
      url: config.database.directUrl ?? options.url,
      log,
      applicationName: REALTIME_APPLICATION_NAME,
      timeouts: config.database,
    });
  const status = new StatusFeed(listener.connected());
  listener.route({
    channels: [RUN_CHANGED_CHANNEL, RUN_PROGRESS_CHANNEL, ALERT_CHANNEL],
    onNotification(channel, payload) {
      if (channel === ALERT_CHANNEL) {
        monitor.changed();
        return;
      }
      if (!UUID.test(payload)) return;
      runs.changed(payload.toLowerCase());
      progress.changed(payload.toLowerCase());
      // progress moves no count of the summary; staleness is caught by the feed's own refresh
      if (channel === RUN_CHANGED_CHANNEL) monitor.changed();
    },
    onLost: (at) => status.set(false, at),
    onListening(lostAt) {
      status.set(true);
      if (!lostAt) return;
      void runs.resync(lostAt);
      progress.resync();
      monitor.resync();
    },
  });
  listener.route({
    channels: [READINESS_CHANGED_CHANNEL],
    onNotification: (_channel, payload) => readinessFeed.changed(payload),
    onListening(lostAt) {
      if (lostAt) readinessFeed.resync();
    },
  });
  return {
    runs,
    progress,
    status,
    monitor,
    readiness: readinessFeed,
    db: { ...db, prisma: createSharedReader(db.prisma, (runId) => runs.deliveredAt(runId)) },
    listening: () => listener.connected(),
    endSubscriptions() {
      runs.close();
      progress.close();
      status.close();
      monitor.close();
      readinessFeed.close();
    },
    async close() {
      runs.close();
      progress.close();
      status.close();
      monitor.close();
      readinessFeed.close();
      if (!options.listener) await listener.close();
      await db.close();
    },
  };
}
