// Publishing's rules (ref §3.12–3.15): claimPublish's one owner, reportPublishResult's outcomes, markSuccess's
// judgement, the lifecycle after extraction — performed on the database directly; the races on separate
// connections. Roles and input parsing: test/api/publish/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import { markSuccessOperation } from '../../../src/domain/publish/mark-success.js';
import { type ReportPublishResultCommand, reportPublishResultOperation } from '../../../src/domain/publish/report-publish-result.js';
import { getRun } from '../../../src/domain/runs/queries.js';
import { markStageValidatedOperation } from '../../../src/domain/validation/mark-stage-validated.js';
import {
  ACTOR,
  createdRun,
  type DomainTest,
  measured as metric,
  metricsRecorded,
  publishedRun,
  refusal,
  runFailed,
  stageValidatingRun,
  stagingValidatedRun,
  startDomainTest,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const claimPublish = (runId: string, publishToken: string) => perform(t.db, claimPublishOperation, { runId, publishToken, actor: ACTOR });
const reportResult = (
  runId: string,
  publishToken: string,
  outcome: ReportPublishResultCommand['outcome'],
  extra: Partial<ReportPublishResultCommand> = {},
) =>
  perform(t.db, reportPublishResultOperation, {
    runId,
    publishToken,
    outcome,
    errorCode: null,
    message: '',
    queryId: null,
    details: {},
    actor: ACTOR,
    ...extra,
  });
const markSuccess = (runId: string, targetCount: bigint | null = null) =>
  perform(t.db, markSuccessOperation, { runId, targetCount, actor: ACTOR });
const recordMetrics = (runId: string, stage: 'STAGING' | 'TARGET', metrics: Array<ReturnType<typeof metric>>) =>
  metricsRecorded(t, runId, stage, metrics);

async function runRow(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT status, staging_count, target_count, publish_token::text, publish_started_at, published_at, completed_at,
            error_stage, error_code, error_message
       FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function eventNames(runId: string): Promise<string[]> {
  const { rows } = await t.sql.query('SELECT event_name FROM nifi_ops.load_event WHERE run_id = $1 ORDER BY event_time', [runId]);
  return rows.map((r) => r.event_name);
}

describe('the lifecycle after extraction', () => {
  it('goes from EXTRACTED_VALIDATED to SUCCESS, recording every step by token name, and frees the business key', async () => {
    const run = await publishedRun(t, [3, 4]);
    const target = await recordMetrics(run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect(target).toEqual({ recorded: 1, failCount: 0, runStatus: 'PUBLISHED' });
    expect(await markSuccess(run.runId, 7n)).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 7n });
    expect(await markSuccess(run.runId)).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 7n });

    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'SUCCESS', staging_count: '7', target_count: '7', publish_token: run.publishToken });
    expect(row.publish_started_at).toBeInstanceOf(Date);
    expect(row.published_at).toBeInstanceOf(Date);
    expect(row.completed_at).toBeInstanceOf(Date);
    expect((await eventNames(run.runId)).slice(-6)).toEqual([
      'EXTRACT_VALIDATED',
      'STAGE_VALIDATION_STARTED',
      'STAGE_VALIDATED',
      'PUBLISH_STARTED',
      'PUBLISH_FINISHED',
      'RUN_SUCCESS',
    ]);
    const { rows } = await t.sql.query(`SELECT DISTINCT actor FROM nifi_ops.load_event WHERE run_id = $1`, [run.runId]);
    expect(rows).toEqual([{ actor: 'nifi-cluster' }]);

    expect((await createdRun(t, { businessKey: run.businessKey })).created).toBe(true);
  });
});

describe('claimPublish', () => {
  it('gives the claim to the first token, replays it for the same token, and refuses every other token', async () => {
    const run = await stagingValidatedRun(t);
    const [first, second] = [randomUUID(), randomUUID()];
    expect(await claimPublish(run.runId, first)).toEqual({ claimed: true, runStatus: 'PUBLISHING' });
    expect(await claimPublish(run.runId, first)).toEqual({ claimed: true, runStatus: 'PUBLISHING' });
    expect(await claimPublish(run.runId, second)).toEqual({ claimed: false, runStatus: 'PUBLISHING' });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'PUBLISHING', publish_token: first });
    expect(row.publish_started_at).toBeInstanceOf(Date);
    const { rows } = await t.sql.query(
      `SELECT actor, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_STARTED'`,
      [run.runId],
    );
    expect(rows).toEqual([{ actor: 'nifi-cluster', details: { publishToken: first } }]);
  });

  it('refuses a run that is not STAGING_VALIDATED with claimed=false and its status', async () => {
    const run = await stageValidatingRun(t);
    expect(await claimPublish(run.runId, randomUUID())).toEqual({ claimed: false, runStatus: 'STAGE_VALIDATING' });
    expect((await runRow(run.runId)).publish_token).toBeNull();
  });

  it('answers 404 for an unknown run', async () => {
    const missing = await refusal(claimPublish(randomUUID(), randomUUID()));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });

  it('lets exactly one of 10 concurrent claims with different tokens win', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await stagingValidatedRun(t, [2]);
      const tokens = Array.from({ length: 10 }, () => randomUUID());
      const results = await Promise.all(tokens.map((token) => claimPublish(run.runId, token)));
      const winners = tokens.filter((_, i) => results[i]!.claimed);
      expect(winners).toHaveLength(1);
      expect(results.map((r) => r.runStatus)).toEqual(Array(10).fill('PUBLISHING'));
      expect((await runRow(run.runId)).publish_token).toBe(winners[0]);
      expect((await eventNames(run.runId)).filter((n) => n === 'PUBLISH_STARTED')).toHaveLength(1);
    }
  });
});

