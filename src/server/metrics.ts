import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/** This process's Prometheus metrics (ref §9.1, with an lc_ prefix). */
export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'operation' | 'status'>;
  requestSeconds: Histogram<'operation'>;
  chunkReports: Counter<'result'>;
  chunkReportBatchSize: Histogram;
}

/** `processMetrics: false` in an execution thread: the process's own figures are the main thread's to report. */
export function createApiMetrics({ processMetrics = true }: { processMetrics?: boolean } = {}): ApiMetrics {
  const registry = new Registry();
  if (processMetrics) collectDefaultMetrics({ register: registry, prefix: 'lc_' });
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
