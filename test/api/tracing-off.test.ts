// Tracing is off by default: no tracing.endpoint, no SDK loaded (here or in an execution thread), no spans, no
// exporter, and no traceparent sent to a receiver, even for a request whose caller sent a sampled one.
import { createRequire } from 'node:module';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { activeTracer } from '../../src/tracing/tracing.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { chunkInput, claim, RUN, startRun } from '../support/fixtures.js';
import { type Collector, startCollector } from '../support/otlp-collector.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { testWorker, type TestWorkerParts, workerConfig } from '../support/worker.js';

let api: TestApi;
let collector: Collector;
let receiver: Receiver;
let worker: TestWorkerParts;
let apiClosed = false;
beforeAll(async () => {
  [collector, receiver] = await Promise.all([startCollector(), startReceiver()]);
  api = await startTestApi({}, { lane: { threads: 1 } });
  worker = testWorker(api, workerConfig(api, receiver));
});
afterAll(async () => {
  await worker?.close();
  if (!apiClosed) await api?.close();
  await Promise.all([collector?.close(), receiver?.close()]);
});

it('makes no span and loads no SDK without tracing.endpoint, whatever traceparent a caller sends', async () => {
  expect(api.config.tracing.endpoint).toBeNull();
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const run = await startRun(api, [3]);
  const { claimToken } = await claim(api, run.runId, '0000');
  const reported = await api.gql(REPORT_WITH_TRACE, { input: chunkInput(run, '0000', claimToken, 0, 1, 3) }, { headers: { traceparent } });
  expect(reported.body.data?.reportChunk?.validationScheduled).toBe(true);
  // a query runs on the execution thread
  expect((await api.gql(RUN, { runId: run.runId }, { token: 'viewer', headers: { traceparent } })).status).toBe(200);
  expect(await worker.dispatcher.dispatchOnce()).toBe(1);

  expect(receiver.calls).toHaveLength(1);
  expect(receiver.calls[0]!.headers.traceparent).toBeUndefined();
  expect(activeTracer()).toBeNull();
  // no tracer provider registered: the API's tracer makes spans that record nothing
  expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);
  const loaded = Object.keys(createRequire(import.meta.url).cache);
  expect(loaded.filter((path) => /@opentelemetry\/(sdk-|exporter-|otlp-|resources|core)/.test(path))).toEqual([]);
  expect(loaded.some((path) => path.includes('@opentelemetry/api'))).toBe(true);

  // the execution thread would export what it holds as it closes
  await api.close();
  apiClosed = true;
  expect(collector.exports).toEqual([]);
  expect(collector.spans).toEqual([]);
});

const REPORT_WITH_TRACE = `mutation($input: ReportChunkInput!) { reportChunk(input: $input) { validationScheduled } }`;
