import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { completeRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { quietLog, workerConfig } from '../../support/worker.js';
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
  it('without nifi.receiverUrl runs the sweeper only: dispatches wait in the outbox', async () => {
    const metrics = createApiMetrics();
    const worker = startWorker({ config: api.config, db: api.db, log: quietLog, registry: metrics.registry });
    try {
      expect(worker.listening()).toBe(true);
      await until('a sweep', async () =>
        (await metrics.registry.getSingleMetricAsString('lc_active_runs')).includes('lc_active_runs{status="CREATED"}'),
      );
      expect(await metrics.registry.getSingleMetricAsString('lc_dispatch_total')).not.toContain('result=');
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
      await receiver.waitForCalls(1);
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
