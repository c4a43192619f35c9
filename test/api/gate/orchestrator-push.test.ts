// Readiness pushed to orchestrators (issue 30, point 3): a gate's receiver in Airflow 3's format (an asset event with
// the business date as partition key) or Dagster's (a runless asset materialization with the business date as
// partition and the evidence run ids as metadata), checked by loopback receivers against each product's documented
// request (test/fixtures/orchestrators/: path, method, body fields and types, content type) and the auth header
// gates.credentials gives the origin. Only ready decisions become orchestrator events.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { DEFINE_GATE, decisionsOf, defineGate, observed, unique } from '../../support/gate-fixtures.js';
import { startReceiver, type ReceivedCall, type Receiver } from '../../support/receiver.js';
import { dispatchRow, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';

const AIRFLOW = JSON.parse(
  readFileSync(new URL('../../fixtures/orchestrators/airflow-create-asset-events-body.schema.json', import.meta.url), 'utf8'),
);
const DAGSTER = JSON.parse(
  readFileSync(new URL('../../fixtures/orchestrators/dagster-report-asset-materialization.json', import.meta.url), 'utf8'),
);
const validAirflowBody = new Ajv2020({ strict: true }).compile(AIRFLOW.schema);

const GATE_DISPATCHES = `query($consumer: String!) {
  gate(consumer: $consumer) { notifyFormat notifyAsset dispatches { dispatchId version status attemptCount lastHttpStatus lastError } } }`;

const D = '2026-11-02';
const AIRFLOW_TOKEN = 'airflow-jwt.for-load-control';
const DAGSTER_BASIC = `Basic ${Buffer.from('load-control:dagster-secret').toString('base64')}`;

let api: TestApi;
let airflow: Receiver;
let dagster: Receiver;
let worker: TestWorkerParts;
beforeAll(async () => {
  api = await startTestApi();
  airflow = await startReceiver();
  dagster = await startReceiver();
  worker = testWorker(api, {
    ...workerConfig(api, airflow, { nifi: { timeoutSeconds: 1 }, dispatch: { maxAttempts: 4 } }),
    gates: {
      credentials: [
        { origin: new URL(airflow.url).origin, headers: { Authorization: `Bearer ${AIRFLOW_TOKEN}` }, airflowToken: null },
        { origin: new URL(dagster.url).origin, headers: { Authorization: DAGSTER_BASIC }, airflowToken: null },
      ],
    },
  });
});
afterEach(() => {
  airflow.reset();
  dagster.reset();
});
afterAll(async () => {
  await worker?.close();
  await airflow?.close();
  await dagster?.close();
  await api?.close();
});

async function gateDispatches(consumer: string) {
  const res = await api.gql(GATE_DISPATCHES, { consumer }, { token: 'viewer' });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.gate as { notifyFormat: string; notifyAsset: string | null; dispatches: Array<Record<string, any>> };
}

const makeDue = (dispatchId: string) =>
  api.sql.query(`UPDATE nifi_ops.load_dispatch SET next_attempt_at = clock_timestamp() - interval '1 second' WHERE dispatch_id = $1`, [
    dispatchId,
  ]);

/** What Load Control says of a decision in every format: the GENERIC body, Airflow's extra and Dagster's metadata. */
const decision = (dispatchId: string, consumer: string, version: number, evidence: Array<{ jobId: string; attempt: number }>) => ({
  dispatchId,
  consumer,
  businessDate: D,
  version,
  ready: true,
  evidence: evidence.map((e) => ({ ...e, runId: `run-${e.jobId}-${D}-${e.attempt}` })),
  decidedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
});

function expectAirflowRequest(call: ReceivedCall, pathPrefix: string) {
  expect(call.method).toBe(AIRFLOW.method);
  expect(call.path).toBe(`${pathPrefix}${AIRFLOW.path}`);
  expect(call.headers['content-type']).toBe('application/json');
  expect(call.headers.authorization).toBe(`Bearer ${AIRFLOW_TOKEN}`);
  expect(validAirflowBody(call.body), JSON.stringify(validAirflowBody.errors)).toBe(true);
}

function expectDagsterRequest(call: ReceivedCall, pathPrefix: string, assetKey: string) {
  expect(call.method).toBe(DAGSTER.method);
  expect(call.path).toBe(`${pathPrefix}${DAGSTER.pathPrefix}${assetKey}`);
  // Dagster compares the content type with "application/json" exactly: anything else is its 400
  expect(call.headers['content-type']).toBe(DAGSTER.contentType);
  expect(call.headers.authorization).toBe(DAGSTER_BASIC);
  for (const field of Object.keys(call.body)) expect(DAGSTER.bodyFields).toContain(field);
  expect(call.body).toMatchObject({ partition: expect.any(String), data_version: expect.any(String), metadata: expect.any(Object) });
}

describe('a gate receiver in Airflow’s format', () => {
  it('gets each ready decision as an asset event with the business date as partition key; a withdrawal is no event', async () => {
    const consumer = unique('airflow_consumer');
    const job = unique('job');
    const defined = await defineGate(api, consumer, [job], undefined, {
      notifyUrl: `${airflow.url}airflow`,
      notifyFormat: 'AIRFLOW',
      notifyAsset: '42',
    });
    expect(defined.gate).toMatchObject({ notifyFormat: 'AIRFLOW', notifyAsset: '42' });

    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    await worker.dispatcher.dispatchOnce();
    const [first] = airflow.calls;
    const [v1] = (await gateDispatches(consumer)).dispatches;
    expectAirflowRequest(first!, '/nifi-control/airflow');
    expect(first!.headers['x-dispatch-id']).toBe(v1!.dispatchId);
    expect(first!.body).toEqual({
      asset_id: 42,
      partition_key: D,
      extra: { load_control: decision(v1!.dispatchId, consumer, 1, [{ jobId: job, attempt: 1 }]) },
    });
    expect(await dispatchRow(api, v1!.dispatchId)).toMatchObject({ status: 'ACKED', attempt_count: 1, last_http_status: 202 });

    // a newer attempt withdraws the date (decision 2): recorded, but Airflow has no withdrawal, so no call
    await observed(api, { jobId: job, businessDate: D, attempt: 2, state: 'RUNNING' });
    expect((await decisionsOf(api, consumer, D)).map((d) => [d.version, d.ready])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect((await gateDispatches(consumer)).dispatches.map((d) => d.version)).toEqual([1]);

    // its success makes the date ready again with new evidence: decision 3, a second asset event
    await observed(api, { jobId: job, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    await worker.dispatcher.dispatchOnce();
    const [v3] = (await gateDispatches(consumer)).dispatches;
    expect(v3).toMatchObject({ version: 3, status: 'ACKED' });
    expect(airflow.calls).toHaveLength(2);
    expectAirflowRequest(airflow.calls[1]!, '/nifi-control/airflow');
    expect(airflow.calls[1]!.body).toEqual({
      asset_id: 42,
      partition_key: D,
      extra: { load_control: decision(v3!.dispatchId, consumer, 3, [{ jobId: job, attempt: 2 }]) },
    });
  });

  it('keeps trying while Airflow is down, then dies like every call', async () => {
    const consumer = unique('airflow_down');
    const job = unique('job');
    await defineGate(api, consumer, [job], undefined, { notifyUrl: 'http://127.0.0.1:9/', notifyFormat: 'AIRFLOW', notifyAsset: '7' });
    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    const [{ dispatchId }] = (await gateDispatches(consumer)).dispatches as [{ dispatchId: string }];
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_http_status: null,
      last_error: expect.stringContaining('ECONNREFUSED'),
      deferred: true,
    });
    for (const _ of [2, 3, 4]) {
      await makeDue(dispatchId);
      await worker.dispatcher.dispatchOnce();
    }
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'DEAD', attempt_count: 4 });
  });
});

