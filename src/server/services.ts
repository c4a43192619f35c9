import type { Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import type { ApiMetrics } from './metrics.js';

/** What resolvers reach through the context: the database, the configuration and the process's metrics. */
export interface Services {
  db: Db;
  config: Config;
  metrics: ApiMetrics;
}
