// Worker pieces (dispatcher, sweeper) wired to a test API's database and a loopback receiver.
import { Registry } from 'prom-client';
import type { Config } from '../../src/config/config.js';
import { createDb, type Db } from '../../src/db/client.js';
import { createLogger } from '../../src/logging/logger.js';
import { createDispatcher, type Dispatcher } from '../../src/worker/dispatcher.js';
import { createWorkerMetrics, type WorkerMetrics } from '../../src/worker/metrics.js';
import { createSweeper, type Sweeper } from '../../src/worker/sweeper.js';
import type { ConfigOverrides, TestApi } from './api.js';
import type { Receiver } from './receiver.js';

export const quietLog = createLogger({ level: 'fatal', format: 'json' }, 'test-worker');

/** Ref §10 test_dispatcher's settings: 3 attempts, backoff 5 s..1 min, a 60 s poll (only LISTEN wakes). */
export function workerConfig(api: TestApi, receiver: Pick<Receiver, 'url'>, overrides: ConfigOverrides = {}): Config {
  return {
    ...api.config,
    nifi: { ...api.config.nifi, receiverUrl: receiver.url, timeoutSeconds: 5, ...overrides.nifi },
    dispatch: {
      ...api.config.dispatch,
      maxAttempts: 3,
      backoffMin: 5_000,
      backoffMax: 60_000,
      pollInterval: 60_000,
      ...overrides.dispatch,
    },
    recovery: { ...api.config.recovery, ...overrides.recovery },
  };
}

export interface TestWorkerParts {
  config: Config;
  db: Db;
  registry: Registry;
  metrics: WorkerMetrics;
  dispatcher: Dispatcher;
  sweeper: Sweeper;
  /** Stops the dispatcher loop (if started) and closes the own connection pool (if any). */
  close(): Promise<void>;
}

/** A dispatcher and a sweeper; `ownPool` gives them their own connections, as in another process. */
export function testWorker(api: TestApi, config: Config, options: { ownPool?: boolean } = {}): TestWorkerParts {
  const db = options.ownPool ? createDb(api.database.url, { poolSize: 5 }) : api.db;
  const registry = new Registry();
  const metrics = createWorkerMetrics(registry);
  const dispatcher = createDispatcher({ config, db, log: quietLog, metrics });
  const sweeper = createSweeper({ config, db, log: quietLog, metrics });
  return {
    config,
    db,
    registry,
    metrics,
    dispatcher,
    sweeper,
    async close() {
      await dispatcher.stop();
      await sweeper.stop();
      if (options.ownPool) await db.close();
    },
  };
}

/** Makes every PENDING dispatch of the run due now, as if its backoff had passed. */
export async function makeDue(api: TestApi, runId: string): Promise<void> {
  await api.sql.query(
    `UPDATE nifi_ops.load_dispatch SET next_attempt_at = clock_timestamp() - interval '1 second'
      WHERE run_id = $1 AND status = 'PENDING'`,
    [runId],
  );
}

export async function dispatchRow(api: Pick<TestApi, 'sql'>, dispatchId: string) {
  const { rows } = await api.sql.query(
    `SELECT status, attempt_count, last_http_status, last_error, sent_at, acked_at, dead_at, cancelled_at,
            next_attempt_at > clock_timestamp() AS deferred
       FROM nifi_ops.load_dispatch WHERE dispatch_id = $1`,
    [dispatchId],
  );
  return rows[0];
}

export async function eventsNamed(api: Pick<TestApi, 'sql'>, runId: string, name: string) {
  const { rows } = await api.sql.query(
    `SELECT event_level, partition_id, error_code, message, details, actor FROM nifi_ops.load_event
      WHERE run_id = $1 AND event_name = $2 ORDER BY event_time`,
    [runId, name],
  );
  return rows;
}