describe('an Airflow receiver with airflowToken credentials', () => {
  it('gets a JWT from {notifyUrl}/auth/token, sends it as the bearer, and a new one when Airflow answers 401', async () => {
    const tokenAirflow = await startReceiver();
    const user = { username: 'load-control', password: 'airflow-secret' };
    const tokenWorker = testWorker(api, {
      ...workerConfig(api, tokenAirflow, { dispatch: { maxAttempts: 4 } }),
      gates: { credentials: [{ origin: new URL(tokenAirflow.url).origin, headers: {}, airflowToken: user }] },
    });
    try {
      const consumer = unique('airflow_jwt');
      const job = unique('job');
      await defineGate(api, consumer, [job], undefined, { notifyUrl: `${tokenAirflow.url}af`, notifyFormat: 'AIRFLOW', notifyAsset: '5' });
      tokenAirflow.script({ status: 201, body: JSON.stringify({ access_token: 'jwt-1' }) }, 200);
      await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
      await tokenWorker.dispatcher.dispatchOnce();
      // the token expired meanwhile: 401, a new token, the call again — all in one attempt
      tokenAirflow.script(401, { status: 201, body: JSON.stringify({ access_token: 'jwt-2' }) }, 200);
      await observed(api, { jobId: job, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
      await tokenWorker.dispatcher.dispatchOnce();

      expect(tokenAirflow.calls.map((c) => [c.method, c.path, c.headers.authorization ?? null])).toEqual([
        ['POST', '/nifi-control/af/auth/token', null],
        ['POST', '/nifi-control/af/api/v2/assets/events', 'Bearer jwt-1'],
        ['POST', '/nifi-control/af/api/v2/assets/events', 'Bearer jwt-1'],
        ['POST', '/nifi-control/af/auth/token', null],
        ['POST', '/nifi-control/af/api/v2/assets/events', 'Bearer jwt-2'],
      ]);
      expect(tokenAirflow.calls[0]!.body).toEqual(user);
      expect(tokenAirflow.calls[0]!.headers['content-type']).toBe('application/json');
      expect((await gateDispatches(consumer)).dispatches.map((d) => [d.version, d.status, d.attemptCount])).toEqual([
        [2, 'ACKED', 1],
        [1, 'ACKED', 1],
      ]);

      // the token expired and Airflow gives no new one: no answer, as far as the call knows; tried again later
      await observed(api, { jobId: job, businessDate: D, attempt: 3, state: 'SUCCEEDED' });
      tokenAirflow.reset();
      tokenAirflow.script(401, 403);
      const [v3] = (await gateDispatches(consumer)).dispatches;
      await tokenWorker.dispatcher.dispatchOnce();
      expect(await dispatchRow(api, v3!.dispatchId)).toMatchObject({
        status: 'PENDING',
        last_http_status: null,
        last_error: expect.stringContaining('Airflow token: http://127.0.0.1'),
        deferred: true,
      });
      expect(tokenAirflow.calls.map((c) => [c.path, c.headers.authorization ?? null])).toEqual([
        ['/nifi-control/af/api/v2/assets/events', 'Bearer jwt-2'],
        ['/nifi-control/af/auth/token', null],
      ]);
    } finally {
      await tokenWorker.close();
      await tokenAirflow.close();
    }
  });
});

describe('a gate receiver in Dagster’s format', () => {
  it('gets each ready decision as an asset materialization of the partition, the evidence run ids as metadata', async () => {
    const consumer = unique('dagster_consumer');
    const [a, b] = [unique('job_a'), unique('job_b')].sort() as [string, string];
    await defineGate(api, consumer, [a, b], undefined, {
      notifyUrl: `${dagster.url}dagster/`,
      notifyFormat: 'DAGSTER',
      notifyAsset: 'warehouse/orders_daily',
    });
    await observed(api, { jobId: a, businessDate: D, state: 'SUCCEEDED' });
    await observed(api, { jobId: b, businessDate: D, state: 'SUCCEEDED' });
    await worker.dispatcher.dispatchOnce();
    const [v1] = (await gateDispatches(consumer)).dispatches;
    const [call] = dagster.calls;
    expectDagsterRequest(call!, '/nifi-control/dagster', 'warehouse/orders_daily');
    expect(call!.headers['x-dispatch-id']).toBe(v1!.dispatchId);
    expect(call!.body).toEqual({
      partition: D,
      data_version: '1',
      description: `Ready for ${consumer} on ${D} (Load Control readiness version 1)`,
      metadata: {
        evidence_run_ids: [`run-${a}-${D}-1`, `run-${b}-${D}-1`],
        load_control: decision(v1!.dispatchId, consumer, 1, [
          { jobId: a, attempt: 1 },
          { jobId: b, attempt: 1 },
        ]),
      },
    });
    expect(await dispatchRow(api, v1!.dispatchId)).toMatchObject({ status: 'ACKED' });
  });

  it('is sent again, the same request, after two 500s and after an answer slower than the timeout: one decision, ACKED once', async () => {
    const consumer = unique('dagster_retry');
    const job = unique('job');
    await defineGate(api, consumer, [job], undefined, { notifyUrl: dagster.url, notifyFormat: 'DAGSTER', notifyAsset: 'orders' });
    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    const [{ dispatchId }] = (await gateDispatches(consumer)).dispatches as [{ dispatchId: string }];

    dagster.script(500, 500, { status: 200, delayMs: 2500 }, 200);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'PENDING', last_http_status: 500, deferred: true });
    await makeDue(dispatchId);
    await worker.dispatcher.dispatchOnce();
    await makeDue(dispatchId);
    await worker.dispatcher.dispatchOnce(); // answered after nifi.timeoutSeconds (1 s): no answer, as far as we know
    expect(await dispatchRow(api, dispatchId)).toMatchObject({
      status: 'PENDING',
      last_http_status: null,
      last_error: expect.stringContaining('timeout'),
    });
    await makeDue(dispatchId);
    await worker.dispatcher.dispatchOnce();
    expect(await dispatchRow(api, dispatchId)).toMatchObject({ status: 'ACKED', last_http_status: 200 });

    const calls = dagster.callsFor(dispatchId);
    expect(calls).toHaveLength(4);
    for (const c of calls) {
      expectDagsterRequest(c, '/nifi-control', 'orders');
      expect(c.body).toEqual(calls[0]!.body);
    }
    expect((await gateDispatches(consumer)).dispatches).toHaveLength(1);
  });
});

