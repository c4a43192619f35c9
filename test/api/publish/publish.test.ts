import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import {
  CLAIM_PUBLISH,
  CREATE_RUN,
  FAIL_RUN,
  HDFS_ROOT,
  JOB,
  MARK_STAGE_VALIDATED,
  MARK_SUCCESS,
  REPORT_PUBLISH_RESULT,
  metric,
  recordMetrics,
  toPublished,
  toStageValidating,
  toStagingValidated,
} from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const claimPublish = (runId: string, publishToken: string, token: 'nifi' | 'operator' = 'nifi') =>
  api.gql(CLAIM_PUBLISH, { input: { runId, publishToken } }, { token });
const reportResult = (runId: string, publishToken: string, outcome: string, extra: Record<string, unknown> = {}) =>
  api.gql(REPORT_PUBLISH_RESULT, { input: { runId, publishToken, outcome, ...extra } });
const markSuccess = (runId: string, targetCount?: string | number) =>
  api.gql(MARK_SUCCESS, { input: { runId, ...(targetCount === undefined ? {} : { targetCount }) } });

async function runRow(runId: string) {
  const { rows } = await api.sql.query(
    `SELECT status, staging_count, target_count, publish_token::text, publish_started_at, published_at, completed_at,
            error_stage, error_code, error_message
       FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function eventNames(runId: string): Promise<string[]> {
  const { rows } = await api.sql.query('SELECT event_name FROM nifi_ops.load_event WHERE run_id = $1 ORDER BY event_time', [runId]);
  return rows.map((r) => r.event_name);
}

describe('the lifecycle after extraction', () => {
  it('goes from EXTRACTED_VALIDATED to SUCCESS, recording every step by token name, and frees the business key', async () => {
    const run = await toPublished(api, [3, 4]);
    const target = await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect(target.result).toEqual({ recorded: 1, failCount: 0, runStatus: 'PUBLISHED' });
    const success = await markSuccess(run.runId, '7');
    expect(success.body.data!.markSuccess).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 7 });
    const replay = await markSuccess(run.runId);
    expect(replay.body.data!.markSuccess).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 7 });

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
    const { rows } = await api.sql.query(`SELECT DISTINCT actor FROM nifi_ops.load_event WHERE run_id = $1`, [run.runId]);
    expect(rows).toEqual([{ actor: 'nifi-cluster' }]);

    const next = await api.gql(CREATE_RUN, {
      input: { jobKey: JOB, businessKey: run.businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_' },
    });
    expect(next.body.data!.createRun.created).toBe(true);
  });
});

describe('claimPublish', () => {
  it('gives the claim to the first token, replays it for the same token, and refuses every other token', async () => {
    const run = await toStagingValidated(api);
    const [first, second] = [randomUUID(), randomUUID()];
    expect((await claimPublish(run.runId, first)).body.data!.claimPublish).toEqual({ claimed: true, runStatus: 'PUBLISHING' });
    expect((await claimPublish(run.runId, first.toUpperCase())).body.data!.claimPublish).toEqual({
      claimed: true,
      runStatus: 'PUBLISHING',
    });
    expect((await claimPublish(run.runId, second)).body.data!.claimPublish).toEqual({ claimed: false, runStatus: 'PUBLISHING' });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'PUBLISHING', publish_token: first });
    expect(row.publish_started_at).toBeInstanceOf(Date);
    const { rows } = await api.sql.query(
      `SELECT actor, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_STARTED'`,
      [run.runId],
    );
    expect(rows).toEqual([{ actor: 'nifi-cluster', details: { publishToken: first } }]);
  });

  it('refuses a run that is not STAGING_VALIDATED with claimed=false and its status', async () => {
    const run = await toStageValidating(api);
    expect((await claimPublish(run.runId, randomUUID())).body.data!.claimPublish).toEqual({
      claimed: false,
      runStatus: 'STAGE_VALIDATING',
    });
    expect((await runRow(run.runId)).publish_token).toBeNull();
  });

  it('answers 404 for an unknown run, 422 for a malformed token, and needs the nifi role', async () => {
    const run = await toStagingValidated(api);
    const missing = await claimPublish(randomUUID(), randomUUID());
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('RUN_NOT_FOUND');
    const malformed = await claimPublish(run.runId, 'not-a-token');
    expect(malformed.status).toBe(422);
    expect(malformed.code).toBe('INVALID_INPUT');
    expect((await claimPublish(run.runId, randomUUID(), 'operator')).status).toBe(403);
    expect((await runRow(run.runId)).status).toBe('STAGING_VALIDATED');
  });

  it('lets exactly one of 10 concurrent claims with different tokens win', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await toStagingValidated(api, [2]);
      const tokens = Array.from({ length: 10 }, () => randomUUID());
      const results = await Promise.all(tokens.map((t) => claimPublish(run.runId, t)));
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      const winners = tokens.filter((_, i) => results[i]!.body.data!.claimPublish.claimed);
      expect(winners).toHaveLength(1);
      expect(results.map((r) => r.body.data!.claimPublish.runStatus)).toEqual(Array(10).fill('PUBLISHING'));
      expect((await runRow(run.runId)).publish_token).toBe(winners[0]);
      expect((await eventNames(run.runId)).filter((n) => n === 'PUBLISH_STARTED')).toHaveLength(1);
    }
  });
});

