// `load-control work [--metrics-port PORT]`: the worker alone, the dispatcher and the sweeper.
import { Registry } from 'prom-client';
import { ConfigError } from '../config/config.js';
import { checkDatabase } from '../db/health.js';
import { collectProcessMetrics, observeRunLockWaits } from '../server/metrics.js';
import { serveWorkerHealth } from '../worker/health-server.js';
import { asProcess, openServiceDatabase, startProcessHeartbeat, startWorkerLoops, type Command } from './process.js';

export const work: Command = {
  usage: `  work                  the worker: dispatcher and sweeper (needs nifi.receiverUrl);
                        --metrics-port PORT also serves /healthz, /readyz and /metrics`,
  run: (invocation) =>
    asProcess(invocation, async (context) => {
      const { config, log, shutdown, options } = context;
      if (!config.nifi.receiverUrl) {
        throw new ConfigError([
          "config: nifi.receiverUrl: required by the worker (set LC_NIFI__RECEIVER_URL to the URL of NiFi's control receiver)",
        ]);
      }
      const metricsPort = options['metrics-port'] === undefined ? undefined : Number(options['metrics-port']);
      if (metricsPort !== undefined && !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort <= 65535)) {
        throw new ConfigError(['--metrics-port: must be a port number (0 picks a free one)']);
      }
      const { db } = await openServiceDatabase(context, { start: false, sessions: true });
      const registry = new Registry();
      collectProcessMetrics(registry);
      observeRunLockWaits(registry);
      const worker = startWorkerLoops(context, { config, db, registry });
      startProcessHeartbeat(context, { role: 'work', db, registry, worker });
      if (metricsPort !== undefined) {
        // it keeps serving while the worker drains: /readyz answers 503, /metrics still answer
        const ready = async () => !shutdown.stopping() && worker.listening() && (await checkDatabase(db.pool)).ok;
        const health = await serveWorkerHealth({ registry, ready, port: metricsPort, host: config.server.host });
        shutdown.close('health-server', () => health.close());
        log.info({ port: health.port }, 'worker_metrics_listening');
      }
      return 'running';
    }),
};
