import { Counter, Gauge, type Registry } from 'prom-client';

/** The worker's Prometheus metrics (ref §9.1 with an lc_ prefix), on the registry it is given. */
export interface WorkerMetrics {
  dispatches: Counter<'type' | 'result'>;
  backlog: Gauge<'status'>;
  activeRuns: Gauge<'status'>;
  alerts: Gauge<'kind' | 'severity'>;
  stalledRuns: Gauge;
  stalledPartitions: Gauge;
  poolRunning: Gauge<'pool'>;
  poolLimit: Gauge<'pool'>;
  sweeperActions: Counter<'rule'>;
  alertWebhooks: Counter<'kind'>;
  purgedRuns: Counter;
  purgedRows: Counter<'table'>;
}

export function createWorkerMetrics(registry: Registry): WorkerMetrics {
  return {
    dispatches: new Counter({
      name: 'lc_dispatch_total',
      help: 'Outbound calls (to NiFi, gate receivers, alert webhooks) by type and result: sent, retry, dead, cancelled',
      labelNames: ['type', 'result'],
      registers: [registry],
    }),
    backlog: new Gauge({
      name: 'lc_dispatch_backlog',
      help: 'Dispatches by status (PENDING, SENT, DEAD)',
      labelNames: ['status'],
      registers: [registry],
    }),
    activeRuns: new Gauge({
      name: 'lc_active_runs',
      help: 'Runs by status (terminal statuses are reported as 0)',
      labelNames: ['status'],
      registers: [registry],
    }),
    alerts: new Gauge({
      name: 'lc_alerts',
      help: "The monitor summary's alerts by kind and severity (every kind, zeros included): what the alert rules watch",
      labelNames: ['kind', 'severity'],
      registers: [registry],
    }),
    stalledRuns: new Gauge({
      name: 'lc_stalled_runs',
      help: 'Extracting runs stalled for monitor.stallAfter (silent RUNNING partitions, or no movement at all): the STALLED_RUN alerts',
      registers: [registry],
    }),
    stalledPartitions: new Gauge({
      name: 'lc_stalled_partitions',
      help: 'RUNNING partitions of extracting runs without a heartbeat for monitor.stallAfter',
      registers: [registry],
    }),
    poolRunning: new Gauge({
      name: 'lc_pool_running',
      help: 'RUNNING partitions of each source pool\'s jobs (README "Source pools")',
      labelNames: ['pool'],
      registers: [registry],
    }),
    poolLimit: new Gauge({
      name: 'lc_pool_limit',
      help: "Each source pool's limit of RUNNING partitions; claims beyond it wait (POOL_FULL)",
      labelNames: ['pool'],
      registers: [registry],
    }),
    sweeperActions: new Counter({
      name: 'lc_sweeper_actions_total',
      help: 'Sweeper actions by rule',
      labelNames: ['rule'],
      registers: [registry],
    }),
    alertWebhooks: new Counter({
      name: 'lc_alert_webhooks_enqueued_total',
      help: 'ALERT_WEBHOOK calls put into the outbox (one per alert occurrence and receiver), by alert kind; their delivery is lc_dispatch_total{type="ALERT_WEBHOOK"}',
      labelNames: ['kind'],
      registers: [registry],
    }),
    purgedRuns: new Counter({
      name: 'lc_ledger_purged_runs_total',
      help: 'Runs whose details the sweeper purged (retention.ledger); their load_run rows stay',
      registers: [registry],
    }),
    purgedRows: new Counter({
      name: 'lc_ledger_purged_rows_total',
      help: 'Detail rows the sweeper purged (retention.ledger), by table',
      labelNames: ['table'],
      registers: [registry],
    }),
  };
}