describe('reportPublishResult', () => {
  it('needs the publish token, replays the same outcome as unchanged, and refuses a late PUBLISHED after PUBLISH_UNKNOWN', async () => {
    const run = await toStagingValidated(api);
    const noClaimYet = await reportResult(run.runId, randomUUID(), 'PUBLISHED');
    expect(noClaimYet.status).toBe(409);
    expect(noClaimYet.code).toBe('PUBLISH_TOKEN_MISMATCH');
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const wrong = await reportResult(run.runId, randomUUID(), 'PUBLISHED');
    expect(wrong.status).toBe(409);
    expect(wrong.code).toBe('PUBLISH_TOKEN_MISMATCH');

    const unknown = await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN', { message: 'HiveServer2 connection lost' });
    expect(unknown.body.data!.reportPublishResult).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: true });
    const replay = await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN');
    expect(replay.body.data!.reportPublishResult).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: false });
    const late = await reportResult(run.runId, publishToken, 'PUBLISHED');
    expect(late.status).toBe(409);
    expect(late.code).toBe('RUN_STATUS_MISMATCH');
    expect(late.details).toEqual({ runStatus: 'PUBLISH_UNKNOWN' });

    expect(await runRow(run.runId)).toMatchObject({
      status: 'PUBLISH_UNKNOWN',
      error_stage: 'PUBLISH',
      error_code: 'PUBLISH_UNKNOWN',
      error_message: 'HiveServer2 connection lost',
      completed_at: null,
      published_at: null,
    });
    const { rows } = await api.sql.query(
      `SELECT event_level, actor, message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN'`,
      [run.runId],
    );
    expect(rows).toEqual([{ event_level: 'ERROR', actor: 'nifi-cluster', message: 'HiveServer2 connection lost' }]);
  });

  it("keeps the Hive query id on the run and the details in the outcome's event; a replay or a result without one keeps it", async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const details = { hiveServer: 'hs2-02.example:10000', operationHandle: 'op-7', stage: 'not ours to change' };
    const unknown = await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN', {
      message: 'connection lost after COMMIT was sent',
      queryId: 'hive_20261201101500_4f1c',
      details,
    });
    expect(unknown.body.data!.reportPublishResult).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: true });
    await reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN', { queryId: 'hive_other' });

    const read = await api.gql<{ run: { publishToken: string; publishQueryId: string } }>(
      'query($runId: UUID!) { run(runId: $runId) { publishToken publishQueryId } }',
      { runId: run.runId },
      { token: 'viewer' },
    );
    expect(read.body.data!.run).toEqual({ publishToken, publishQueryId: 'hive_20261201101500_4f1c' });
    const { rows } = await api.sql.query(`SELECT details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN'`, [
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
    const published = await toPublished(api);
    const { rows: publishedRow } = await api.sql.query('SELECT publish_query_id FROM nifi_ops.load_run WHERE run_id = $1', [
      published.runId,
    ]);
    expect(publishedRow).toEqual([{ publish_query_id: null }]);
  });

  it('refuses a query id or details it could not store with 422 naming the field, and changes nothing', async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    for (const [extra, field] of [
      [{ queryId: 'q'.repeat(201) }, 'input.queryId'],
      [{ queryId: '' }, 'input.queryId'],
      [{ details: { note: 'nul\u0000' } }, 'input.details.note'],
      // the JSON scalar names itself for a value that is not an object, as for every JSON input
      [{ details: 'not an object' }, 'JSON'],
    ] as const) {
      const refused = await reportResult(run.runId, publishToken, 'PUBLISHED', extra);
      expect([refused.status, refused.code, refused.details?.field], JSON.stringify(extra)).toEqual([422, 'INVALID_INPUT', field]);
    }
    expect((await runRow(run.runId)).status).toBe('PUBLISHING');
  });

  it('ends the run FAILED_PUBLISH with the reported error code, or the outcome as code, and frees the business key', async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const res = await reportResult(run.runId, publishToken, 'FAILED_PUBLISH', { errorCode: '42000', message: 'missing column' });
    expect(res.body.data!.reportPublishResult).toEqual({ runStatus: 'FAILED_PUBLISH', changed: true });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'FAILED_PUBLISH', error_stage: 'PUBLISH', error_code: '42000', error_message: 'missing column' });
    expect(row.completed_at).toBeInstanceOf(Date);
    expect((await eventNames(run.runId)).at(-1)).toBe('RUN_FAILED');

    const other = await toStagingValidated(api);
    const otherToken = randomUUID();
    await claimPublish(other.runId, otherToken);
    await reportResult(other.runId, otherToken, 'FAILED_PUBLISH');
    expect(await runRow(other.runId)).toMatchObject({ error_code: 'FAILED_PUBLISH', error_message: null });

    const next = await api.gql(CREATE_RUN, {
      input: { jobKey: JOB, businessKey: run.businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_' },
    });
    expect(next.body.data!.createRun.created).toBe(true);
  });

  it('takes exactly one of two concurrent outcomes; the other is refused with the status the first set', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await toStagingValidated(api, [2]);
      const publishToken = randomUUID();
      await claimPublish(run.runId, publishToken);
      const [published, unknown] = await Promise.all([
        reportResult(run.runId, publishToken, 'PUBLISHED'),
        reportResult(run.runId, publishToken, 'PUBLISH_UNKNOWN'),
      ]);
      const winner = published.status === 200 ? published : unknown;
      const loser = winner === published ? unknown : published;
      expect(winner.body.data!.reportPublishResult.changed).toBe(true);
      expect(loser.status).toBe(409);
      expect(loser.code).toBe('RUN_STATUS_MISMATCH');
      expect(loser.details).toEqual({ runStatus: winner.body.data!.reportPublishResult.runStatus });
      expect((await runRow(run.runId)).status).toBe(winner.body.data!.reportPublishResult.runStatus);
    }
  });

  it('refuses malformed input with 422 (an unknown outcome is a schema error) and changes nothing', async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const longCode = await reportResult(run.runId, publishToken, 'FAILED_PUBLISH', { errorCode: 'E'.repeat(101) });
    expect(longCode.status).toBe(422);
    expect(longCode.details).toMatchObject({ field: 'input.errorCode' });
    const longMessage = await reportResult(run.runId, publishToken, 'FAILED_PUBLISH', { message: 'm'.repeat(2001) });
    expect(longMessage.status).toBe(422);
    expect(longMessage.details).toMatchObject({ field: 'input.message' });
    const bogus = await reportResult(run.runId, publishToken, 'DONE');
    expect(bogus.status).toBe(400);
    expect(bogus.code).toBe('BAD_REQUEST');
    expect((await runRow(run.runId)).status).toBe('PUBLISHING');
    const missing = await reportResult(randomUUID(), publishToken, 'PUBLISHED');
    expect(missing.status).toBe(404);
  });
});

