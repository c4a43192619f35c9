// cleanupCandidates and recordCleanup over HTTP: the candidates end to end with the roles that read them, the
// refusals with their status codes. recordCleanup's rules and cleanup.maxBatch: test/domain/cleanup/cleanup.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import {
  CLAIM_PUBLISH,
  FAIL_RUN,
  MARK_SUCCESS,
  REPORT_PUBLISH_RESULT,
  createRun,
  metric,
  recordMetrics,
  toPublished,
  toStagingValidated,
} from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const CANDIDATES = `query($jobKey: String, $limit: Int) { cleanupCandidates(jobKey: $jobKey, limit: $limit) {
  runId jobKey businessKey status hdfsRunPath stageTable completedAt } }`;
const RECORD_CLEANUP = `mutation($input: RecordCleanupInput!) { recordCleanup(input: $input) { runStatus changed } }`;
const CANCEL = `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus } }`;

const newJob = () => `CLEANUP_${randomUUID().slice(0, 8).toUpperCase()}`;
const candidates = (jobKey: string | null, limit?: number, token: TokenName = 'nifi') =>
  api.gql(CANDIDATES, { jobKey, ...(limit === undefined ? {} : { limit }) }, { token });
const recordCleanup = (runId: string, extra: Record<string, unknown> = {}, token: TokenName | null = 'nifi') =>
  api.gql(RECORD_CLEANUP, { input: { runId, ...extra } }, { token });

/** Moves a run's end (and last heartbeat) `days` into the past. */
async function endedDaysAgo(runId: string, days: number): Promise<void> {
  await api.sql.query(
    `UPDATE nifi_ops.load_run SET completed_at = CASE WHEN completed_at IS NULL THEN NULL ELSE clock_timestamp() - $2 * interval '1 day' END,
            heartbeat_at = clock_timestamp() - $2 * interval '1 day', started_at = clock_timestamp() - $2 * interval '1 day'
      WHERE run_id = $1`,
    [runId, days],
  );
}

async function succeeded(jobKey: string) {
  const run = await toPublished(api, [3, 4], { create: { jobKey } });
  await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
  expect((await api.gql(MARK_SUCCESS, { input: { runId: run.runId } })).body.data!.markSuccess.success).toBe(true);
  return run;
}

async function failedManifest(jobKey: string) {
  const run = await createRun(api, { jobKey });
  await api.gql(FAIL_RUN, {
    input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'E' },
  });
  return run;
}

async function cancelled(jobKey: string) {
  const run = await createRun(api, { jobKey });
  await api.gql(CANCEL, { input: { runId: run.runId, reason: 'not needed any more' } }, { token: 'operator' });
  return run;
}

describe('cleanupCandidates', () => {
  it('lists ended runs past their retention, oldest first, and never an active one', async () => {
    const job = newJob();
    const success4d = await succeeded(job);
    await endedDaysAgo(success4d.runId, 4);
    const success1d = await succeeded(job);
    await endedDaysAgo(success1d.runId, 1);
    const failed20d = await failedManifest(job);
    await endedDaysAgo(failed20d.runId, 20);
    const failed5d = await failedManifest(job);
    await endedDaysAgo(failed5d.runId, 5);
    const cancelled15d = await cancelled(job);
    await endedDaysAgo(cancelled15d.runId, 15);
    const active = await createRun(api, { jobKey: job });
    await endedDaysAgo(active.runId, 30);
    const unknown = await toStagingValidated(api, [2], { create: { jobKey: job } });
    const publishToken = randomUUID();
    await api.gql(CLAIM_PUBLISH, { input: { runId: unknown.runId, publishToken } });
    await api.gql(REPORT_PUBLISH_RESULT, { input: { runId: unknown.runId, publishToken, outcome: 'PUBLISH_UNKNOWN' } });
    await endedDaysAgo(unknown.runId, 30);
    const cleaned = await succeeded(job);
    await endedDaysAgo(cleaned.runId, 10);
    expect((await recordCleanup(cleaned.runId)).body.data!.recordCleanup.changed).toBe(true);

    const res = await candidates(job);
    expect(res.status).toBe(200);
    const list = res.body.data!.cleanupCandidates;
    expect(list.map((c: { runId: string }) => c.runId)).toEqual([failed20d.runId, cancelled15d.runId, success4d.runId]);
    expect(list[2]).toEqual({
      runId: success4d.runId,
      jobKey: job,
      businessKey: success4d.businessKey,
      status: 'SUCCESS',
      hdfsRunPath: success4d.hdfsRunPath,
      stageTable: success4d.stageTable,
      completedAt: expect.any(String),
    });
    expect(Date.now() - Date.parse(list[2].completedAt)).toBeGreaterThan(4 * 86_400_000 - 60_000);

    expect((await candidates(job, 1)).body.data!.cleanupCandidates.map((c: { runId: string }) => c.runId)).toEqual([failed20d.runId]);
    expect((await candidates('OTHER_JOB')).body.data!.cleanupCandidates).toEqual([]);
    expect((await candidates(job, 50, 'operator')).body.data!.cleanupCandidates).toHaveLength(3);
    expect((await candidates(job, 50, 'viewer')).body.data!.cleanupCandidates).toHaveLength(3);
    expect(list.some((c: { runId: string }) => [active.runId, unknown.runId, success1d.runId, failed5d.runId].includes(c.runId))).toBe(
      false,
    );
  });

  it.each([
    ['jobKey', { jobKey: 'bad-key' }],
    ['limit', { limit: 0 }],
    ['limit', { limit: 501 }],
  ])('refuses a malformed %s with 422 INVALID_INPUT', async (field, variables) => {
    const res = await api.gql(CANDIDATES, variables);
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field: `args.${field}` });
  });
});

describe('recordCleanup', () => {
  it('refuses a run that is not due with 409 CLEANUP_NOT_DUE, an unknown run with 404, bad paths with 422', async () => {
    const published = await toPublished(api);
    await endedDaysAgo(published.runId, 30);
    const active = await recordCleanup(published.runId);
    expect(active.status).toBe(409);
    expect(active.code).toBe('CLEANUP_NOT_DUE');
    expect(active.details).toEqual({ runStatus: 'PUBLISHED' });
    const recent = await succeeded(newJob());
    await endedDaysAgo(recent.runId, 1);
    const tooEarly = await recordCleanup(recent.runId);
    expect(tooEarly.status).toBe(409);
    expect(tooEarly.details).toEqual({ runStatus: 'SUCCESS' });
    expect((await recordCleanup(randomUUID())).code).toBe('RUN_NOT_FOUND');

    for (const [field, extra] of [
      ['input.deletedPath', { deletedPath: '../etc' }],
      ['input.deletedPath', { deletedPath: '/data/../etc' }],
      ['input.droppedTable', { droppedTable: 't'.repeat(301) }],
    ] as const) {
      const res = await recordCleanup(recent.runId, extra);
      expect(res.status).toBe(422);
      expect(res.details).toMatchObject({ field });
    }
    expect((await recordCleanup(recent.runId, {}, 'viewer')).status).toBe(403);
    expect((await recordCleanup(recent.runId, {}, null)).status).toBe(401);
    const { rows } = await api.sql.query('SELECT cleaned_at FROM nifi_ops.load_run WHERE run_id = ANY($1)', [
      [published.runId, recent.runId],
    ]);
    expect(rows.map((r) => r.cleaned_at)).toEqual([null, null]);
  });
});
