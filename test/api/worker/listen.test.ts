// The dispatcher's LISTEN connection: wake-ups, and recovery after the connection is lost. The poll
// interval is a minute, so within a test only a notification (or a reconnect's catch-up) wakes it.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, completeRun, report, startRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { makeDue, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';
import { LISTEN_APPLICATION_NAME } from '../../../src/worker/dispatcher.js';
import { until } from '../../support/until.js';

let api: TestApi;
let receiver: Receiver;
let worker: TestWorkerParts;

beforeAll(async () => {
  api = await startTestApi();
  receiver = await startReceiver();
});
afterEach(async () => {
  await worker?.close();
  receiver.reset();
  // leave nothing due for the next test's catch-up pass
  await api.sql.query(
    `UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp() WHERE status IN ('PENDING', 'SENT')`,
  );
});
afterAll(async () => {
  await receiver?.close();
  await api?.close();
});

/** The dispatcher's LISTEN connections to this test's database, found by their application_name. */
async function listenerBackends(): Promise<Array<{ pid: number }>> {
  const { rows } = await api.sql.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, [
    LISTEN_APPLICATION_NAME,
  ]);
  return rows;
}

async function startListeningWorker(overrides: Parameters<typeof workerConfig>[2] = {}) {
  worker = testWorker(api, workerConfig(api, receiver, overrides));
  worker.dispatcher.start();
  await until('the LISTEN connection', () => worker.dispatcher.listening());
}

describe('dispatcher LISTEN', () => {
  it('is woken by the NOTIFY after the completing chunk report, long before its poll interval', async () => {
    await startListeningWorker();
    const run = await completeRun(api);
    await receiver.waitForCalls(1);
    expect(receiver.calls[0]!.headers['x-dispatch-id']).toBe(run.dispatchId);
  });

  it('re-establishes a terminated LISTEN connection and catches up on what it missed meanwhile', async () => {
    await startListeningWorker();
    receiver.script(503);
    const run = await completeRun(api);
    await receiver.waitForCalls(1);
    // due again, but nobody says so: only a pass would find it
    await until('the deferred call', async () => {
      const { rows } = await api.sql.query(`SELECT last_http_status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1`, [run.dispatchId]);
      return rows[0]?.last_http_status === 503;
    });
    await makeDue(api, run.runId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.calls).toHaveLength(1);

    const [before] = await listenerBackends();
    expect(before).toBeDefined();
    const { rows } = await api.sql.query('SELECT pg_terminate_backend($1) AS terminated', [before!.pid]);
    expect(rows[0].terminated).toBe(true);

    await receiver.waitForCalls(2);
    expect(receiver.callsFor(run.dispatchId)).toHaveLength(2);
    const after = await until('one new LISTEN connection', async () => {
      const backends = await listenerBackends();
      return backends.length === 1 && backends[0]!.pid !== before!.pid && backends;
    });
    expect(after).toHaveLength(1);
    expect(worker.dispatcher.listening()).toBe(true);

    // and it is still woken by notifications
    const next = await completeRun(api);
    await receiver.waitForCalls(3);
    expect(receiver.callsFor(next.dispatchId)).toHaveLength(1);
  });

  it('keeps trying while the database is unreachable, at start and after an outage, and catches up each time', async () => {
    const target = new URL(api.database.url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port));
    try {
      await proxy.cut();
      const viaProxy = new URL(api.database.url);
      viaProxy.port = String(proxy.port);
      const config = workerConfig(api, receiver);
      // only the LISTEN connection goes through the proxy; the dispatcher's queries use the test pool
      worker = testWorker(api, { ...config, database: { ...config.database, url: viaProxy.toString() } });
      const first = await completeRun(api);
      worker.dispatcher.start();
      await until('the first pass', () => receiver.callsFor(first.dispatchId).length === 1);
      expect(worker.dispatcher.listening()).toBe(false);
      await proxy.restore();
      await until('the LISTEN connection', () => worker.dispatcher.listening());

      // an outage longer than pg-listen's own default retry budget (3 s)
      await proxy.cut();
      await until('the outage to be noticed', () => !worker.dispatcher.listening());
      const missed = await completeRun(api);
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect(receiver.callsFor(missed.dispatchId)).toHaveLength(0);
      await proxy.restore();
      await until('the catch-up after reconnecting', () => receiver.callsFor(missed.dispatchId).length === 1);
      expect(worker.dispatcher.listening()).toBe(true);
    } finally {
      await worker.close();
      await proxy.close();
    }
  });

  it('is woken by the sweeper after a reissue', async () => {
    await startListeningWorker({ recovery: { mode: 'REISSUE' } });
    const run = await startRun(api, [3, 4]);
    const owner = await claim(api, run.runId, '0000', randomUUID());
    await report(api, chunkInput(run, '0000', owner.claimToken, 0, 2, 2));
    await api.sql.query(
      `UPDATE nifi_ops.load_partition SET heartbeat_at = heartbeat_at - interval '2 hours' WHERE run_id = $1 AND partition_id = '0000'`,
      [run.runId],
    );
    expect((await worker.sweeper.cycle())?.actions).toEqual({ reissue_partition: 1 });
    await receiver.waitForCalls(1);
    expect(receiver.calls[0]!.path).toMatch(/\/reissue\//);
    expect(receiver.calls[0]!.body).toMatchObject({ runId: run.runId, partitionId: '0000' });
  });

  it("is woken by an operator's reissuePartition", async () => {
    await startListeningWorker();
    const run = await startRun(api, [3, 4]);
    const res = await api.gql(
      `mutation($input: ReissuePartitionInput!) { reissuePartition(input: $input) { dispatchId } }`,
      { input: { runId: run.runId, partitionId: '0001', reason: 'flowfile lost' } },
      { token: 'operator' },
    );
    await receiver.waitForCalls(1);
    expect(receiver.calls[0]!.headers['x-dispatch-id']).toBe(res.body.data!.reissuePartition.dispatchId);
  });

  it('reports not listening once stopped, and leaves no LISTEN connection behind', async () => {
    await startListeningWorker();
    expect(await listenerBackends()).toHaveLength(1);
    await worker.close();
    expect(worker.dispatcher.listening()).toBe(false);
    await until('the LISTEN connection to close', async () => (await listenerBackends()).length === 0);
  });
});
