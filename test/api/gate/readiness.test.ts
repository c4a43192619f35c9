import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun, FAIL_RUN, toPublished } from '../../support/fixtures.js';
import { OBSERVATIONS, READINESS, defineGate, observed, readinessOf, toSuccess, unique } from '../../support/gate-fixtures.js';
import { ACTIVE_RUN_STATUSES, RUN_STATUSES } from '../../../src/domain/states.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const D = '2026-10-23';

describe('readiness', () => {
  it('reproduces the article: backfills that ran today for last week do not make today ready', async () => {
    const consumer = unique('daily_sales');
    const jobs = [unique('dim_customer'), unique('dim_product')];
    await defineGate(api, consumer, jobs);
    // both dimension jobs completed at 07:00 UTC on October 23 — as backfills for October 16
    for (const jobId of jobs)
      await observed(api, { jobId, businessDate: '2026-10-16', state: 'SUCCEEDED', startedAt: '2026-10-23T07:00:00Z' });
    const today = await readinessOf(api, consumer, D);
    expect(today.ready).toBe(false);
    expect(today.jobs.map((j) => j.reason)).toEqual(['MISSING', 'MISSING']);
    expect((await readinessOf(api, consumer, '2026-10-16')).ready).toBe(true);

    for (const jobId of jobs) await observed(api, { jobId, businessDate: D, state: 'SUCCEEDED' });
    expect((await readinessOf(api, consumer, D)).ready).toBe(true);
  });

  it('checks exactly the required set: a missing job blocks, other jobs’ successes do not help', async () => {
    const consumer = unique('consumer');
    const [a, b, other] = [unique('a'), unique('b'), unique('other')];
    await defineGate(api, consumer, [a, b]);
    await observed(api, { jobId: a, businessDate: D, state: 'SUCCEEDED', runId: 'run-a1' });
    await observed(api, { jobId: other, businessDate: D, state: 'SUCCEEDED' });
    const res = await readinessOf(api, consumer, D);
    expect(res.ready).toBe(false);
    expect(res.jobs).toEqual([
      expect.objectContaining({ jobId: a, ready: true, reason: null, attempt: 1, state: 'SUCCEEDED', runId: 'run-a1' }),
      expect.objectContaining({ jobId: b, ready: false, reason: 'MISSING', attempt: null, state: null, runId: null, latest: null }),
    ]);
  });

  it('lets the greatest attempt win: a newer RUNNING or FAILED attempt hides an older success', async () => {
    const consumer = unique('consumer');
    const jobId = unique('job');
    await defineGate(api, consumer, [jobId]);
    await observed(api, { jobId, businessDate: D, attempt: 1, state: 'SUCCEEDED' });
    expect((await readinessOf(api, consumer, D)).ready).toBe(true);

    await observed(api, { jobId, businessDate: D, attempt: 2, state: 'RUNNING' });
    expect((await readinessOf(api, consumer, D)).jobs[0]).toMatchObject({ reason: 'RUNNING', attempt: 2 });
    await observed(api, { jobId, businessDate: D, attempt: 2, state: 'FAILED' });
    expect((await readinessOf(api, consumer, D)).jobs[0]).toMatchObject({ reason: 'FAILED', attempt: 2 });
    await observed(api, { jobId, businessDate: D, attempt: 3, state: 'SUCCEEDED' });
    const ready = await readinessOf(api, consumer, D);
    expect(ready.ready).toBe(true);
    expect(ready.jobs[0]).toMatchObject({ attempt: 3, state: 'SUCCEEDED', runId: `run-${jobId}-${D}-3` });
  });

  it('is not moved by delayed messages about older attempts', async () => {
    const consumer = unique('consumer');
    const jobId = unique('job');
    await defineGate(api, consumer, [jobId]);
    await observed(api, { jobId, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    // attempt 1's messages arrive late, in any order
    await observed(api, { jobId, businessDate: D, attempt: 1, state: 'FAILED' });
    await observed(api, { jobId, businessDate: D, attempt: 1, state: 'RUNNING' });
    const res = await readinessOf(api, consumer, D);
    expect(res.ready).toBe(true);
    expect(res.jobs[0]).toMatchObject({ attempt: 2, state: 'SUCCEEDED' });
  });

  it('does not care on which side of midnight, in which offset, an attempt started', async () => {
    const consumer = unique('consumer');
    const starts = [
      '2026-10-22T23:50:00-05:00', // the evening before, New York
      '2026-10-22T23:59:59+00:00', // one second before midnight UTC
      '2026-10-24T00:10:00+09:00', // after midnight in Seoul — still 23 October in UTC
      '2026-10-24T01:30:00+14:00', // the next day on Kiritimati
      '2026-10-23T00:00:00-11:00', // midnight in Pago Pago, already the 23rd at 11:00 UTC
    ];
    const jobs = starts.map((_, i) => unique(`job${i}`));
    await defineGate(api, consumer, jobs);
    for (const [i, startedAt] of starts.entries()) await observed(api, { jobId: jobs[i]!, businessDate: D, state: 'SUCCEEDED', startedAt });

    const res = await readinessOf(api, consumer, D);
    expect(res.ready).toBe(true);
    expect(res.jobs.map((j) => j.latest!.startedAt).sort()).toEqual(starts.map((s) => new Date(s).toISOString()).sort());
    expect((await readinessOf(api, consumer, '2026-10-22')).jobs.map((j) => j.reason)).toEqual(Array(5).fill('MISSING'));
    expect((await readinessOf(api, consumer, '2026-10-24')).jobs.map((j) => j.reason)).toEqual(Array(5).fill('MISSING'));
  });

  it('answers a consumer without a gate as not ready, with gateDefined=false', async () => {
    const res = await readinessOf(api, unique('nobody'), D);
    expect(res).toEqual({ consumer: expect.any(String), businessDate: D, gateDefined: false, ready: false, jobs: [], decision: null });
  });

  it('refuses a malformed consumer or business date with 422 INVALID_INPUT', async () => {
    const badConsumer = await api.gql(READINESS, { consumer: 'has space', businessDate: D });
    expect(badConsumer.status).toBe(422);
    expect(badConsumer.details).toMatchObject({ field: 'args.consumer' });
    const badDate = await api.gql(READINESS, { consumer: 'c', businessDate: '2026-02-30' });
    expect(badDate.status).toBe(422);
    expect(badDate.code).toBe('INVALID_INPUT');
    expect((await api.gql(READINESS, { consumer: 'c', businessDate: D }, { token: null })).status).toBe(401);
  });
});

describe('Load Control runs as observations', () => {
  const failRun = (runId: string) =>
    api.gql(FAIL_RUN, {
      input: { runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'E' },
    });

  it('counts a job’s runs for a business key that is a calendar date as its attempts, in start order', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const consumer = unique('consumer');
    await defineGate(api, consumer, [jobKey]);

    const first = await createRun(api, { jobKey, businessKey: D });
    expect((await readinessOf(api, consumer, D)).jobs[0]).toMatchObject({
      reason: 'RUNNING',
      attempt: 1,
      runId: first.runId,
      latest: { source: 'LOAD_CONTROL' },
    });
    await failRun(first.runId);
    expect((await readinessOf(api, consumer, D)).jobs[0]).toMatchObject({ reason: 'FAILED', attempt: 1, state: 'FAILED' });

    const second = await toPublished(api, [3, 4], { create: { jobKey, businessKey: D } });
    // PUBLISHED is still RUNNING: the target has not been validated yet
    expect((await readinessOf(api, consumer, D)).jobs[0]).toMatchObject({ reason: 'RUNNING', attempt: 2, runId: second.runId });
    await toSuccess(api, second.runId);
    const ready = await readinessOf(api, consumer, D);
    expect(ready.ready).toBe(true);
    expect(ready.jobs[0]).toMatchObject({ attempt: 2, state: 'SUCCEEDED', runId: second.runId });

    const attempts = await api.gql(OBSERVATIONS, { jobId: jobKey, businessDate: D }, { token: 'viewer' });
    expect(attempts.body.data!.observations).toEqual([
      expect.objectContaining({ attempt: 1, runId: first.runId, state: 'FAILED', source: 'LOAD_CONTROL' }),
      expect.objectContaining({ attempt: 2, runId: second.runId, state: 'SUCCEEDED', source: 'LOAD_CONTROL' }),
    ]);
  });

  it('ignores runs whose business key is not that calendar date', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const consumer = unique('consumer');
    await defineGate(api, consumer, [jobKey]);
    await createRun(api, { jobKey, businessKey: '20261023' });
    await createRun(api, { jobKey, businessKey: `${D}_EU` });
    expect((await readinessOf(api, consumer, D)).jobs[0]).toMatchObject({ reason: 'MISSING' });
  });

  it('reads every run status as exactly one observation state: SUCCESS succeeded, failures failed, the rest running', async () => {
    const jobKey = unique('STATUS').toUpperCase();
    const expected: Record<string, string> = {};
    for (const [i, status] of RUN_STATUSES.entries()) {
      const businessKey = `2026-01-${String(i + 1).padStart(2, '0')}`;
      const run = await createRun(api, { jobKey, businessKey });
      // Reaching all 17 statuses through the API would replay the whole lifecycle 17 times; this test is about
      // the mapping, so the status is set directly.
      await api.sql.query('UPDATE nifi_ops.load_run SET status = $2 WHERE run_id = $1', [run.runId, status]);
      expected[status] = status === 'SUCCESS' ? 'SUCCEEDED' : ACTIVE_RUN_STATUSES.includes(status) ? 'RUNNING' : 'FAILED';
    }
    const seen: Record<string, string> = {};
    for (const [i, status] of RUN_STATUSES.entries()) {
      const businessDate = `2026-01-${String(i + 1).padStart(2, '0')}`;
      const res = await api.gql(OBSERVATIONS, { jobId: jobKey, businessDate });
      seen[status] = res.body.data!.observations[0].state;
    }
    expect(seen).toEqual(expected);
    expect(Object.values(seen).filter((s) => s === 'FAILED')).toHaveLength(8);
  });

  it('lets one gate require Load Control jobs and external jobs alike', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const external = unique('databricks_dim');
    const consumer = unique('consumer');
    await defineGate(api, consumer, [jobKey, external]);
    await observed(api, { jobId: external, businessDate: D, state: 'SUCCEEDED' });
    const run = await toPublished(api, [3, 4], { create: { jobKey, businessKey: D } });
    expect((await readinessOf(api, consumer, D)).ready).toBe(false);
    await toSuccess(api, run.runId);
    const res = await readinessOf(api, consumer, D);
    expect(res.ready).toBe(true);
    expect(res.jobs.map((j) => j.latest!.source).sort()).toEqual(['EXTERNAL', 'LOAD_CONTROL']);
  });
});
