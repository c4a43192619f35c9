// The gate pushes (issue 15, point 2): readinessChanged to subscribers, and each decision to the gate's receiver as
// a GATE_READY call through the outbox — the same leases, backoff, DEAD and resend as the other calls.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RESEND_DISPATCH } from '../../support/ledger-flow.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun } from '../../support/fixtures.js';
import { decisionsOf, defineGate, observed, unique } from '../../support/gate-fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { subscribe } from '../../support/sse.js';
import { until } from '../../support/until.js';
import { dispatchRow, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';

const GATE_DISPATCHES = `query($consumer: String!, $businessDate: Date) {
  gate(consumer: $consumer) { notifyUrl dispatches(businessDate: $businessDate) { dispatchId businessDate version status attemptCount lastHttpStatus lastError } } }`;
const ALERTS = `query { monitorSummary(alertLimit: 500) { alerts { kind severity runId jobKey businessKey dispatchId consumer message } } }`;
const READINESS_CHANGED = `subscription($consumer: String!, $businessDate: Date!) {
  readinessChanged(consumer: $consumer, businessDate: $businessDate) {
    consumer businessDate ready jobs { jobId reason } decision { version ready evidence { jobId attempt runId } } } }`;

const D = '2026-10-23';

let api: TestApi;
let receiver: Receiver;
let worker: TestWorkerParts;
beforeAll(async () => {
  api = await startTestApi({}, { realtime: true });
  receiver = await startReceiver();
  worker = testWorker(api, workerConfig(api, receiver));
});
afterEach(() => receiver.reset());
afterAll(async () => {
  await worker?.close();
  await receiver?.close();
  await api?.close();
});

/** A gate over one fresh job whose decisions go to the receiver. */
async function pushingGate(path = 'gates') {
  const consumer = unique('consumer');
  const job = unique('job');
  const notifyUrl = `${receiver.url}${path}/${consumer}`;
  await defineGate(api, consumer, [job], undefined, { notifyUrl });
  return { consumer, job, notifyUrl };
}

async function gateDispatches(consumer: string) {
  const res = await api.gql(GATE_DISPATCHES, { consumer, businessDate: D }, { token: 'viewer' });
  expect(res.body.errors).toBeUndefined();
  return (res.body.data!.gate.dispatches as Array<Record<string, any>>).reverse();
}

const makeDue = (dispatchId: string) =>
  api.sql.query(`UPDATE nifi_ops.load_dispatch SET next_attempt_at = clock_timestamp() - interval '1 second' WHERE dispatch_id = $1`, [
    dispatchId,
  ]);

describe('GATE_READY calls to a gate’s receiver', () => {
  it('delivers each decision once it committed, woken by its NOTIFY: the body, X-Dispatch-Id, and the 2xx as its ACK', async () => {
    const { consumer, job } = await pushingGate();
    const listening = testWorker(api, workerConfig(api, receiver)); // polls once a minute: only the wake-up is fast
    listening.dispatcher.start();
    try {
      await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
      const [call] = await receiver.waitForCalls(1, 15_000);
      const [dispatch] = await gateDispatches(consumer);
      expect(call!.path).toBe(`/nifi-control/gates/${consumer}`);
      expect(call!.headers['x-dispatch-id']).toBe(dispatch!.dispatchId);
      expect(call!.headers['x-run-id']).toBeUndefined();
      expect(call!.body).toEqual({
        dispatchId: dispatch!.dispatchId,
        consumer,
        businessDate: D,
        version: 1,
        ready: true,
        evidence: [{ jobId: job, attempt: 1, runId: `run-${job}-${D}-1` }],
        decidedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      });
      await expect.poll(async () => (await dispatchRow(api, dispatch!.dispatchId)).status).toBe('ACKED');

      // a newer attempt withdraws the date: version 2, delivered as well
      await observed(api, { jobId: job, businessDate: D, attempt: 2, state: 'RUNNING' });
      const calls = await receiver.waitForCalls(2, 15_000);
      expect(calls[1]!.body).toMatchObject({ consumer, businessDate: D, version: 2, ready: false, evidence: [] });
      await expect
        .poll(async () => (await gateDispatches(consumer)).map((d) => [d.version, d.status]))
        .toEqual([
          [1, 'ACKED'],
          [2, 'ACKED'],
        ]);
    } finally {
      await listening.close();
    }
  });

  it('backs off on a 5xx, dies on another 4xx (an alert naming the gate), and is sent again after resendDispatch without runId', async () => {
    const { consumer, job } = await pushingGate();
    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    const [dispatch] = await gateDispatches(consumer);
    const { dispatchId } = dispatch!;

    receiver.script(503, 400);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_http_status: 503,
      deferred: true,
    });
    await makeDue(dispatchId);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'DEAD', attempt_count: 2, last_http_status: 400 });

    const alerts = (await api.gql(ALERTS, {}, { token: 'viewer' })).body.data!.monitorSummary.alerts as Array<Record<string, unknown>>;
    expect(alerts.find((a) => a.dispatchId === dispatchId)).toMatchObject({
      kind: 'DISPATCH_DEAD',
      severity: 'ERROR',
      runId: null,
      businessKey: D,
      consumer,
      message: expect.stringContaining('GATE_READY v1'),
    });
    const { rows: deadEvents } = await api.sql.query(
      `SELECT details FROM nifi_ops.load_event WHERE event_name = 'DISPATCH_DEAD' AND details->>'dispatchId' = $1`,
      [dispatchId],
    );
    expect(deadEvents.map((e) => e.details)).toEqual([
      expect.objectContaining({ type: 'GATE_READY', consumer, businessDate: D, version: 1 }),
    ]);

    // a dispatch of no run is not any run's: naming one is 404
    const someRun = await createRun(api);
    const wrongRun = await api.gql(RESEND_DISPATCH, { input: { runId: someRun.runId, dispatchId } }, { token: 'operator' });
    expect([wrongRun.status, wrongRun.code]).toEqual([404, 'DISPATCH_NOT_FOUND']);
    const resent = await api.gql(RESEND_DISPATCH, { input: { dispatchId, reason: 'receiver fixed' } }, { token: 'operator' });
    expect(resent.body.data!.resendDispatch).toEqual({ dispatchId, status: 'PENDING' });
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'ACKED', attempt_count: 1, last_http_status: 202 });
    // at least once, one decision: every call carried the same X-Dispatch-Id and body
    const calls = receiver.callsFor(dispatchId);
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => JSON.stringify(c.body))).size).toBe(1);

    const again = await api.gql(RESEND_DISPATCH, { input: { dispatchId } }, { token: 'operator' });
    expect([again.status, again.code]).toEqual([409, 'DISPATCH_STATUS_MISMATCH']);
    const { rows: resentEvents } = await api.sql.query(
      `SELECT run_id, actor, details FROM nifi_ops.load_event WHERE event_name = 'DISPATCH_RESENT' AND details->>'dispatchId' = $1`,
      [dispatchId],
    );
    expect(resentEvents).toEqual([
      {
        run_id: null,
        actor: 'alice-operator',
        details: expect.objectContaining({ consumer, businessDate: D, version: 1, previousStatus: 'DEAD' }),
      },
    ]);
  });

  it('gives up after dispatch.maxAttempts network failures: DEAD', async () => {
    const { consumer, job } = await pushingGate();
    // a receiver URL nobody listens on
    await defineGate(api, consumer, [job], undefined, { notifyUrl: 'http://127.0.0.1:9/gone' });
    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    const [{ dispatchId }] = (await gateDispatches(consumer)) as [{ dispatchId: string }];
    for (let attempt = 1; attempt <= 3; attempt++) {
      await makeDue(dispatchId);
      await worker.dispatcher.dispatchOnce();
    }
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'DEAD', attempt_count: 3, last_http_status: null });
    expect((await dispatchRow(api, dispatchId)).last_error).toMatch(/max attempts reached/);
  });

  it('cancels a call whose gate no longer has a receiver, and calls nobody for a gate without one', async () => {
    const { consumer, job } = await pushingGate();
    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    await defineGate(api, consumer, [job]); // the receiver removed
    await worker.dispatcher.dispatchOnce();
    const [dispatch] = await gateDispatches(consumer);
    expect(dispatch).toMatchObject({ status: 'CANCELLED', lastError: `the gate ${consumer} has no receiver any more` });
    expect(receiver.calls).toHaveLength(0);

    await observed(api, { jobId: job, businessDate: D, attempt: 2, state: 'RUNNING' });
    expect((await decisionsOf(api, consumer, D)).map((d) => d.version)).toEqual([1, 2]);
    expect(await gateDispatches(consumer)).toHaveLength(1);
  });
});