describe('reportPublishResult', () => {
  it('needs the publish token, replays the same outcome as unchanged, and refuses a late PUBLISHED after PUBLISH_UNKNOWN', async () => {
    const run = await stagingValidatedRun(t);
    const noClaimYet = await refusal(reportResult(run.runId, randomUUID(), 'PUBLISHED'));
    expect([noClaimYet.httpStatus, noClaimYet.code]).toEqual([409, 'PUBLISH_TOKEN_MISMATCH']);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const wrong = await refusal(reportResult(run.runId, randomUUID(), 'PUBLISHED'));
    expect([wrong.httpStatus, wrong.code]).toEqual([409, 'PUBLISH_TOKEN_MISMATCH']);

    const unknown = await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN', { message: 'HiveServer2 connection lost' });
    expect(unknown).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: true });
    expect(await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN')).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: false });
    const late = await refusal(reportResult(run.runId, publishToken, 'PUBLISHED'));
    expect([late.httpStatus, late.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
    expect(late.details).toEqual({ runStatus: 'PUBLISH_UNKNOWN' });

    expect(await runRow(run.runId)).toMatchObject({
      status: 'PUBLISH_UNKNOWN',
      error_stage: 'PUBLISH',
      error_code: 'PUBLISH_UNKNOWN',
      error_message: 'HiveServer2 connection lost',
      completed_at: null,
      published_at: null,
    });
    const { rows } = await t.sql.query(
      `SELECT event_level, actor, message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN'`,
      [run.runId],
    );
    expect(rows).toEqual([{ event_level: 'ERROR', actor: 'nifi-cluster', message: 'HiveServer2 connection lost' }]);
  });

  it("keeps the Hive query id on the run and the details in the outcome's event; a replay or a result without one keeps it", async () => {
    const run = await stagingValidatedRun(t);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const details = { hiveServer: 'hs2-02.example:10000', operationHandle: 'op-7', stage: 'not ours to change' };
    const unknown = await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN', {
      message: 'connection lost after COMMIT was sent',
      queryId: 'hive_20261201101500_4f1c',
      details,
    });
    expect(unknown).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: true });
    await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN', { queryId: 'hive_other' });

    const read = await getRun(t.db.prisma, run.runId);
    expect({ publishToken: read.publishToken, publishQueryId: read.publishQueryId }).toEqual({
      publishToken,
      publishQueryId: 'hive_20261201101500_4f1c',
    });
    const { rows } = await t.sql.query(`SELECT details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN'`, [
      run.runId,
    ]);
    expect(rows).toEqual([
      {
        details: {
          hiveServer: 'hs2-02.example:10000',
          operationHandle: 'op-7',
          stage: 'PUBLISH',
          from: 'PUBLISHING',
          to: 'PUBLISH_UNKNOWN',
          queryId: 'hive_20261201101500_4f1c',
        },
      },
    ]);

    // a PUBLISHED result without a query id does not erase one reported on the same run (no such run here: a new one)
    const published = await publishedRun(t);
    const { rows: publishedRow } = await t.sql.query('SELECT publish_query_id FROM nifi_ops.load_run WHERE run_id = $1', [published.runId]);
    expect(publishedRow).toEqual([{ publish_query_id: null }]);
  });

  it('ends the run FAILED_PUBLISH with the reported error code, or the outcome as code, and frees the business key', async () => {
    const run = await stagingValidatedRun(t);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const res = await reportResult(run.runId, publishToken, 'FAILED_PUBLISH', { errorCode: '42000', message: 'missing column' });
    expect(res).toEqual({ runStatus: 'FAILED_PUBLISH', changed: true });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'FAILED_PUBLISH', error_stage: 'PUBLISH', error_code: '42000', error_message: 'missing column' });
    expect(row.completed_at).toBeInstanceOf(Date);
    expect((await eventNames(run.runId)).at(-1)).toBe('RUN_FAILED');

    const other = await stagingValidatedRun(t);
    const otherToken = randomUUID();
    await claimPublish(other.runId, otherToken);
    await reportResult(other.runId, otherToken, 'FAILED_PUBLISH');
    expect(await runRow(other.runId)).toMatchObject({ error_code: 'FAILED_PUBLISH', error_message: null });

    expect((await createdRun(t, { businessKey: run.businessKey })).created).toBe(true);
  });

  it('takes exactly one of two concurrent outcomes; the other is refused with the status the first set', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await stagingValidatedRun(t, [2]);
      const publishToken = randomUUID();
      await claimPublish(run.runId, publishToken);
      const outcomes = await Promise.allSettled([
        reportResult(run.runId, publishToken, 'PUBLISHED'),
        reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN'),
      ]);
      const winner = outcomes.find((o) => o.status === 'fulfilled');
      const loser = outcomes.find((o) => o.status === 'rejected');
      expect(winner!.value.changed).toBe(true);
      expect(loser!.reason).toMatchObject({ code: 'RUN_STATUS_MISMATCH', httpStatus: 409 });
      expect(loser!.reason.details).toEqual({ runStatus: winner!.value.runStatus });
      expect((await runRow(run.runId)).status).toBe(winner!.value.runStatus);
    }
  });

  it('answers 404 for an unknown run', async () => {
    const missing = await refusal(reportResult(randomUUID(), randomUUID(), 'PUBLISHED'));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });
});

