import type { Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import type { Listener } from '../db/listener.js';
import type { Logger } from '../logging/logger.js';
import { createBackfillPump } from './backfill-pump.js';
import { createDispatcher, type Dispatcher } from './dispatcher.js';
import { createWorkerMetrics } from './metrics.js';
import { createSweeper, type Sweeper } from './sweeper.js';

export interface WorkerOptions {
  config: Config;
  db: Db;
  log: Logger;
  /** Where the worker's metrics are registered: the API's registry when both run in one process. */
  registry: Registry;
  /** The process's LISTEN connection (the dispatcher opens its own without it). */
  listener?: Listener;
}

export interface Worker {
  /**
   * Lets the calls on the wire and the sweep in flight finish, gives back the leases of calls not sent,
   * then closes its own LISTEN connection.
   */
  stop(): Promise<void>;
  /** What a stop still waits for. */
  open(): { sending: ReturnType<Dispatcher['sending']>; sweeping: ReturnType<Sweeper['cycling']> };
  /** The dispatcher's LISTEN connection is up (a readiness check). */
  listening(): boolean;
  /** Re-reads nifi.tls's files (SIGHUP); false when a file will not do (logged). */
  reloadTls(): boolean;
  /** It delivers NiFi's calls (nifi.receiverUrl is set); every worker delivers the gates', alerts' and lineage calls. */
  dispatching: boolean;
  /** When the sweeper last finished a cycle. */
  lastSweepAt(): Date | null;
}

/**
 * The worker (ref §5): the outbox dispatcher and the sweeper, two loops over the domain functions. Without
 * nifi.receiverUrl (`start` on a machine with no NiFi) NiFi's calls wait in the outbox; the gates', alerts' and
 * lineage calls are delivered all the same.
 */
export function startWorker(options: WorkerOptions): Worker {
  const { config, db, log } = options;
  const metrics = createWorkerMetrics(options.registry);
  const dispatcher = createDispatcher({ config, db, log, metrics, listener: options.listener });
  const sweeper = createSweeper({ config, db, log, metrics });
  const backfillPump = createBackfillPump({ config, db, log });
  dispatcher.start();
  sweeper.start();
  backfillPump.start();
  const alertReceivers = config.alerts.webhooks.map((w) => w.name);
  if (config.nifi.receiverUrl) {
    log.info({ receiver: new URL(config.nifi.receiverUrl).origin, recoveryMode: config.recovery.mode, alertReceivers }, 'worker_started');
  } else {
    log.warn(
      {
        missing: 'nifi.receiverUrl',
        effect: "NiFi's calls wait in the outbox; gates', alerts' and lineage calls are delivered; the sweeper runs",
        alertReceivers,
      },
      'nifi_calls_not_delivered',
    );
  }
  return {
    async stop() {
      log.info('worker_stopping');
      await Promise.all([dispatcher.stop(), sweeper.stop(), backfillPump.stop()]);
      log.info('worker_stopped');
    },
    listening: () => dispatcher.listening(),
    reloadTls: () => dispatcher.reloadTls(),
    open: () => ({ sending: dispatcher.sending(), sweeping: sweeper.cycling() }),
    dispatching: Boolean(config.nifi.receiverUrl),
    lastSweepAt: () => sweeper.lastCycleAt(),
  };
}