describe('readinessChanged', () => {
  it('sends the current readiness, then each decision as it commits', async () => {
    const consumer = unique('consumer');
    const [a, b] = [unique('a'), unique('b')];
    await defineGate(api, consumer, [a, b]);
    const subscription = await subscribe(api.url, READINESS_CHANGED, { consumer, businessDate: D });
    try {
      expect(subscription.status).toBe(200);
      await subscription.waitFor((m) => m.data?.readinessChanged?.decision === null);
      expect(subscription.messages[0]!.data!.readinessChanged).toMatchObject({
        ready: false,
        jobs: [{ reason: 'MISSING' }, { reason: 'MISSING' }],
      });

      await observed(api, { jobId: a, businessDate: D, state: 'SUCCEEDED' }); // not ready yet: no decision, no message
      await observed(api, { jobId: b, businessDate: D, state: 'SUCCEEDED' });
      const ready = await subscription.waitFor((m) => m.data?.readinessChanged?.decision?.version === 1);
      expect(ready.data!.readinessChanged).toMatchObject({ ready: true, decision: { ready: true } });
      await observed(api, { jobId: a, businessDate: D, attempt: 2, state: 'RUNNING' });
      const withdrawn = await subscription.waitFor((m) => m.data?.readinessChanged?.decision?.version === 2);
      expect(withdrawn.data!.readinessChanged).toMatchObject({ ready: false, decision: { ready: false, evidence: [] } });
      // one message per decision, after the first
      expect(subscription.messages).toHaveLength(3);
    } finally {
      subscription.close();
    }
  });

  it('needs a token, and refuses a malformed consumer or date', async () => {
    expect((await subscribe(api.url, READINESS_CHANGED, { consumer: 'c', businessDate: D }, { token: null })).status).toBe(401);
    const bad = await subscribe(api.url, READINESS_CHANGED, { consumer: 'has space', businessDate: D });
    expect([bad.status, bad.headers.get('x-error-code')]).toEqual([422, 'INVALID_INPUT']);
    await until('the refused stream to end', () => bad.ended);
    expect(bad.messages[0]!.errors![0]!.extensions).toMatchObject({ details: { field: 'consumer' } });
    const badDate = await subscribe(api.url, READINESS_CHANGED, { consumer: 'c', businessDate: '2026-02-30' });
    expect(badDate.status).toBe(422);
  });
});
