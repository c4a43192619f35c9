import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import {
  CLAIM_PUBLISH,
  FAIL_RUN,
  HDFS_ROOT,
  JOB,
  MARK_STAGE_VALIDATED,
  START_VALIDATION,
  completeRun,
  metric,
  recordMetrics,
  startRun,
  toStageValidating,
  toStagingValidated,
} from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const start = (runId: string, dispatchId: string, token: 'nifi' | 'operator' | null = 'nifi') =>
  api.gql(START_VALIDATION, { input: { runId, dispatchId, node: 'nifi-02' } }, { token });
const markStageValidated = (runId: string) => api.gql(MARK_STAGE_VALIDATED, { input: { runId } });

async function dispatchRow(dispatchId: string) {
  const { rows } = await api.sql.query('SELECT status, acked_at FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [dispatchId]);
  return rows[0];
}

async function eventsNamed(runId: string, name: string) {
  const { rows } = await api.sql.query(
    `SELECT event_level, message, details, actor, row_count FROM nifi_ops.load_event
      WHERE run_id = $1 AND event_name = $2 ORDER BY event_time`,
    [runId, name],
  );
  return rows;
}

const LOSER = {
  started: false,
  jobKey: null,
  businessKey: null,
  snapshotScn: null,
  hdfsRunPath: null,
  stageTable: null,
  sourceCount: null,
  extractedCount: null,
  sourceMetrics: {},
};

describe('startValidation', () => {
  it('starts the validation once with the run context and SOURCE metrics, ACKs the dispatch, and answers later calls with nulls', async () => {
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
    const dispatch = await dispatchRow(run.dispatchId);
    expect(dispatch.status).toBe('ACKED');
    expect(dispatch.acked_at).toBeInstanceOf(Date);
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATION_STARTED')).toEqual([
      expect.objectContaining({ event_level: 'INFO', actor: 'nifi-cluster', details: { dispatchId: run.dispatchId, node: 'nifi-02' } }),
    ]);

    const again = await start(run.runId, run.dispatchId);
    expect(again.status).toBe(200);
    expect(again.body.data!.startValidation).toEqual({ ...LOSER, runStatus: 'STAGE_VALIDATING' });
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATION_STARTED')).toHaveLength(1);
  });

  it('ACKs the named dispatch even when the start loses, and from DEAD as well as SENT', async () => {
    const run = await completeRun(api, [2]);
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = $1`, [
      run.dispatchId,
    ]);
    expect((await start(run.runId, run.dispatchId)).body.data!.startValidation.started).toBe(true);
    expect((await dispatchRow(run.dispatchId)).status).toBe('ACKED');

    // e.g. an operator resent it after NiFi had already started: the duplicate loses, the call is still acknowledged
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'SENT', acked_at = NULL WHERE dispatch_id = $1`, [run.dispatchId]);
    expect((await start(run.runId, run.dispatchId)).body.data!.startValidation).toEqual({ ...LOSER, runStatus: 'STAGE_VALIDATING' });
    expect((await dispatchRow(run.dispatchId)).status).toBe('ACKED');
  });

  it('refuses a dispatch of another run, an unknown dispatch and one for a run still extracting with 409 DISPATCH_MISMATCH', async () => {
    const a = await completeRun(api);
    const b = await completeRun(api);
    for (const dispatchId of [b.dispatchId, randomUUID()]) {
      const res = await start(a.runId, dispatchId);
      expect(res.status).toBe(409);
      expect(res.code).toBe('DISPATCH_MISMATCH');
      expect(res.headers.get('x-error-code')).toBe('DISPATCH_MISMATCH');
    }
    expect((await dispatchRow(b.dispatchId)).status).toBe('PENDING');
    const extracting = await startRun(api, [5]);
    const res = await start(extracting.runId, randomUUID());
    expect(res.status).toBe(409);
    expect(res.code).toBe('DISPATCH_MISMATCH');
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = ANY($1)', [[a.runId, extracting.runId]]);
    expect(rows.map((r) => r.status).sort()).toEqual(['EXTRACTED_VALIDATED', 'EXTRACTING']);
  });

  it('answers 404 RUN_NOT_FOUND for an unknown run, 422 for malformed input, and needs the nifi role', async () => {
    const run = await completeRun(api);
    const missing = await start(randomUUID(), run.dispatchId);
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('RUN_NOT_FOUND');
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

  it('lets exactly one of 8 concurrent starts win', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await completeRun(api, [2]);
      const results = await Promise.all(Array.from({ length: 8 }, () => start(run.runId, run.dispatchId)));
      expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
      const started = results.filter((r) => r.body.data!.startValidation.started);
      expect(started).toHaveLength(1);
      expect(started[0]!.body.data!.startValidation.extractedCount).toBe(2);
      for (const loser of results.filter((r) => !r.body.data!.startValidation.started)) {
        expect(loser.body.data!.startValidation).toEqual({ ...LOSER, runStatus: 'STAGE_VALIDATING' });
      }
      expect((await dispatchRow(run.dispatchId)).status).toBe('ACKED');
      expect(await eventsNamed(run.runId, 'STAGE_VALIDATION_STARTED')).toHaveLength(1);
    }
  });
});