describe('markSuccess', () => {
  it('refuses without TARGET metrics or with a FAIL (NiFi then fails the target validation)', async () => {
    const run = await toPublished(api);
    expect((await markSuccess(run.runId, '7')).body.data!.markSuccess).toEqual({
      success: false,
      runStatus: 'PUBLISHED',
      reasons: ['NO_METRICS'],
      targetCount: null,
    });
    await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7'), metric('AMOUNT_SUM', 'FAIL')]);
    expect((await markSuccess(run.runId, '7')).body.data!.markSuccess.reasons).toEqual(['FAIL AMOUNT_SUM']);
    const { rows } = await api.sql.query(
      `SELECT event_level, actor, message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'TARGET_METRIC_FAILED'`,
      [run.runId],
    );
    expect(rows).toEqual([{ event_level: 'WARN', actor: 'nifi-cluster', message: 'AMOUNT_SUM' }]);
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
    const fail = await api.gql(FAIL_RUN, {
      input: {
        runId: run.runId,
        expectedStatus: 'PUBLISHED',
        failStatus: 'FAILED_TARGET_VALIDATION',
        errorStage: 'TARGET',
        errorCode: 'TARGET_VALIDATION_FAILED',
      },
    });
    expect(fail.body.data!.failRun).toMatchObject({ runStatus: 'FAILED_TARGET_VALIDATION', changed: true });
  });

  it('answers RUN_STATUS before publication and 404 for an unknown run', async () => {
    const run = await toStagingValidated(api);
    expect((await markSuccess(run.runId)).body.data!.markSuccess).toEqual({
      success: false,
      runStatus: 'STAGING_VALIDATED',
      reasons: ['RUN_STATUS STAGING_VALIDATED'],
      targetCount: null,
    });
    const missing = await markSuccess(randomUUID());
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('RUN_NOT_FOUND');
  });

  it('requires TARGET_COUNT and targetCount to equal the staging count (deviation 7)', async () => {
    const run = await toPublished(api, [3, 4]);
    await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '6')]);
    expect((await markSuccess(run.runId)).body.data!.markSuccess.reasons).toEqual(['COUNT_MISMATCH TARGET_COUNT=6 expected=7']);
    expect((await markSuccess(run.runId, 8)).body.data!.markSuccess.reasons).toEqual([
      'COUNT_MISMATCH TARGET_COUNT=6 expected=7',
      'COUNT_MISMATCH targetCount=8 expected=7',
    ]);
    await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect((await markSuccess(run.runId, 8)).body.data!.markSuccess).toEqual({
      success: false,
      runStatus: 'PUBLISHED',
      reasons: ['COUNT_MISMATCH targetCount=8 expected=7'],
      targetCount: null,
    });
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
    // without targetCount the TARGET_COUNT metric is the target count
    expect((await markSuccess(run.runId)).body.data!.markSuccess).toEqual({
      success: true,
      runStatus: 'SUCCESS',
      reasons: [],
      targetCount: 7,
    });
    expect((await runRow(run.runId)).target_count).toBe('7');
  });

  it('refuses a non-integer TARGET_COUNT with a reason (deviation 8) and a malformed targetCount with 422', async () => {
    const run = await toPublished(api);
    await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7.5')]);
    expect((await markSuccess(run.runId)).body.data!.markSuccess.reasons).toEqual(['COUNT_NOT_INTEGER TARGET_COUNT=7.5']);
    for (const targetCount of ['-1', '7.5', 'seven']) {
      const res = await markSuccess(run.runId, targetCount);
      expect(res.status).toBe(422);
      expect(res.code).toBe('INVALID_INPUT');
    }
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
  });

  it('succeeds once under concurrent calls: every caller sees SUCCESS, one RUN_SUCCESS event', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await toPublished(api, [2]);
      await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '2')]);
      const results = await Promise.all(Array.from({ length: 6 }, () => markSuccess(run.runId)));
      for (const r of results)
        expect(r.body.data!.markSuccess).toEqual({ success: true, runStatus: 'SUCCESS', reasons: [], targetCount: 2 });
      expect((await eventNames(run.runId)).filter((n) => n === 'RUN_SUCCESS')).toHaveLength(1);
    }
  });

  it('expects the extracted count when staging was validated without a STAGE_COUNT', async () => {
    const run = await toStageValidating(api, [3, 4]);
    await recordMetrics(api, run.runId, 'STAGING', [metric('DUP_PK_COUNT')]);
    expect((await api.gql(MARK_STAGE_VALIDATED, { input: { runId: run.runId } })).body.data!.markStageValidated.stageValidated).toBe(true);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    await reportResult(run.runId, publishToken, 'PUBLISHED');
    await recordMetrics(api, run.runId, 'TARGET', [metric('DUP_PK_COUNT')]);
    expect((await markSuccess(run.runId, 6)).body.data!.markSuccess.reasons).toEqual(['COUNT_MISMATCH targetCount=6 expected=7']);
    expect((await markSuccess(run.runId, 7)).body.data!.markSuccess).toMatchObject({ success: true, targetCount: 7 });
  });
});
