// Alert notifications end to end: real PostgreSQL, the worker's sweeper and dispatcher, loopback receivers. Which
// occurrences are recorded without any delivery (streaks, NO_DISPATCHER, forgetting): test/domain/notifications/.
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RESEND_DISPATCH } from '../../support/ledger-flow.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { failCreatedRun, completeRun, createRun, toPublishUnknown } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { dispatchRow, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';
import type { Config } from '../../../src/config/config.js';
import { createDb } from '../../../src/db/client.js';
import { createDispatcher } from '../../../src/worker/dispatcher.js';
import { createWorkerMetrics } from '../../../src/worker/metrics.js';
import { createSweeper } from '../../../src/worker/sweeper.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { alertThresholds, readAlerts } from '../../../src/domain/monitor/monitor-summary.js';
import { NOTIFIED_ALERTS_PER_CYCLE, recordAlertOccurrences } from '../../../src/domain/notifications/occurrences.js';

const CALLS = `query($receiver: String, $last: Int) { alertWebhookCalls(receiver: $receiver, last: $last) {
  dispatchId receiver status attemptCount lastHttpStatus lastError ackedAt deadAt
  occurrence { dedupKey kind severity message runId jobKey businessKey dispatchId partitionId consumer at raisedAt } } }`;
const SECRET = 'Bearer webhook-secret-7f3a';
/** console.publicUrl: every webhook links to its subject's page there. */
const CONSOLE_URL = 'https://load-control.example:8443/';

let api: TestApi;
let nifi: Receiver;
/** Every kind, generic JSON, a secret header. */
let generic: Receiver;
/** RUN_FAILED only, Slack's {text}. */
let slack: Receiver;
let worker: TestWorkerParts;
const extraWorkers: TestWorkerParts[] = [];

function webhooks(): Config['alerts']['webhooks'] {
  return [
    { name: 'ops-generic', url: `${generic.url}alerts`, kinds: null, headers: { Authorization: SECRET }, format: 'generic' },
    { name: 'ops-slack', url: slack.url, kinds: ['RUN_FAILED'], headers: {}, format: 'slack' },
  ];
}

function alertingConfig(overrides: Parameters<typeof workerConfig>[2] = {}, hooks = webhooks()): Config {
  const config = workerConfig(api, nifi, overrides);
  return { ...config, alerts: { webhooks: hooks }, console: { ...config.console, publicUrl: CONSOLE_URL } };
}

function extraWorker(config: Config, options: { ownPool?: boolean } = {}): TestWorkerParts {
  const w = testWorker(api, config, options);
  extraWorkers.push(w);
  return w;
}

async function failedRun(): Promise<string> {
  const { runId } = await createRun(api);
  await failCreatedRun(api, runId);
  return runId;
}

async function webhookCalls(where: string, values: unknown[] = []) {
  const { rows } = await api.sql.query(
    `SELECT d.dispatch_id, d.receiver, d.status, d.attempt_count, d.alert_dedup_key, o.kind, o.run_id::text, o.dispatch_id::text AS alert_dispatch_id
       FROM nifi_ops.load_dispatch d JOIN nifi_ops.alert_occurrence o ON o.dedup_key = d.alert_dedup_key
      WHERE d.dispatch_type = 'ALERT_WEBHOOK' AND ${where} ORDER BY d.receiver`,
    values,
  );
  return rows;
}

/** Makes every PENDING webhook call due now, as if its backoff had passed. */
async function makeWebhooksDue(): Promise<void> {
  await api.sql.query(
    `UPDATE nifi_ops.load_dispatch SET next_attempt_at = clock_timestamp() - interval '1 second'
      WHERE dispatch_type = 'ALERT_WEBHOOK' AND status = 'PENDING'`,
  );
}

beforeAll(async () => {
  api = await startTestApi();
  [nifi, generic, slack] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  worker = testWorker(api, alertingConfig());
});
afterEach(async () => {
  for (const r of [nifi, generic, slack]) r.reset();
  await Promise.all(extraWorkers.splice(0).map((w) => w.close()));
  // leave nothing due for the next test
  await api.sql.query(
    `UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp() WHERE status IN ('PENDING', 'SENT')`,
  );
});
afterAll(async () => {
  await worker?.close();
  await Promise.all([nifi?.close(), generic?.close(), slack?.close()]);
  await api?.close();
});