describe('recordMetrics', () => {
  it('upserts STAGING metrics while STAGE_VALIDATING and touches the run heartbeat', async () => {
    const run = await toStageValidating(api);
    await api.sql.query(`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - interval '1 hour' WHERE run_id = $1`, [run.runId]);
    const res = await recordMetrics(
      api,
      run.runId,
      'STAGING',
      [
        { metricName: 'STAGE_COUNT', result: 'PASS', expectedValue: '7', actualValue: '7' },
        { ...metric('AMOUNT_SUM', 'WARN', '123.40'), expectedValue: '123.45' },
      ],
      'v2',
    );
    expect(res.status).toBe(200);
    expect(res.result).toEqual({ recorded: 2, failCount: 0, runStatus: 'STAGE_VALIDATING' });
    const { rows } = await api.sql.query(
      `SELECT metric_name, expected_value, actual_value, result, query_version FROM nifi_ops.load_validation
        WHERE run_id = $1 AND stage = 'STAGING' ORDER BY metric_name`,
      [run.runId],
    );
    expect(rows).toEqual([
      { metric_name: 'AMOUNT_SUM', expected_value: '123.45', actual_value: '123.40', result: 'WARN', query_version: 'v2' },
      { metric_name: 'STAGE_COUNT', expected_value: '7', actual_value: '7', result: 'PASS', query_version: 'v2' },
    ]);
    const heartbeat = await api.sql.query(
      `SELECT heartbeat_at > clock_timestamp() - interval '1 minute' AS fresh FROM nifi_ops.load_run WHERE run_id = $1`,
      [run.runId],
    );
    expect(heartbeat.rows[0].fresh).toBe(true);
    expect(await eventsNamed(run.runId, 'STAGING_METRIC_FAILED')).toEqual([]);

    // the same metric and version again overwrites
    await recordMetrics(api, run.runId, 'STAGING', [metric('AMOUNT_SUM', 'PASS', '123.45')], 'v2');
    const again = await api.sql.query(
      `SELECT actual_value, result FROM nifi_ops.load_validation WHERE run_id = $1 AND stage = 'STAGING' AND metric_name = 'AMOUNT_SUM'`,
      [run.runId],
    );
    expect(again.rows).toEqual([{ actual_value: '123.45', result: 'PASS' }]);
  });

  it('records a STAGING_METRIC_FAILED warning naming the failed metrics, by token name', async () => {
    const run = await toStageValidating(api);
    const res = await recordMetrics(api, run.runId, 'STAGING', [
      metric('MIN_TS', 'FAIL'),
      metric('STAGE_COUNT', 'PASS', '7'),
      metric('DUP_PK_COUNT', 'FAIL', '3'),
    ]);
    expect(res.result).toEqual({ recorded: 3, failCount: 2, runStatus: 'STAGE_VALIDATING' });
    expect(await eventsNamed(run.runId, 'STAGING_METRIC_FAILED')).toEqual([
      expect.objectContaining({ event_level: 'WARN', message: 'MIN_TS, DUP_PK_COUNT', actor: 'nifi-cluster' }),
    ]);
  });

  it('refuses a stage that does not match the run status with 409 RUN_STATUS_MISMATCH {runStatus, stage}', async () => {
    const validating = await toStageValidating(api);
    const target = await recordMetrics(api, validating.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect(target.status).toBe(409);
    expect(target.code).toBe('RUN_STATUS_MISMATCH');
    expect(target.details).toEqual({ runStatus: 'STAGE_VALIDATING', stage: 'TARGET' });

    const validated = await toStagingValidated(api);
    const staging = await recordMetrics(api, validated.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7')]);
    expect(staging.status).toBe(409);
    expect(staging.details).toEqual({ runStatus: 'STAGING_VALIDATED', stage: 'STAGING' });
    const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_validation WHERE run_id = $1 AND stage = 'TARGET'`, [
      validating.runId,
    ]);
    expect(rows[0].n).toBe(0);

    const missing = await recordMetrics(api, randomUUID(), 'STAGING', [metric('STAGE_COUNT')]);
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('RUN_NOT_FOUND');
  });

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

describe('markStageValidated', () => {
  it('moves to STAGING_VALIDATED with the STAGE_COUNT as staging count once the metrics pass, and replays as validated', async () => {
    const run = await toStageValidating(api, [3, 4]);
    await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7'), metric('NULL_PK', 'WARN')]);
    const res = await markStageValidated(run.runId);
    expect(res.body.data!.markStageValidated).toEqual({
      stageValidated: true,
      runStatus: 'STAGING_VALIDATED',
      reasons: [],
      stagingCount: 7,
    });
    const { rows } = await api.sql.query('SELECT status, staging_count FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ status: 'STAGING_VALIDATED', staging_count: '7' });
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATED')).toEqual([
      expect.objectContaining({ event_level: 'INFO', actor: 'nifi-cluster', row_count: '7' }),
    ]);
    const replay = await markStageValidated(run.runId);
    expect(replay.body.data!.markStageValidated).toEqual({
      stageValidated: true,
      runStatus: 'STAGING_VALIDATED',
      reasons: [],
      stagingCount: 7,
    });
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATED')).toHaveLength(1);
  });

  it('refuses without metrics and with a FAIL (state unchanged); NiFi then fails the run and publishing is refused', async () => {
    const run = await toStageValidating(api);
    const none = await markStageValidated(run.runId);
    expect(none.body.data!.markStageValidated).toEqual({
      stageValidated: false,
      runStatus: 'STAGE_VALIDATING',
      reasons: ['NO_METRICS'],
      stagingCount: null,
    });
    await recordMetrics(api, run.runId, 'STAGING', [metric('MIN_TS', 'FAIL'), metric('STAGE_COUNT', 'PASS', '7')]);
    const failing = await markStageValidated(run.runId);
    expect(failing.body.data!.markStageValidated).toMatchObject({
      stageValidated: false,
      runStatus: 'STAGE_VALIDATING',
      reasons: ['FAIL MIN_TS'],
    });
    const fail = await api.gql(FAIL_RUN, {
      input: {
        runId: run.runId,
        expectedStatus: 'STAGE_VALIDATING',
        failStatus: 'FAILED_STAGE_VALIDATION',
        errorStage: 'STAGING',
        errorCode: 'STAGE_VALIDATION_FAILED',
      },
    });
    expect(fail.body.data!.failRun.runStatus).toBe('FAILED_STAGE_VALIDATION');
    const claim = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken: randomUUID() } });
    expect(claim.body.data!.claimPublish).toEqual({ claimed: false, runStatus: 'FAILED_STAGE_VALIDATION' });
    const after = await markStageValidated(run.runId);
    expect(after.body.data!.markStageValidated.reasons).toEqual(['RUN_STATUS FAILED_STAGE_VALIDATION']);
  });

  it('lets a later PASS of the same metric and version override a FAIL, but a FAIL under another version keeps blocking', async () => {
    const run = await toStageValidating(api);
    await recordMetrics(api, run.runId, 'STAGING', [metric('MIN_TS', 'FAIL'), metric('STAGE_COUNT', 'PASS', '7')], 'v1');
    await recordMetrics(api, run.runId, 'STAGING', [metric('MIN_TS', 'FAIL')], 'v2');
    await recordMetrics(api, run.runId, 'STAGING', [metric('MIN_TS', 'PASS')], 'v1');
    expect((await markStageValidated(run.runId)).body.data!.markStageValidated.reasons).toEqual(['FAIL MIN_TS']);
    await recordMetrics(api, run.runId, 'STAGING', [metric('MIN_TS', 'PASS')], 'v2');
    expect((await markStageValidated(run.runId)).body.data!.markStageValidated.stageValidated).toBe(true);
  });

  it('refuses a STAGE_COUNT that differs from the extracted count with COUNT_MISMATCH (deviation 7)', async () => {
    const run = await toStageValidating(api, [3, 4]);
    await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '6')]);
    const res = await markStageValidated(run.runId);
    expect(res.body.data!.markStageValidated).toEqual({
      stageValidated: false,
      runStatus: 'STAGE_VALIDATING',
      reasons: ['COUNT_MISMATCH STAGE_COUNT=6 expected=7'],
      stagingCount: null,
    });
    // a second query version's STAGE_COUNT is checked as well
    await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7')]);
    await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '8')], 'v2');
    expect((await markStageValidated(run.runId)).body.data!.markStageValidated.reasons).toEqual([
      'COUNT_MISMATCH STAGE_COUNT=8 expected=7',
    ]);
    const { rows } = await api.sql.query('SELECT status, staging_count FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ status: 'STAGE_VALIDATING', staging_count: null });
  });

  it.each(['7.0', '-7', 'seven', '', null, '99999999999999999999'])(
    'refuses a non-integer STAGE_COUNT %j with a reason instead of a silent NULL (deviation 8)',
    async (value) => {
      const run = await toStageValidating(api, [3, 4]);
      await recordMetrics(api, run.runId, 'STAGING', [{ metricName: 'STAGE_COUNT', result: 'PASS', actualValue: value }]);
      const res = await markStageValidated(run.runId);
      expect(res.body.data!.markStageValidated).toMatchObject({
        stageValidated: false,
        runStatus: 'STAGE_VALIDATING',
        reasons: [`COUNT_NOT_INTEGER STAGE_COUNT=${value ?? 'null'}`],
      });
    },
  );

  it('validates without a STAGE_COUNT, leaving the staging count empty', async () => {
    const run = await toStageValidating(api);
    await recordMetrics(api, run.runId, 'STAGING', [metric('DUP_PK_COUNT')]);
    const res = await markStageValidated(run.runId);
    expect(res.body.data!.markStageValidated).toEqual({
      stageValidated: true,
      runStatus: 'STAGING_VALIDATED',
      reasons: [],
      stagingCount: null,
    });
  });

  it('validates once under concurrent calls: every caller sees STAGING_VALIDATED, one event', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await toStageValidating(api, [2]);
      await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '2')]);
      const results = await Promise.all(Array.from({ length: 6 }, () => markStageValidated(run.runId)));
      for (const r of results) {
        expect(r.body.data!.markStageValidated).toEqual({
          stageValidated: true,
          runStatus: 'STAGING_VALIDATED',
          reasons: [],
          stagingCount: 2,
        });
      }
      expect(await eventsNamed(run.runId, 'STAGE_VALIDATED')).toHaveLength(1);
    }
  });

  it('answers RUN_STATUS for a run not in STAGE_VALIDATING, and 404 for an unknown run', async () => {
    const run = await completeRun(api);
    const res = await markStageValidated(run.runId);
    expect(res.body.data!.markStageValidated).toEqual({
      stageValidated: false,
      runStatus: 'EXTRACTED_VALIDATED',
      reasons: ['RUN_STATUS EXTRACTED_VALIDATED'],
      stagingCount: null,
    });
    const missing = await markStageValidated(randomUUID());
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('RUN_NOT_FOUND');
  });
});
