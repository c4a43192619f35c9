// The validation flow over HTTP: startValidation's payload, roles and input parsing, recordMetrics' input parsing.
// The flow's rules and races are domain tests: test/domain/validation/validation.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { HDFS_ROOT, JOB, LOST_VALIDATION_START, START_VALIDATION, completeRun, metric, toStageValidating } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const start = (runId: string, dispatchId: string, token: 'nifi' | 'operator' | null = 'nifi') =>
  api.gql(START_VALIDATION, { input: { runId, dispatchId, node: 'nifi-02' } }, { token });

async function dispatchRow(dispatchId: string) {
  const { rows } = await api.sql.query('SELECT status, acked_at FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [dispatchId]);
  return rows[0];
}

describe('startValidation', () => {
  it('starts the validation over GraphQL: the run context in the kit’s types, nulls for a later call', async () => {
    const run = await completeRun(api, [3, 4]);
    const res = await start(run.runId, run.dispatchId);
    expect(res.status).toBe(200);
    expect(res.body.data!.startValidation).toEqual({
      started: true,
      runStatus: 'STAGE_VALIDATING',
      jobKey: JOB,
      businessKey: run.businessKey,
      snapshotScn: '1234567890',
      hdfsRunPath: `${HDFS_ROOT}/${JOB}/run_id=${run.runId}`,
      stageTable: run.stageTable,
      sourceCount: 7,
      extractedCount: 7,
      sourceMetrics: { AMOUNT_SUM: '123.45', SOURCE_COUNT: '7' },
    });
    const again = await start(run.runId, run.dispatchId);
    expect(again.status).toBe(200);
    expect(again.body.data!.startValidation).toEqual({ ...LOST_VALIDATION_START, runStatus: 'STAGE_VALIDATING' });
  });

  it('answers 422 for malformed input and needs the nifi role, changing nothing', async () => {
    const run = await completeRun(api);
    const badId = await api.gql(START_VALIDATION, { input: { runId: run.runId, dispatchId: 'nope' } });
    expect(badId.status).toBe(422);
    expect(badId.code).toBe('INVALID_INPUT');
    const longNode = await api.gql(START_VALIDATION, { input: { runId: run.runId, dispatchId: run.dispatchId, node: 'n'.repeat(201) } });
    expect(longNode.status).toBe(422);
    expect(longNode.details).toMatchObject({ field: 'input.node' });
    expect((await start(run.runId, run.dispatchId, 'operator')).status).toBe(403);
    expect((await start(run.runId, run.dispatchId, null)).status).toBe(401);
    expect((await dispatchRow(run.dispatchId)).status).toBe('PENDING');
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0].status).toBe('EXTRACTED_VALIDATED');
  });
});

describe('recordMetrics', () => {
  it.each([
    ['input.stage', { stage: 'SOURCE' }],
    ['input.stage', { stage: 'HDFS' }],
    ['input.queryVersion', { queryVersion: 'v'.repeat(51) }],
    ['input.metrics', { metrics: [] }],
    ['input.metrics', { metrics: Array.from({ length: 501 }, (_, i) => metric(`M${i}`)) }],
    ['input.metrics.0.metricName', { metrics: [metric('bad name')] }],
    ['input.metrics.0.metricName', { metrics: [metric('M'.repeat(151))] }],
    ['input.metrics.1.metricName', { metrics: [metric('STAGE_COUNT'), metric('STAGE_COUNT', 'FAIL')] }],
    ['input.metrics.0.actualValue', { metrics: [{ metricName: 'STAGE_COUNT', result: 'PASS', actualValue: '7'.repeat(2001) }] }],
    ['input.metrics.0.tolerance', { metrics: [{ ...metric('STAGE_COUNT'), tolerance: 't'.repeat(101) }] }],
  ])('refuses malformed input (%s) with 422 INVALID_INPUT and writes nothing', async (field, overrides) => {
    const run = await toStageValidating(api);
    const before = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_validation WHERE run_id = $1', [run.runId]);
    const res = await api.gql(`mutation($input: RecordMetricsInput!) { recordMetrics(input: $input) { recorded } }`, {
      input: { runId: run.runId, stage: 'STAGING', metrics: [metric('STAGE_COUNT', 'PASS', '7')], ...overrides },
    });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field });
    const after = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_validation WHERE run_id = $1', [run.runId]);
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});
