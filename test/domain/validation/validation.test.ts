// The validation flow's rules (ref §3.9–3.11): startValidation's dedup gate and ACK, recordMetrics' upserts and
// refusals, markStageValidated's judgement — performed on the database directly; the races on separate
// connections. Roles and input parsing: test/api/validation/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import { markStageValidatedOperation } from '../../../src/domain/validation/mark-stage-validated.js';
import { startValidationOperation } from '../../../src/domain/validation/start-validation.js';
import { HDFS_ROOT, JOB, LOST_VALIDATION_START } from '../../support/fixtures.js';
import {
  ACTOR,
  type DomainTest,
  extractedRun,
  measured as metric,
  metricsRecorded,
  refusal,
  runFailed,
  stageValidatingRun,
  stagingValidatedRun,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const start = (runId: string, dispatchId: string) =>
  perform(t.db, startValidationOperation, { runId, dispatchId, node: 'nifi-02', actor: ACTOR });
const markStageValidated = (runId: string) => perform(t.db, markStageValidatedOperation, { runId, actor: ACTOR });
const recordMetrics = (runId: string, stage: 'STAGING' | 'TARGET', metrics: Array<ReturnType<typeof metric>>, queryVersion = 'v1') =>
  metricsRecorded(t, runId, stage, metrics, queryVersion);

async function dispatchRow(dispatchId: string) {
  const { rows } = await t.sql.query('SELECT status, acked_at FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [dispatchId]);
  return rows[0];
}

async function eventsNamed(runId: string, name: string) {
  const { rows } = await t.sql.query(
    `SELECT event_level, message, details, actor, row_count FROM nifi_ops.load_event
      WHERE run_id = $1 AND event_name = $2 ORDER BY event_time`,
    [runId, name],
  );
  return rows;
}

describe('startValidation', () => {
  it('starts the validation once with the run context and SOURCE metrics, ACKs the dispatch, and answers later calls with nulls', async () => {
    const run = await extractedRun(t, [3, 4]);
    expect(await start(run.runId, run.dispatchId)).toEqual({
      started: true,
      runStatus: 'STAGE_VALIDATING',
      jobKey: JOB,
      businessKey: run.businessKey,
      snapshotScn: '1234567890',
      hdfsRunPath: `${HDFS_ROOT}/${JOB}/run_id=${run.runId}`,
      stageTable: run.stageTable,
      sourceCount: 7n,
      extractedCount: 7n,
      sourceMetrics: { AMOUNT_SUM: '123.45', SOURCE_COUNT: '7' },
    });
    const dispatch = await dispatchRow(run.dispatchId);
    expect(dispatch.status).toBe('ACKED');
    expect(dispatch.acked_at).toBeInstanceOf(Date);
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATION_STARTED')).toEqual([
      expect.objectContaining({ event_level: 'INFO', actor: 'nifi-cluster', details: { dispatchId: run.dispatchId, node: 'nifi-02' } }),
    ]);

    expect(await start(run.runId, run.dispatchId)).toEqual({ ...LOST_VALIDATION_START, runStatus: 'STAGE_VALIDATING' });
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATION_STARTED')).toHaveLength(1);
  });

  it('ACKs the named dispatch even when the start loses, and from DEAD as well as SENT', async () => {
    const run = await extractedRun(t, [2]);
    await t.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = $1`, [
      run.dispatchId,
    ]);
    expect((await start(run.runId, run.dispatchId)).started).toBe(true);
    expect((await dispatchRow(run.dispatchId)).status).toBe('ACKED');

    // e.g. an operator resent it after NiFi had already started: the duplicate loses, the call is still acknowledged
    await t.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'SENT', acked_at = NULL WHERE dispatch_id = $1`, [run.dispatchId]);
    expect(await start(run.runId, run.dispatchId)).toEqual({ ...LOST_VALIDATION_START, runStatus: 'STAGE_VALIDATING' });
    expect((await dispatchRow(run.dispatchId)).status).toBe('ACKED');
  });

  it('refuses a dispatch of another run, an unknown dispatch and one for a run still extracting with 409 DISPATCH_MISMATCH', async () => {
    const a = await extractedRun(t);
    const b = await extractedRun(t);
    for (const dispatchId of [b.dispatchId, randomUUID()]) {
      const error = await refusal(start(a.runId, dispatchId));
      expect([error.httpStatus, error.code]).toEqual([409, 'DISPATCH_MISMATCH']);
    }
    expect((await dispatchRow(b.dispatchId)).status).toBe('PENDING');
    const extracting = await startedRun(t, [5]);
    const error = await refusal(start(extracting.runId, randomUUID()));
    expect([error.httpStatus, error.code]).toEqual([409, 'DISPATCH_MISMATCH']);
    const { rows } = await t.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = ANY($1)', [[a.runId, extracting.runId]]);
    expect(rows.map((r) => r.status).sort()).toEqual(['EXTRACTED_VALIDATED', 'EXTRACTING']);
  });

  it('answers 404 RUN_NOT_FOUND for an unknown run', async () => {
    const run = await extractedRun(t);
    const missing = await refusal(start(randomUUID(), run.dispatchId));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
    expect((await dispatchRow(run.dispatchId)).status).toBe('PENDING');
  });

  it('lets exactly one of 8 concurrent starts win', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await extractedRun(t, [2]);
      const results = await Promise.all(Array.from({ length: 8 }, () => start(run.runId, run.dispatchId)));
      const started = results.filter((r) => r.started);
      expect(started).toHaveLength(1);
      expect(started[0]!.extractedCount).toBe(2n);
      for (const loser of results.filter((r) => !r.started))
        expect(loser).toEqual({ ...LOST_VALIDATION_START, runStatus: 'STAGE_VALIDATING' });
      expect((await dispatchRow(run.dispatchId)).status).toBe('ACKED');
      expect(await eventsNamed(run.runId, 'STAGE_VALIDATION_STARTED')).toHaveLength(1);
    }
  });
});

