// Alert occurrences (src/domain/notifications/occurrences.ts): which alerts the sweeper's notification step records
// and puts into the outbox for the configured receivers, and when it forgets them. Their delivery by the worker to
// loopback receivers is in test/api/notifications/notifications.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { alertThresholds, readAlerts } from '../../../src/domain/monitor/monitor-summary.js';
import {
  type AlertReceiverSubscription,
  forgetAlertOccurrences,
  NOTIFIED_ALERTS_PER_CYCLE,
  notifyAlertsOperation,
} from '../../../src/domain/notifications/occurrences.js';
import { createdRun, type DomainTest, extractedRun, failedRun, startDomainTest } from '../support/fixtures.js';

/** The receivers of alerts.webhooks as the sweeper passes them: every kind, and RUN_FAILED only. */
const RECEIVERS: AlertReceiverSubscription[] = [
  { name: 'ops-generic', kinds: null },
  { name: 'ops-slack', kinds: ['RUN_FAILED'] },
];

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
  // the receivers' first cycle: what is present then is their baseline, not news
  await notify();
});
afterAll(async () => t?.close());

/** The sweeper cycle's notification step. */
function notify() {
  return perform(t.db, notifyAlertsOperation, { thresholds: alertThresholds(t.config), receivers: RECEIVERS });
}

async function failedCreated(): Promise<string> {
  const { runId } = await createdRun(t);
  await failedRun(t, runId, { message: 'no plan' });
  return runId;
}

async function webhookCalls(where: string, values: unknown[] = []) {
  const { rows } = await t.sql.query(
    `SELECT d.dispatch_id, d.receiver, d.status, d.attempt_count, d.alert_dedup_key, o.kind, o.run_id::text, o.dispatch_id::text AS alert_dispatch_id
       FROM nifi_ops.load_dispatch d JOIN nifi_ops.alert_occurrence o ON o.dedup_key = d.alert_dedup_key
      WHERE d.dispatch_type = 'ALERT_WEBHOOK' AND ${where} ORDER BY d.receiver`,
    values,
  );
  return rows;
}

describe('alert webhooks', () => {
  it('posts a streak of DEPENDENCIES_NOT_READY refusals once, however often NiFi retries, and a later streak again', async () => {
    const jobKey = 'NOTIFY_GATED_DAILY';
    const businessKey = `BK_${Date.now()}`;
    // as the gated steps record them (run-gate.ts); NiFi retries a refused step on its schedule
    const refuse = (message: string) =>
      t.sql.query(
        `INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, job_key, business_key, message, actor)
         VALUES (gen_random_uuid(), 'WARN', 'DEPENDENCIES_NOT_READY', $1, $2, $3, 'nifi-cluster')`,
        [jobKey, businessKey, message],
      );
    const gatedCalls = () =>
      webhookCalls(`o.kind = 'DEPENDENCIES_NOT_READY' AND o.job_key = $1 AND o.business_key = $2`, [jobKey, businessKey]);
    await refuse('ERP_DAILY: MISSING');
    await notify();
    await refuse('ERP_DAILY: RUNNING');
    await notify();
    const first = await gatedCalls();
    expect(first.map((c) => c.receiver)).toEqual(['ops-generic']);
    // the refused step happened: the alert clears
    await createdRun(t, { jobKey, businessKey });
    const alerts = await readAlerts(t.db.prisma, alertThresholds(t.config), NOTIFIED_ALERTS_PER_CYCLE);
    expect(alerts.filter((a) => a.kind === 'DEPENDENCIES_NOT_READY' && a.jobKey === jobKey)).toEqual([]);
    await notify();
    expect(await gatedCalls()).toHaveLength(1);
    // refused again later: a new streak
    await refuse('ERP_DAILY: FAILED');
    await notify();
    await refuse('ERP_DAILY: FAILED');
    await notify();
    const both = await gatedCalls();
    expect(both).toHaveLength(2);
    expect(new Set(both.map((c) => c.alert_dedup_key)).size).toBe(2);
  });

  it('never posts NO_DISPATCHER: it would travel through the outbox it says nobody delivers', async () => {
    const run = await extractedRun(t);
    // due for two minutes, and no process registered as a live dispatcher
    await t.sql.query(
      `UPDATE nifi_ops.load_dispatch SET next_attempt_at = clock_timestamp() - interval '2 minutes' WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    const alerts = await readAlerts(t.db.prisma, alertThresholds(t.config), NOTIFIED_ALERTS_PER_CYCLE);
    expect(alerts.map((a) => a.kind)).toContain('NO_DISPATCHER');
    await notify();
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.alert_occurrence WHERE kind = 'NO_DISPATCHER'`);
    expect(rows).toEqual([{ n: 0 }]);
    expect(await webhookCalls(`o.kind = 'NO_DISPATCHER'`)).toEqual([]);
  });

  it('forgets occurrences older than the retention with their finished calls, but not one still being delivered', async () => {
    const done = await failedCreated();
    const pending = await failedCreated();
    await notify();
    const doneCalls = await webhookCalls('o.run_id = $1', [done]);
    await t.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp() WHERE dispatch_id = ANY($1::uuid[])`,
      [doneCalls.map((c) => c.dispatch_id)],
    );
    await t.sql.query(`UPDATE nifi_ops.alert_occurrence SET raised_at = raised_at - interval '100 days' WHERE run_id = ANY($1::uuid[])`, [
      [done, pending],
    ]);
    const forgotten = await inTransaction(t.db, (tx) => forgetAlertOccurrences(tx, new Date(Date.now() - 90 * 86_400_000), 500));
    expect(forgotten).toBe(1);
    expect(await webhookCalls('o.run_id = $1', [done])).toEqual([]);
    expect(await webhookCalls('o.run_id = $1', [pending])).toHaveLength(2);
    const { rows } = await t.sql.query(`SELECT run_id::text FROM nifi_ops.alert_occurrence WHERE run_id = ANY($1::uuid[])`, [
      [done, pending],
    ]);
    expect(rows).toEqual([{ run_id: pending }]);
  });
});