describe('markSuccess', () => {
  it('refuses without TARGET metrics or with a FAIL (NiFi then fails the target validation)', async () => {
    const run = await publishedRun(t);
    expect(await markSuccess(run.runId, 7n)).toEqual({
      success: false,
      runStatus: 'PUBLISHED',
      reasons: ['NO_METRICS'],
      targetCount: null,
    });
    await recordMetrics(run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7'), metric('AMOUNT_SUM', 'FAIL')]);
    expect((await markSuccess(run.runId, 7n)).reasons).toEqual(['FAIL AMOUNT_SUM']);
    const { rows } = await t.sql.query(
      `SELECT event_level, actor, message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'TARGET_METRIC_FAILED'`,
      [run.runId],
    );
    expect(rows).toEqual([{ event_level: 'WARN', actor: 'nifi-cluster', message: 'AMOUNT_SUM' }]);
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
    const fail = await runFailed(t, run.runId, {
      expectedStatus: 'PUBLISHED',
      failStatus: 'FAILED_TARGET_VALIDATION',
      errorStage: 'TARGET',
      errorCode: 'TARGET_VALIDATION_FAILED',
    });
    expect(fail).toMatchObject({ runStatus: 'FAILED_TARGET_VALIDATION', changed: true });
  });

  it('answers RUN_STATUS before publication and 404 for an unknown run', async () => {
    const run = await stagingValidatedRun(t);
    expect(await markSuccess(run.runId)).toEqual({
      success: false,
      runStatus: 'STAGING_VALIDATED',
      reasons: ['RUN_STATUS STAGING_VALIDATED'],
      targetCount: null,
    });
    const missing = await refusal(markSuccess(randomUUID()));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });

  it('requires TARGET_COUNT and targetCount to equal the staging count (deviation 7)', async () => {
    const run = await publishedRun(t, [3, 4]);
    await recordMetrics(run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '6')]);
    expect((await markSuccess(run.runId)).reasons).toEqual(['COUNT_MISMATCH TARGET_COUNT=6 expected=7']);
    expect((await markSuccess(run.runId, 8n)).reasons).toEqual([
      'COUNT_MISMATCH TARGET_COUNT=6 expected=7',
      'COUNT_MISMATCH targetCount=8 expected=7',
    ]);
    await recordMetrics(run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect(await markSuccess(run.runId, 8n)).toEqual({
      success: false,
      runStatus: 'PUBLISHED',
      reasons: ['COUNT_MISMATCH targetCount=8 expected=7'],
      targetCount: null,
    });
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
    // without targetCount the TARGET_COUNT metric is the target count
    expect(await markSuccess(run.runId)).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 7n });
    expect((await runRow(run.runId)).target_count).toBe('7');
  });

  it('refuses a non-integer TARGET_COUNT with a reason (deviation 8)', async () => {
    const run = await publishedRun(t);
    await recordMetrics(run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7.5')]);
    expect((await markSuccess(run.runId)).reasons).toEqual(['COUNT_NOT_INTEGER TARGET_COUNT=7.5']);
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
  });

  it('succeeds once under concurrent calls: every caller sees SUCCESS, one RUN_SUCCESS event', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await publishedRun(t, [2]);
      await recordMetrics(run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '2')]);
      const results = await Promise.all(Array.from({ length: 6 }, () => markSuccess(run.runId)));
      for (const r of results) expect(r).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 2n });
      expect((await eventNames(run.runId)).filter((n) => n === 'RUN_SUCCESS')).toHaveLength(1);
    }
  });

  it('expects the extracted count when staging was validated without a STAGE_COUNT', async () => {
    const run = await stageValidatingRun(t, [3, 4]);
    await recordMetrics(run.runId, 'STAGING', [metric('DUP_PK_COUNT')]);
    expect((await perform(t.db, markStageValidatedOperation, { runId: run.runId, actor: ACTOR })).stageValidated).toBe(true);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    await reportResult(run.runId, publishToken, 'PUBLISHED');
    await recordMetrics(run.runId, 'TARGET', [metric('DUP_PK_COUNT')]);
    expect((await markSuccess(run.runId, 6n)).reasons).toEqual(['COUNT_MISMATCH targetCount=6 expected=7']);
    expect(await markSuccess(run.runId, 7n)).toMatchObject({ success: true, targetCount: 7n });
  });
});
