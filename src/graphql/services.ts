import type { Counter } from 'prom-client';
import type { Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import type { ChunkReporter } from '../domain/chunks/chunk-reporter.js';
import type { Realtime } from '../realtime/realtime.js';

/** What resolvers reach through the context: the database, the configuration, the process's metrics and realtime. */
export interface Services {
  db: Db;
  config: Config;
  /** The process's metrics a resolver counts into (the server's ApiMetrics holds them). */
  metrics: { chunkReports: Counter<'result'> };
  /** reportChunk's group commit: reports that arrive together share one statement and one commit. */
  chunkReporter: ChunkReporter;
  /** Subscriptions' feeds; null in a process that does not run the LISTEN connection. */
  realtime: Realtime | null;
}