describe('alert webhooks', () => {
  // first in the file: the receivers are configured for the first time here
  it('sends nothing for the alerts present when a receiver is first configured, then each new occurrence once per receiver', async () => {
    const before = await failedRun();
    const first = await worker.sweeper.cycle();
    expect(first).not.toBeNull();
    expect(await webhookCalls('true')).toEqual([]);
    const { rows: receivers } = await api.sql.query(`SELECT name FROM nifi_ops.alert_receiver ORDER BY name`);
    expect(receivers.map((r) => r.name)).toEqual(['ops-generic', 'ops-slack']);
    // the baseline is recorded all the same: it is not news on the next cycle either
    const { rows: baseline } = await api.sql.query(`SELECT kind FROM nifi_ops.alert_occurrence WHERE run_id = $1`, [before]);
    expect(baseline).toEqual([{ kind: 'RUN_FAILED' }]);

    const runId = await failedRun();
    await worker.sweeper.cycle();
    const calls = await webhookCalls('o.run_id = $1', [runId]);
    expect(calls.map((c) => [c.receiver, c.status, c.kind])).toEqual([
      ['ops-generic', 'PENDING', 'RUN_FAILED'],
      ['ops-slack', 'PENDING', 'RUN_FAILED'],
    ]);
    expect(calls[0].alert_dedup_key).toBe(calls[1].alert_dedup_key);
    expect(calls[0].alert_dedup_key).toMatch(/^RUN_FAILED-[0-9a-f]{40}$/);

    expect(await worker.dispatcher.dispatchOnce()).toBe(2);
    const [call] = generic.calls;
    expect(generic.calls).toHaveLength(1);
    expect(call!.path).toBe('/nifi-control/alerts');
    expect(call!.headers.authorization).toBe(SECRET);
    expect(call!.headers['idempotency-key']).toBe(calls[0].alert_dedup_key);
    expect(call!.headers['x-dispatch-id']).toBe(calls[0].dispatch_id);
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.body).toEqual({
      dedupKey: calls[0].alert_dedup_key,
      kind: 'RUN_FAILED',
      severity: 'ERROR',
      message: 'BAD_PLAN no plan',
      runId,
      jobKey: 'ORACLE_INSP_DTL_DAILY',
      businessKey: expect.stringMatching(/^BK_/),
      status: 'FAILED_MANIFEST',
      dispatchId: null,
      partitionId: null,
      consumer: null,
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      raisedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      // the run's page in the console (console.publicUrl, its trailing slash dropped)
      link: `https://load-control.example:8443/runs/${runId}`,
    });
    expect(slack.calls).toHaveLength(1);
    expect(slack.calls[0]!.headers.authorization).toBeUndefined();
    expect(slack.calls[0]!.headers['idempotency-key']).toBe(calls[1].alert_dedup_key);
    expect(slack.calls[0]!.body).toEqual({
      text: expect.stringMatching(
        new RegExp(
          `^\\[ERROR\\] RUN_FAILED \\(job ORACLE_INSP_DTL_DAILY, business key BK_\\w+, run ${runId}\\): BAD_PLAN no plan — raised \\S+ — https://load-control\\.example:8443/runs/${runId}$`,
        ),
      ),
    });
    // a receiver's 2xx is the acknowledgement
    for (const c of calls)
      expect(await dispatchRow(api, c.dispatch_id)).toMatchObject({ status: 'ACKED', attempt_count: 1, last_http_status: 202 });

    // the alert is still there: the next cycles see the same occurrence and send nothing
    await worker.sweeper.cycle();
    await worker.sweeper.cycle();
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
    expect(await webhookCalls('o.run_id = $1', [runId])).toHaveLength(2);
    expect(generic.calls).toHaveLength(1);
    expect(slack.calls).toHaveLength(1);
    const metrics = await worker.registry.getSingleMetricAsString('lc_alert_webhooks_enqueued_total');
    expect(metrics).toContain('lc_alert_webhooks_enqueued_total{kind="RUN_FAILED"} 2');
    const sent = await worker.registry.getSingleMetricAsString('lc_dispatch_total');
    expect(sent).toContain('lc_dispatch_total{type="ALERT_WEBHOOK",result="sent"} 2');
  });

  it('sends a receiver only the kinds it lists', async () => {
    const run = await toPublishUnknown(api);
    await worker.sweeper.cycle();
    const calls = await webhookCalls('o.run_id = $1', [run.runId]);
    expect(calls.map((c) => [c.receiver, c.kind])).toEqual([['ops-generic', 'PUBLISH_UNKNOWN']]);
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    expect(generic.calls.map((c) => [c.body.kind, c.body.runId])).toEqual([['PUBLISH_UNKNOWN', run.runId]]);
    expect(slack.calls).toHaveLength(0);
  });

  it('retries a receiver that answers 5xx after the backoff, with the same Idempotency-Key, until it takes the call', async () => {
    generic.script({ status: 503, body: 'down for maintenance' }, { status: 502 });
    const runId = await failedRun();
    await worker.sweeper.cycle();
    const [call] = await webhookCalls(`o.run_id = $1 AND d.receiver = 'ops-generic'`, [runId]);
    expect(await worker.dispatcher.dispatchOnce()).toBe(2);
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_http_status: 503,
      last_error: 'down for maintenance',
      deferred: true,
    });
    // not before its backoff
    expect(await worker.dispatcher.dispatchOnce()).toBe(0);
    await makeWebhooksDue();
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({ status: 'PENDING', attempt_count: 2, last_http_status: 502 });
    await makeWebhooksDue();
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({
      status: 'ACKED',
      attempt_count: 3,
      last_http_status: 202,
      last_error: null,
    });
    const keys = generic.callsFor(call.dispatch_id).map((c) => c.headers['idempotency-key']);
    expect(keys).toEqual([call.alert_dedup_key, call.alert_dedup_key, call.alert_dedup_key]);
    expect(slack.calls).toHaveLength(1);
  });

  it('retries a call the receiver does not answer within nifi.timeoutSeconds', async () => {
    const impatient = extraWorker(alertingConfig({ nifi: { timeoutSeconds: 0.3 } }));
    generic.script({ status: 200, delayMs: 2_000 });
    const runId = await failedRun();
    await impatient.sweeper.cycle();
    const [call] = await webhookCalls(`o.run_id = $1 AND d.receiver = 'ops-generic'`, [runId]);
    await impatient.dispatcher.dispatchOnce();
    const row = await dispatchRow(api, call.dispatch_id);
    expect(row).toMatchObject({ status: 'PENDING', attempt_count: 1, last_http_status: null, deferred: true });
    expect(row.last_error).toMatch(/timeout/);
    await makeWebhooksDue();
    expect(await impatient.dispatcher.dispatchOnce()).toBe(1);
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({ status: 'ACKED', attempt_count: 2 });
    expect(generic.callsFor(call.dispatch_id)).toHaveLength(2);
  });

  it('gives up on a receiver that never recovers: DEAD, shown as an alert, and no webhook about the dead webhook', async () => {
    generic.setDefault({ status: 500, body: 'broken' });
    const runId = await failedRun();
    await worker.sweeper.cycle();
    const [call] = await webhookCalls(`o.run_id = $1 AND d.receiver = 'ops-generic'`, [runId]);
    await worker.dispatcher.dispatchOnce();
    for (let attempt = 2; attempt <= 3; attempt++) {
      await makeWebhooksDue();
      expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    }
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({
      status: 'DEAD',
      attempt_count: 3,
      last_http_status: 500,
      last_error: 'max attempts reached: broken',
      dead_at: expect.any(Date),
    });
    const { rows: events } = await api.sql.query(
      `SELECT event_level, message, details FROM nifi_ops.load_event WHERE event_name = 'DISPATCH_DEAD' AND details->>'dispatchId' = $1`,
      [call.dispatch_id],
    );
    expect(events).toEqual([
      {
        event_level: 'ERROR',
        message: 'max attempts reached: broken',
        details: expect.objectContaining({ type: 'ALERT_WEBHOOK', receiver: 'ops-generic', dedupKey: call.alert_dedup_key }),
      },
    ]);
    const alerts = await readAlerts(api.db.prisma, alertThresholds(api.config), 500);
    expect(alerts.filter((a) => a.dispatchId === call.dispatch_id)).toEqual([
      expect.objectContaining({ kind: 'DISPATCH_DEAD', message: 'ALERT_WEBHOOK to ops-generic: max attempts reached: broken' }),
    ]);
    // the DEAD webhook is an alert, but no occurrence and no call: a receiver that is down must not feed itself
    await worker.sweeper.cycle();
    expect(await webhookCalls('o.dispatch_id = $1', [call.dispatch_id])).toEqual([]);
    const { rows } = await api.sql.query(`SELECT 1 FROM nifi_ops.alert_occurrence WHERE dispatch_id = $1`, [call.dispatch_id]);
    expect(rows).toEqual([]);
    // an operator may send it again once the receiver is mended
    generic.setDefault(202);
    const resent = await api.gql(
      RESEND_DISPATCH,
      { input: { dispatchId: call.dispatch_id, reason: 'receiver mended' } },
      { token: 'operator' },
    );
    expect(resent.body.data!.resendDispatch).toEqual({ dispatchId: call.dispatch_id, status: 'PENDING' });
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({ status: 'ACKED', attempt_count: 1 });
  });

  it('shows one broken receiver as one grouped alert, however many of its webhooks die', async () => {
    generic.setDefault({ status: 410, body: 'ok' });
    // the receivers registered (their baseline) when this test runs alone
    await worker.sweeper.cycle();
    const runIds: string[] = [];
    for (let i = 0; i < 12; i++) runIds.push(await failedRun());
    await worker.sweeper.cycle();
    while ((await worker.dispatcher.dispatchOnce()) > 0);
    expect(await webhookCalls(`o.run_id = ANY($1) AND d.receiver = 'ops-generic' AND d.status = 'DEAD'`, [runIds])).toHaveLength(12);
    const res = await api.gql<{ monitorSummary: { alertGroups: Array<Record<string, unknown>> } }>(
      `{ monitorSummary { alertGroups(kinds: [DISPATCH_DEAD]) { groupKey causeType cause count latest { message } } } }`,
      {},
      { token: 'viewer' },
    );
    expect(res.body.data!.monitorSummary.alertGroups).toEqual([
      {
        groupKey: 'DISPATCH_DEAD:RECEIVER:ops-generic',
        causeType: 'RECEIVER',
        cause: 'ops-generic',
        count: expect.any(Number),
        latest: { message: 'ALERT_WEBHOOK to ops-generic: ok' },
      },
    ]);
    expect(res.body.data!.monitorSummary.alertGroups[0]!.count).toBeGreaterThanOrEqual(12);
  });

  it('gives up at once on a 4xx other than 408/425/429', async () => {
    generic.script({ status: 404, body: 'no such hook' });
    const runId = await failedRun();
    await worker.sweeper.cycle();
    const [call] = await webhookCalls(`o.run_id = $1 AND d.receiver = 'ops-generic'`, [runId]);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, call.dispatch_id)).toMatchObject({
      status: 'DEAD',
      attempt_count: 1,
      last_http_status: 404,
      last_error: 'no such hook',
    });
  });

  it('posts a DISPATCH_DEAD, and again when the dispatch is resent and dies a second time: a new occurrence', async () => {
    nifi.setDefault({ status: 400, body: 'unknown flow' });
    const run = await completeRun(api);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'DEAD' });
    await worker.sweeper.cycle();
    const first = await webhookCalls('o.dispatch_id = $1', [run.dispatchId]);
    expect(first.map((c) => [c.receiver, c.kind])).toEqual([['ops-generic', 'DISPATCH_DEAD']]);
    await worker.dispatcher.dispatchOnce();
    expect(generic.calls.map((c) => [c.body.kind, c.body.dispatchId, c.body.message])).toEqual([
      ['DISPATCH_DEAD', run.dispatchId, 'VALIDATE_RUN: unknown flow'],
    ]);

    const resent = await api.gql(RESEND_DISPATCH, { input: { runId: run.runId, dispatchId: run.dispatchId } }, { token: 'operator' });
    expect(resent.body.errors).toBeUndefined();
    // PENDING again: the alert has cleared; the next cycle sees none
    await worker.sweeper.cycle();
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'DEAD' });
    await worker.sweeper.cycle();
    const both = await webhookCalls('o.dispatch_id = $1', [run.dispatchId]);
    expect(both).toHaveLength(2);
    expect(new Set(both.map((c) => c.alert_dedup_key)).size).toBe(2);
    await worker.dispatcher.dispatchOnce();
    expect(generic.calls.filter((c) => c.body.dispatchId === run.dispatchId)).toHaveLength(2);
    expect(new Set(generic.calls.map((c) => c.headers['idempotency-key'])).size).toBe(2);
  });

  it('posts a RUN_STALE once while it lasts, nothing once the run moved, and again when it stops a second time', async () => {
    const { runId } = await createRun(api);
    const stall = () =>
      api.sql.query(`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - interval '2 hours' WHERE run_id = $1`, [runId]);
    const staleCalls = () => webhookCalls(`o.run_id = $1 AND o.kind = 'RUN_STALE'`, [runId]);
    await stall();
    await worker.sweeper.cycle();
    await worker.sweeper.cycle();
    const first = await staleCalls();
    expect(first.map((c) => c.receiver)).toEqual(['ops-generic']);
    // it moves: the alert clears, and nothing is posted about that
    await api.sql.query(`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() WHERE run_id = $1`, [runId]);
    await worker.sweeper.cycle();
    expect(await staleCalls()).toHaveLength(1);
    // stopped again: a new occurrence
    await stall();
    await worker.sweeper.cycle();
    const again = await staleCalls();
    expect(again).toHaveLength(2);
    expect(new Set(again.map((c) => c.alert_dedup_key)).size).toBe(2);
    expect(await worker.dispatcher.dispatchOnce()).toBe(2);
    expect(generic.calls.map((c) => [c.body.kind, c.body.runId, c.body.status])).toEqual([
      ['RUN_STALE', runId, 'CREATED'],
      ['RUN_STALE', runId, 'CREATED'],
    ]);
  });

  it('does not send again after a restart: the occurrences are in the database, not in a process', async () => {
    const runId = await failedRun();
    await worker.sweeper.cycle();
    expect(await worker.dispatcher.dispatchOnce()).toBe(2);
    // a new worker process: its own pool, sweeper and dispatcher
    const restarted = extraWorker(alertingConfig(), { ownPool: true });
    await restarted.sweeper.cycle();
    expect(await restarted.dispatcher.dispatchOnce()).toBe(0);
    expect(await webhookCalls('o.run_id = $1', [runId])).toHaveLength(2);
    expect(generic.calls).toHaveLength(1);
    expect(slack.calls).toHaveLength(1);
  });

  it('cancels, unsent, the calls of a receiver no longer configured', async () => {
    const runId = await failedRun();
    await worker.sweeper.cycle();
    const onlyGeneric = extraWorker(alertingConfig({}, webhooks().slice(0, 1)));
    expect(await onlyGeneric.dispatcher.dispatchOnce()).toBe(1);
    const calls = await webhookCalls('o.run_id = $1', [runId]);
    expect(calls.map((c) => [c.receiver, c.status])).toEqual([
      ['ops-generic', 'ACKED'],
      ['ops-slack', 'CANCELLED'],
    ]);
    expect(await dispatchRow(api, calls[1].dispatch_id)).toMatchObject({
      last_error: 'the alert receiver ops-slack is not configured any more',
    });
    expect(slack.calls).toHaveLength(0);
  });

  it('records an occurrence once when two workers see it at the same moment (separate connections, repeated)', async () => {
    const pools = [createDb(api.database.url, { poolSize: 2 }), createDb(api.database.url, { poolSize: 2 })];
    const receivers = webhooks().map(({ name, kinds }) => ({ name, kinds }));
    try {
      for (let round = 0; round < 25; round++) {
        const runId = await failedRun();
        // both read the alerts before either records: each sees the occurrence as new
        let seen = 0;
        let bothSeen!: () => void;
        const barrier = new Promise<void>((resolve) => (bothSeen = resolve));
        const results = await Promise.all(
          pools.map((db) =>
            inTransaction(db, async (tx) => {
              const alerts = await readAlerts(tx, alertThresholds(api.config), NOTIFIED_ALERTS_PER_CYCLE);
              expect(alerts.some((a) => a.runId === runId)).toBe(true);
              if (++seen === 2) bothSeen();
              await barrier;
              return recordAlertOccurrences(tx, alerts, receivers);
            }),
          ),
        );
        const recorded = results.flatMap((r) => r.recorded).filter((o) => o.kind === 'RUN_FAILED');
        expect(recorded, `round ${round}`).toHaveLength(1);
        const enqueued = results.flatMap((r) => r.enqueued);
        expect(enqueued.map((e) => e.receiver).sort(), `round ${round}`).toEqual(['ops-generic', 'ops-slack']);
        expect(await webhookCalls('o.run_id = $1', [runId]), `round ${round}`).toHaveLength(2);
      }
    } finally {
      await Promise.all(pools.map((db) => db.close()));
    }
    // and the two workers' sweeper cycles themselves, side by side
    const a = extraWorker(alertingConfig(), { ownPool: true });
    const b = extraWorker(alertingConfig(), { ownPool: true });
    for (let round = 0; round < 10; round++) {
      const runId = await failedRun();
      await Promise.all([a.sweeper.cycle(), b.sweeper.cycle()]);
      expect(await webhookCalls('o.run_id = $1', [runId]), `cycle round ${round}`).toHaveLength(2);
    }
  }, 120_000);

  it('logs neither the URL of a receiver nor its headers, even at trace level', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const config = alertingConfig();
    const metrics = createWorkerMetrics(new Registry());
    const dispatcher = createDispatcher({ config, db: api.db, log, metrics });
    const sweeper = createSweeper({ config, db: api.db, log, metrics });
    generic.script({ status: 503, body: 'busy' });
    const runId = await failedRun();
    await sweeper.cycle();
    await dispatcher.dispatchOnce();
    await makeWebhooksDue();
    await dispatcher.dispatchOnce();
    expect(generic.calls.filter((c) => c.body.runId === runId)).toHaveLength(2);
    const text = lines.join('');
    for (const event of ['alert_webhook_enqueued', 'dispatch_sending', 'dispatch_retry', 'dispatch_sent']) expect(text).toContain(event);
    expect(text).toContain('"receiver":"ops-generic"');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(generic.url);
    expect(text).not.toContain(slack.url);
    await dispatcher.stop();
    await sweeper.stop();
  });

  it('lists the calls for operators by receiver name, never with the URL or the headers', async () => {
    const runId = await failedRun();
    await worker.sweeper.cycle();
    await worker.dispatcher.dispatchOnce();
    const res = await api.gql(CALLS, { receiver: 'ops-slack', last: 1 }, { token: 'viewer' });
    expect(res.body.errors).toBeUndefined();
    const [call] = res.body.data!.alertWebhookCalls;
    expect(call).toMatchObject({
      receiver: 'ops-slack',
      status: 'ACKED',
      attemptCount: 1,
      lastHttpStatus: 202,
      occurrence: { kind: 'RUN_FAILED', severity: 'ERROR', runId, message: 'BAD_PLAN no plan', dispatchId: null },
    });
    expect(call.occurrence.dedupKey).toMatch(/^RUN_FAILED-/);
    const all = await api.gql(CALLS, {}, { token: 'viewer' });
    expect(all.body.data!.alertWebhookCalls.length).toBeGreaterThanOrEqual(2);
    const text = JSON.stringify(all.body);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(generic.url);
    expect(text).not.toContain('127.0.0.1');

    for (const variables of [{ last: 0 }, { last: 101 }, { receiver: 'r'.repeat(201) }]) {
      const refused = await api.gql(CALLS, variables, { token: 'viewer' });
      expect([refused.status, refused.code], JSON.stringify(variables)).toEqual([422, 'INVALID_INPUT']);
      expect(refused.details).toMatchObject({ field: `args.${Object.keys(variables)[0]}` });
    }
    expect((await api.gql(CALLS, {}, { token: null })).status).toBe(401);
  });
});
