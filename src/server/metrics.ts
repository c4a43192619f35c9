import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { runLockWaits } from '../domain/runs/lock-run.js';

/** This process's Prometheus metrics (ref §9.1, with an lc_ prefix). */
export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'operation' | 'status'>;
  requestSeconds: Histogram<'operation'>;
  chunkReports: Counter<'result'>;
  chunkReportBatchSize: Histogram;
}

/** prom-client's gauges of active handles, requests and resources end in _total, which promtool refuses for a gauge. */
const MISNAMED_DEFAULT_METRICS = ['lc_nodejs_active_handles_total', 'lc_nodejs_active_requests_total', 'lc_nodejs_active_resources_total'];

/** The process's own figures (CPU, memory, event-loop lag, GC), under the lc_ prefix, on `registry`. */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'lc_' });
  for (const name of MISNAMED_DEFAULT_METRICS) registry.removeSingleMetric(name);
}

/** lc_run_lock_wait_seconds (ref §9.1): how long transitions waited for their run's row, on `registry`. */
export function observeRunLockWaits(registry: Registry): void {
  const histogram = new Histogram({
    name: 'lc_run_lock_wait_seconds',
    help: 'Time to lock a run row for a transition (failPartition, failRun, validation, publish, operator actions, sweeper)',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  runLockWaits.subscribe((message) => histogram.observe((message as { seconds: number }).seconds));
}

/** `processMetrics: false` in an execution thread: the process's own figures are the main thread's to report. */
export function createApiMetrics({ processMetrics = true }: { processMetrics?: boolean } = {}): ApiMetrics {
  const registry = new Registry();
  if (processMetrics) collectProcessMetrics(registry);
  observeRunLockWaits(registry);
  return {
    registry,
    requests: new Counter({
      name: 'lc_requests_total',
      help: 'GraphQL requests by root field and HTTP status',
      labelNames: ['operation', 'status'],
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'lc_request_seconds',
      help: 'GraphQL request duration by root field',
      labelNames: ['operation'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    chunkReports: new Counter({
      name: 'lc_chunk_reports_total',
      help: 'Chunk reports by effect: progress, ignored, partition_success, partition_failed, run_complete',
      labelNames: ['result'],
      registers: [registry],
    }),
    chunkReportBatchSize: new Histogram({
      name: 'lc_chunk_report_batch_size',
      help: 'Chunk reports sent to the database in one statement (1: alone, no other report was waiting)',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers: [registry],
    }),
  };
}
