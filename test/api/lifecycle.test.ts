// One run from start to finish with the worker in the loop, as NiFi would drive it: the worker's
// VALIDATE_RUN call reaches a loopback PG-05 that answers 202 and then starts PG-40 (startValidation).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import {
  CLAIM_PUBLISH,
  MARK_STAGE_VALIDATED,
  MARK_SUCCESS,
  REPORT_PUBLISH_RESULT,
  RUN,
  START_VALIDATION,
  chunkInput,
  claim,
  metric,
  recordMetrics,
  report,
  startRun,
} from '../support/fixtures.js';
import { startReceiver, type ReceivedCall, type Receiver } from '../support/receiver.js';
import { quietLog, workerConfig } from '../support/worker.js';
import { createApiMetrics } from '../../src/server/metrics.js';
import { startWorker, type Worker } from '../../src/worker/worker.js';

let api: TestApi;
let receiver: Receiver;
let worker: Worker;
beforeAll(async () => {
  api = await startTestApi();
  receiver = await startReceiver();
  worker = startWorker({ config: workerConfig(api, receiver), db: api.db, log: quietLog, registry: createApiMetrics().registry });
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await api?.close();
});

it('runs createRun → manifest → claims → chunks → worker call → startValidation → … → SUCCESS', async () => {
  let validation: Promise<Record<string, unknown>> | undefined;
  // PG-05 answers 202 at once, then its flow calls startValidation with the dispatch id it was given
  receiver.onCall((call: ReceivedCall) => {
    validation = new Promise((resolve) => setImmediate(resolve)).then(async () => {
      const res = await api.gql(START_VALIDATION, {
        input: { runId: call.headers['x-run-id'], dispatchId: call.headers['x-dispatch-id'], node: 'nifi-02' },
      });
      return res.body.data!.startValidation;
    });
  });

  const run = await startRun(api, [3, 4]);
  for (const [pid, rows] of [
    ['0000', 3],
    ['0001', 4],
  ] as const) {
    const { claimToken } = await claim(api, run.runId, pid);
    expect((await report(api, chunkInput(run, pid, claimToken, 0, 1, rows))).body.errors).toBeUndefined();
  }

  const [call] = await receiver.waitForCalls(1);
  expect(call!.path).toBe('/nifi-control/validate/ORACLE_INSP_DTL_DAILY');
  expect(await validation).toMatchObject({
    started: true,
    runStatus: 'STAGE_VALIDATING',
    jobKey: 'ORACLE_INSP_DTL_DAILY',
    businessKey: run.businessKey,
    snapshotScn: '1234567890',
    hdfsRunPath: run.hdfsRunPath,
    sourceCount: 7,
    extractedCount: 7,
  });
  // the ACK stands whether or not the 202 was recorded first
  const {
    rows: [dispatch],
  } = await api.sql.query(`SELECT status, attempt_count, acked_at FROM nifi_ops.load_dispatch WHERE run_id = $1`, [run.runId]);
  expect(dispatch).toMatchObject({ status: 'ACKED', attempt_count: 1, acked_at: expect.any(Date) });

  expect((await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7')])).body.errors).toBeUndefined();
  expect((await api.gql(MARK_STAGE_VALIDATED, { input: { runId: run.runId } })).body.data!.markStageValidated.stageValidated).toBe(true);
  const publishToken = randomUUID();
  expect((await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } })).body.data!.claimPublish.claimed).toBe(true);
  await api.gql(REPORT_PUBLISH_RESULT, { input: { runId: run.runId, publishToken, outcome: 'PUBLISHED' } });
  expect((await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')])).body.errors).toBeUndefined();
  const success = await api.gql(MARK_SUCCESS, { input: { runId: run.runId, targetCount: '7' } });
  expect(success.body.data!.markSuccess).toMatchObject({ success: true, runStatus: 'SUCCESS' });

  const detail = await api.gql(RUN, { runId: run.runId });
  expect(detail.body.data!.run).toMatchObject({ status: 'SUCCESS', extractedCount: 7, stagingCount: 7, targetCount: 7 });
  expect(receiver.calls).toHaveLength(1);
});