describe('recordMetrics', () => {
  it('upserts STAGING metrics while STAGE_VALIDATING and touches the run heartbeat', async () => {
    const run = await stageValidatingRun(t);
    await t.sql.query(`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - interval '1 hour' WHERE run_id = $1`, [run.runId]);
    const res = await recordMetrics(
      run.runId,
      'STAGING',
      [
        { ...metric('STAGE_COUNT', 'PASS', '7'), expectedValue: '7' },
        { ...metric('AMOUNT_SUM', 'WARN', '123.40'), expectedValue: '123.45' },
      ],
      'v2',
    );
    expect(res).toEqual({ recorded: 2, failCount: 0, runStatus: 'STAGE_VALIDATING' });
    const { rows } = await t.sql.query(
      `SELECT metric_name, expected_value, actual_value, result, query_version FROM nifi_ops.load_validation
        WHERE run_id = $1 AND stage = 'STAGING' ORDER BY metric_name`,
      [run.runId],
    );
    expect(rows).toEqual([
      { metric_name: 'AMOUNT_SUM', expected_value: '123.45', actual_value: '123.40', result: 'WARN', query_version: 'v2' },
      { metric_name: 'STAGE_COUNT', expected_value: '7', actual_value: '7', result: 'PASS', query_version: 'v2' },
    ]);
    const heartbeat = await t.sql.query(
      `SELECT heartbeat_at > clock_timestamp() - interval '1 minute' AS fresh FROM nifi_ops.load_run WHERE run_id = $1`,
      [run.runId],
    );
    expect(heartbeat.rows[0].fresh).toBe(true);
    expect(await eventsNamed(run.runId, 'STAGING_METRIC_FAILED')).toEqual([]);

    // the same metric and version again overwrites
    await recordMetrics(run.runId, 'STAGING', [metric('AMOUNT_SUM', 'PASS', '123.45')], 'v2');
    const again = await t.sql.query(
      `SELECT actual_value, result FROM nifi_ops.load_validation WHERE run_id = $1 AND stage = 'STAGING' AND metric_name = 'AMOUNT_SUM'`,
      [run.runId],
    );
    expect(again.rows).toEqual([{ actual_value: '123.45', result: 'PASS' }]);
  });

  it('records a STAGING_METRIC_FAILED warning naming the failed metrics, by token name', async () => {
    const run = await stageValidatingRun(t);
    const res = await recordMetrics(run.runId, 'STAGING', [
      metric('MIN_TS', 'FAIL'),
      metric('STAGE_COUNT', 'PASS', '7'),
      metric('DUP_PK_COUNT', 'FAIL', '3'),
    ]);
    expect(res).toEqual({ recorded: 3, failCount: 2, runStatus: 'STAGE_VALIDATING' });
    expect(await eventsNamed(run.runId, 'STAGING_METRIC_FAILED')).toEqual([
      expect.objectContaining({ event_level: 'WARN', message: 'MIN_TS, DUP_PK_COUNT', actor: 'nifi-cluster' }),
    ]);
  });

  it('refuses a stage that does not match the run status with 409 RUN_STATUS_MISMATCH {runStatus, stage}', async () => {
    const validating = await stageValidatingRun(t);
    const target = await refusal(recordMetrics(validating.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]));
    expect([target.httpStatus, target.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
    expect(target.details).toEqual({ runStatus: 'STAGE_VALIDATING', stage: 'TARGET' });

    const validated = await stagingValidatedRun(t);
    const staging = await refusal(recordMetrics(validated.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7')]));
    expect(staging.httpStatus).toBe(409);
    expect(staging.details).toEqual({ runStatus: 'STAGING_VALIDATED', stage: 'STAGING' });
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_validation WHERE run_id = $1 AND stage = 'TARGET'`, [
      validating.runId,
    ]);
    expect(rows[0].n).toBe(0);

    const missing = await refusal(recordMetrics(randomUUID(), 'STAGING', [metric('STAGE_COUNT')]));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });
});

describe('markStageValidated', () => {
  it('moves to STAGING_VALIDATED with the STAGE_COUNT as staging count once the metrics pass, and replays as validated', async () => {
    const run = await stageValidatingRun(t, [3, 4]);
    await recordMetrics(run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7'), metric('NULL_PK', 'WARN')]);
    expect(await markStageValidated(run.runId)).toEqual({
      stageValidated: true,
      runStatus: 'STAGING_VALIDATED',
      reasons: [],
      stagingCount: 7n,
    });
    const { rows } = await t.sql.query('SELECT status, staging_count FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ status: 'STAGING_VALIDATED', staging_count: '7' });
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATED')).toEqual([
      expect.objectContaining({ event_level: 'INFO', actor: 'nifi-cluster', row_count: '7' }),
    ]);
    expect(await markStageValidated(run.runId)).toEqual({
      stageValidated: true,
      runStatus: 'STAGING_VALIDATED',
      reasons: [],
      stagingCount: 7n,
    });
    expect(await eventsNamed(run.runId, 'STAGE_VALIDATED')).toHaveLength(1);
  });

  it('refuses without metrics and with a FAIL (state unchanged); NiFi then fails the run and publishing is refused', async () => {
    const run = await stageValidatingRun(t);
    expect(await markStageValidated(run.runId)).toEqual({
      stageValidated: false,
      runStatus: 'STAGE_VALIDATING',
      reasons: ['NO_METRICS'],
      stagingCount: null,
    });
    await recordMetrics(run.runId, 'STAGING', [metric('MIN_TS', 'FAIL'), metric('STAGE_COUNT', 'PASS', '7')]);
    expect(await markStageValidated(run.runId)).toMatchObject({
      stageValidated: false,
      runStatus: 'STAGE_VALIDATING',
      reasons: ['FAIL MIN_TS'],
    });
    const fail = await runFailed(t, run.runId, {
      expectedStatus: 'STAGE_VALIDATING',
      failStatus: 'FAILED_STAGE_VALIDATION',
      errorStage: 'STAGING',
      errorCode: 'STAGE_VALIDATION_FAILED',
    });
    expect(fail.runStatus).toBe('FAILED_STAGE_VALIDATION');
    const claim = await perform(t.db, claimPublishOperation, { runId: run.runId, publishToken: randomUUID(), actor: ACTOR });
    expect(claim).toEqual({ claimed: false, runStatus: 'FAILED_STAGE_VALIDATION' });
    expect((await markStageValidated(run.runId)).reasons).toEqual(['RUN_STATUS FAILED_STAGE_VALIDATION']);
  });

  it('lets a later PASS of the same metric and version override a FAIL, but a FAIL under another version keeps blocking', async () => {
    const run = await stageValidatingRun(t);
    await recordMetrics(run.runId, 'STAGING', [metric('MIN_TS', 'FAIL'), metric('STAGE_COUNT', 'PASS', '7')], 'v1');
    await recordMetrics(run.runId, 'STAGING', [metric('MIN_TS', 'FAIL')], 'v2');
    await recordMetrics(run.runId, 'STAGING', [metric('MIN_TS', 'PASS')], 'v1');
    expect((await markStageValidated(run.runId)).reasons).toEqual(['FAIL MIN_TS']);
    await recordMetrics(run.runId, 'STAGING', [metric('MIN_TS', 'PASS')], 'v2');
    expect((await markStageValidated(run.runId)).stageValidated).toBe(true);
  });

  it('refuses a STAGE_COUNT that differs from the extracted count with COUNT_MISMATCH (deviation 7)', async () => {
    const run = await stageValidatingRun(t, [3, 4]);
    await recordMetrics(run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '6')]);
    expect(await markStageValidated(run.runId)).toEqual({
      stageValidated: false,
      runStatus: 'STAGE_VALIDATING',
      reasons: ['COUNT_MISMATCH STAGE_COUNT=6 expected=7'],
      stagingCount: null,
    });
    // a second query version's STAGE_COUNT is checked as well
    await recordMetrics(run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '7')]);
    await recordMetrics(run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '8')], 'v2');
    expect((await markStageValidated(run.runId)).reasons).toEqual(['COUNT_MISMATCH STAGE_COUNT=8 expected=7']);
    const { rows } = await t.sql.query('SELECT status, staging_count FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ status: 'STAGE_VALIDATING', staging_count: null });
  });

  it.each(['7.0', '-7', 'seven', '', null, '99999999999999999999'])(
    'refuses a non-integer STAGE_COUNT %j with a reason instead of a silent NULL (deviation 8)',
    async (value) => {
      const run = await stageValidatingRun(t, [3, 4]);
      await recordMetrics(run.runId, 'STAGING', [{ ...metric('STAGE_COUNT', 'PASS', value), expectedValue: null }]);
      expect(await markStageValidated(run.runId)).toMatchObject({
        stageValidated: false,
        runStatus: 'STAGE_VALIDATING',
        reasons: [`COUNT_NOT_INTEGER STAGE_COUNT=${value ?? 'null'}`],
      });
    },
  );

  it('validates without a STAGE_COUNT, leaving the staging count empty', async () => {
    const run = await stageValidatingRun(t);
    await recordMetrics(run.runId, 'STAGING', [metric('DUP_PK_COUNT')]);
    expect(await markStageValidated(run.runId)).toEqual({
      stageValidated: true,
      runStatus: 'STAGING_VALIDATED',
      reasons: [],
      stagingCount: null,
    });
  });

  it('validates once under concurrent calls: every caller sees STAGING_VALIDATED, one event', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await stageValidatingRun(t, [2]);
      await recordMetrics(run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', '2')]);
      const results = await Promise.all(Array.from({ length: 6 }, () => markStageValidated(run.runId)));
      for (const r of results) {
        expect(r).toEqual({ stageValidated: true, runStatus: 'STAGING_VALIDATED', reasons: [], stagingCount: 2n });
      }
      expect(await eventsNamed(run.runId, 'STAGE_VALIDATED')).toHaveLength(1);
    }
  });

  it('answers RUN_STATUS for a run not in STAGE_VALIDATING, and 404 for an unknown run', async () => {
    const run = await extractedRun(t);
    expect(await markStageValidated(run.runId)).toEqual({
      stageValidated: false,
      runStatus: 'EXTRACTED_VALIDATED',
      reasons: ['RUN_STATUS EXTRACTED_VALIDATED'],
      stagingCount: null,
    });
    const missing = await refusal(markStageValidated(randomUUID()));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });
});