describe('changing a gate’s receiver format', () => {
  it('sends a waiting ready decision in the new format and cancels a waiting withdrawal instead of sending it', async () => {
    const consumer = unique('switching');
    const job = unique('job');
    await defineGate(api, consumer, [job], undefined, { notifyUrl: `${airflow.url}generic` });
    await observed(api, { jobId: job, businessDate: D, state: 'SUCCEEDED' });
    await observed(api, { jobId: job, businessDate: D, attempt: 2, state: 'RUNNING' });
    expect((await gateDispatches(consumer)).dispatches.map((d) => [d.version, d.status])).toEqual([
      [2, 'PENDING'],
      [1, 'PENDING'],
    ]);

    await defineGate(api, consumer, [job], undefined, { notifyUrl: `${airflow.url}airflow`, notifyFormat: 'AIRFLOW', notifyAsset: '9' });
    await worker.dispatcher.dispatchOnce();
    expect((await gateDispatches(consumer)).dispatches.map((d) => [d.version, d.status])).toEqual([
      [2, 'CANCELLED'],
      [1, 'ACKED'],
    ]);
    expect(airflow.calls).toHaveLength(1);
    expectAirflowRequest(airflow.calls[0]!, '/nifi-control/airflow');
    expect(airflow.calls[0]!.body).toMatchObject({ asset_id: 9, partition_key: D });
  });
});

