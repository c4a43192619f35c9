import type { Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import { perform } from '../db/operation.js';
import { forgetProcesses } from '../domain/processes/processes.js';
import { PURGED_TABLES, PURGE_BATCH_ROWS, SWEEPER_PURGE_BUDGET_MS, purgeLedger } from '../domain/retention/purge.js';
import { openPurgeArchive } from '../domain/retention/purge-archive.js';
import { alertThresholds, countAlerts } from '../domain/monitor/monitor-summary.js';
import { countStalls } from '../domain/monitor/stalls.js';
import { forgetAlertOccurrencesOperation, notifyAlertsOperation, type RecordedNotifications } from '../domain/notifications/occurrences.js';
import { countPoolUse } from '../domain/pools/source-pools.js';
import { countBacklog } from '../domain/sweeper/gauges.js';
import { SWEEPER_ACTOR } from '../domain/sweeper/settings.js';
import { sweepOnceOperation, type SweepResult } from '../domain/sweeper/sweep.js';
import { setLineageDeliveryOperation } from '../domain/lineage/lineage-switch.js';
import type { Logger } from '../logging/logger.js';
import type { WorkerMetrics } from './metrics.js';
import { createPollLoop } from './poll-loop.js';

const FORGOTTEN_OCCURRENCES_PER_CYCLE = 500;

export interface SweeperOptions {
  config: Config;
  db: Db;
  log: Logger;
  metrics: WorkerMetrics;
}

export interface Sweeper {
  /**
   * One cycle: a sweep (null when another sweeper holds this cycle), the alert notifications (every worker
   * records the occurrences it sees first), then at most SWEEPER_PURGE_BUDGET_MS of ledger purging (every
   * worker purges: concurrent purgers skip each other's runs), then the gauges.
   */
  cycle(): Promise<SweepResult | null>;
  start(): void;
  /** Lets the cycle in flight finish. */
  stop(): Promise<void>;
  /** How long the cycle in flight has been running, if one is: what a stop still waits for. */
  cycling(): { forMs: number } | null;
  /** When the last cycle finished (whether or not it found work), for the process's heartbeat. */
  lastCycleAt(): Date | null;
}

export function createSweeper(options: SweeperOptions): Sweeper {
  const { config, db, metrics } = options;
  const log = options.log.child({ component: SWEEPER_ACTOR });

  async function refreshGauges(): Promise<void> {
    const counts = await countBacklog(db.pool);
    for (const [status, n] of Object.entries(counts.dispatches)) metrics.backlog.set({ status }, n);
    for (const [status, n] of Object.entries(counts.runs)) metrics.activeRuns.set({ status }, n);
    for (const { kind, severity, count } of await countAlerts(db.prisma, alertThresholds(config)))
      metrics.alerts.set({ kind, severity }, count);
    const stalls = await countStalls(db.prisma, config.monitor.stallAfter);
    metrics.stalledRuns.set(stalls.runs);
    metrics.stalledPartitions.set(stalls.partitions);
    for (const pool of await countPoolUse(db.pool)) {
      metrics.poolRunning.set({ pool: pool.name }, pool.running);
      metrics.poolLimit.set({ pool: pool.name }, pool.maxRunning);
    }
  }

  /** Runs that ended more than retention.ledger ago lose their details, a bounded share per cycle. */
  async function purgeExpiredLedger(): Promise<void> {
    const before = new Date(Date.now() - config.retention.ledger);
    const archive = config.retention.exportDir === null ? undefined : openPurgeArchive(config.retention.exportDir, before);
    const summary = await purgeLedger(db, { before, batchRows: PURGE_BATCH_ROWS, budgetMs: SWEEPER_PURGE_BUDGET_MS, archive });
    const exported = await archive?.finish(summary.complete);
    if (exported)
      log.info({ dir: exported.dir, batches: exported.manifest.batches.length, bytes: archive!.bytesWritten() }, 'ledger_exported');
    const rows = PURGED_TABLES.reduce((n, table) => n + summary.deleted[table], 0);
    if (rows === 0 && summary.purgedRuns.length === 0) return;
    metrics.purgedRuns.inc(summary.purgedRuns.length);
    for (const table of PURGED_TABLES) metrics.purgedRows.inc({ table }, summary.deleted[table]);
    for (const run of summary.purgedRuns)
      log.child({ runId: run.runId }).info({ status: run.status, completedAt: run.completedAt }, 'run_purged');
    log.info(
      { before, runs: summary.purgedRuns.length, rows: summary.deleted, batches: summary.batches, complete: summary.complete },
      'ledger_purged',
    );
  }

  const receivers = config.alerts.webhooks.map(({ name, kinds }) => ({ name, kinds }));

  /**
   * The alerts present now, each occurrence not seen before recorded and put into the outbox once per receiver
   * (src/domain/notifications/). Nothing without alerts.webhooks. Not under the sweep's lock: whichever worker
   * sees an occurrence first records it, and the others' inserts of it do nothing.
   */
  async function notifyAlerts(): Promise<RecordedNotifications | null> {
    if (receivers.length === 0) return null;
    const notified = await perform(db, notifyAlertsOperation, { thresholds: alertThresholds(config), receivers });
    for (const name of notified.newReceivers) log.info({ receiver: name }, 'alert_receiver_registered');
    for (const call of notified.enqueued) {
      metrics.alertWebhooks.inc({ kind: call.kind });
      log
        .child({ dispatchId: call.dispatchId, receiver: call.receiver, dedupKey: call.dedupKey })
        .info({ kind: call.kind }, 'alert_webhook_enqueued');
    }
    return notified;
  }

  /** lineage.enabled, told to the database each cycle: the trigger that writes the events reads it there. */
  async function switchLineage(): Promise<void> {
    const { enabled } = config.lineage;
    if (await perform(db, setLineageDeliveryOperation, enabled)) log.info({ enabled }, 'lineage_switched');
  }

  /** Occurrences older than retention.ledger, with their calls, a bounded batch per cycle. */
  async function forgetOldOccurrences(): Promise<void> {
    const before = new Date(Date.now() - config.retention.ledger);
    const forgotten = await perform(db, forgetAlertOccurrencesOperation, { before, limit: FORGOTTEN_OCCURRENCES_PER_CYCLE });
    if (forgotten > 0) log.info({ before, occurrences: forgotten }, 'alert_occurrences_forgotten');
  }

  async function cycle(): Promise<SweepResult | null> {
    const result = await perform(db, sweepOnceOperation, config);
    if (result) {
      for (const { rule, error } of result.failures) log.error({ rule, err: error }, 'sweeper_rule_error');
      for (const { action, runId, partitionId, dispatchId, jobId, businessDate } of result.acted) {
        metrics.sweeperActions.inc({ rule: action });
        log
          .child({ runId: runId ?? undefined, partitionId: partitionId ?? undefined, dispatchId, jobId, businessDate })
          .info({ action }, 'sweeper_action');
      }
      if (result.acted.length) log.warn({ actions: result.actions }, 'sweeper_actions');
    }
    // a failing step must not stop the others; the next cycle does it again
    await switchLineage().catch((error: unknown) => log.error({ err: error }, 'lineage_switch_error'));
    await notifyAlerts().catch((error: unknown) => log.error({ err: error }, 'alert_notify_error'));
    await forgetOldOccurrences().catch((error: unknown) => log.error({ err: error }, 'alert_forget_error'));
    await purgeExpiredLedger().catch((error: unknown) => log.error({ err: error }, 'ledger_purge_error'));
    const forgotten = await forgetProcesses(db.prisma).catch((error: unknown) => log.error({ err: error }, 'forget_processes_error'));
    if (forgotten) log.info({ processes: forgotten }, 'processes_forgotten');
    await refreshGauges();
    return result;
  }

  const loop = createPollLoop({
    pass: cycle,
    intervalMs: config.recovery.sweeperInterval,
    onError: (error) => log.error({ err: error }, 'sweeper_error'),
  });

  return {
    cycle,
    start: loop.start,
    stop: loop.stop,
    cycling: loop.passing,
    lastCycleAt: loop.lastPassAt,
  };
}
