import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { completeRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { defineGate, observed, unique } from '../../support/gate-fixtures.js';
import { dispatchRow, quietLog, workerConfig } from '../../support/worker.js';
import { createApiServer } from '../../../src/server/app.js';
import { createApiMetrics } from '../../../src/server/metrics.js';
import { startWorker } from '../../../src/worker/worker.js';
import { until } from '../../support/until.js';

let api: TestApi;
let receiver: Receiver;
beforeAll(async () => {
  api = await startTestApi();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await api?.close();
});

describe('startWorker', () => {
  it('without nifi.receiverUrl runs the sweeper and delivers every call but NiFi’s, which wait in the outbox', async () => {
    const metrics = createApiMetrics();
    const worker = startWorker({ config: api.config, db: api.db, log: quietLog, registry: metrics.registry });
    try {
      expect(worker.dispatching).toBe(false);
      await until('the LISTEN connection', () => worker.listening());
      await until('a sweep', async () =>
        (await metrics.registry.getSingleMetricAsString('lc_active_runs')).includes('lc_active_runs{status="CREATED"}'),
      );
      const validation = await completeRun(api);
      const [consumer, jobId] = [unique('consumer'), unique('job')];
      await defineGate(api, consumer, [jobId], undefined, { notifyUrl: receiver.url });
      await observed(api, { jobId, businessDate: '2026-11-30', state: 'SUCCEEDED' });
      await until('the gate’s call', async () =>
        (await metrics.registry.getSingleMetricAsString('lc_dispatch_total')).includes(
          'lc_dispatch_total{type="GATE_READY",result="sent"} 1',
        ),
      );
      // the pass that sent the gate's call saw NiFi's, due before it, and left it alone
      expect(await dispatchRow(api, validation.dispatchId)).toMatchObject({ status: 'PENDING', attempt_count: 0 });
      expect(receiver.callsFor(validation.dispatchId)).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it("runs dispatcher and sweeper on the API's registry, with its LISTEN connection as a readiness check", async () => {
    const config = workerConfig(api, receiver);
    const metrics = createApiMetrics();
    const worker = startWorker({ config, db: api.db, log: quietLog, registry: metrics.registry });
    const server = createApiServer({ config, db: api.db, log: quietLog, metrics, readinessChecks: [worker.listening] });
    const { port } = await server.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${port}`;
    try {
      await until('readiness', async () => (await fetch(`${base}/readyz`)).status === 200);
      const run = await completeRun(api);
      // the first test left its NiFi call waiting: this worker sends it too
      await until('its call', () => receiver.callsFor(run.dispatchId).length > 0);
      expect(receiver.callsFor(run.dispatchId)).toHaveLength(1);
      const text = await (await fetch(`${base}/metrics`)).text();
      expect(text).toContain('lc_requests_total');
      // the sweeper's first cycle refreshed the gauges at start
      expect(text).toContain('lc_dispatch_backlog{status="PENDING"}');
      expect(text).toContain('lc_active_runs{status="CREATED"}');
    } finally {
      await worker.stop();
    }
    expect(worker.listening()).toBe(false);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    await server.close();
  });
});