describe('defineGate with a receiver format', () => {
  it.each([
    [{ notifyFormat: 'AIRFLOW', notifyAsset: '42' }, 'input.notifyUrl', "required with notifyFormat AIRFLOW: the API's base URL"],
    [{ notifyUrl: 'https://airflow.example', notifyFormat: 'AIRFLOW' }, 'input.notifyAsset', 'must be an Airflow asset id'],
    [
      { notifyUrl: 'https://airflow.example', notifyFormat: 'AIRFLOW', notifyAsset: 'orders' },
      'input.notifyAsset',
      'must be an Airflow asset id',
    ],
    [
      { notifyUrl: 'https://airflow.example', notifyFormat: 'AIRFLOW', notifyAsset: '1234567890123456' },
      'input.notifyAsset',
      'at most 15 digits',
    ],
    [
      { notifyUrl: 'https://dagster.example', notifyFormat: 'DAGSTER', notifyAsset: 'orders-daily' },
      'input.notifyAsset',
      'a Dagster asset key',
    ],
    [{ notifyUrl: 'https://dagster.example', notifyFormat: 'DAGSTER', notifyAsset: 'a//b' }, 'input.notifyAsset', 'a Dagster asset key'],
    [{ notifyUrl: 'https://reports.example', notifyAsset: '42' }, 'input.notifyAsset', 'only for AIRFLOW or DAGSTER'],
    [{ notifyUrl: 'https://reports.example', notifyFormat: 'PREFECT' }, undefined, undefined],
  ])('refuses %j with a 4xx and defines nothing', async (more, field, reason) => {
    const consumer = unique('refused');
    const res = await api.gql(DEFINE_GATE, { input: { consumer, requiredJobs: ['a'], ...more } }, { token: 'operator' });
    if (field === undefined) {
      // not an enum value: the GraphQL layer refuses the variable before any resolver runs
      expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
    } else {
      expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
      expect(res.body.errors![0]!.extensions).toMatchObject({ details: { field, reason: expect.stringContaining(reason!) } });
    }
    const { rows } = await api.sql.query('SELECT 1 FROM nifi_ops.gate WHERE consumer = $1', [consumer]);
    expect(rows).toEqual([]);
  });
});
