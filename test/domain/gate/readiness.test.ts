// What readiness answers (src/domain/gate/ledger.ts): a consumer is ready for a business date when every required
// job's greatest attempt for that date succeeded, external observations and Load Control runs alike. A job's
// attempt, state and run id in the API are its `latest` attempt's here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { perform } from '../../../src/db/operation.js';
import { listAttempts } from '../../../src/domain/gate/ledger.js';
import { failRunOperation } from '../../../src/domain/runs/fail-run.js';
import { ACTIVE_RUN_STATUSES, RUN_STATUSES } from '../../../src/domain/states.js';
import {
  ACTOR,
  createdRun,
  type DomainTest,
  gateDefined,
  observedAs,
  publishedRun,
  readinessOf,
  startDomainTest,
  succeeded,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const D = '2026-10-23';

const observed = (observation: Parameters<typeof observedAs>[1]) => observedAs(t, observation);

describe('readiness', () => {
  it('reproduces the article: backfills that ran today for last week do not make today ready', async () => {
    const consumer = unique('daily_sales');
    const jobs = [unique('dim_customer'), unique('dim_product')];
    await gateDefined(t, consumer, jobs);
    // both dimension jobs completed at 07:00 UTC on October 23 — as backfills for October 16
    for (const jobId of jobs) await observed({ jobId, businessDate: '2026-10-16', state: 'SUCCEEDED', startedAt: '2026-10-23T07:00:00Z' });
    const today = await readinessOf(t, consumer, D);
    expect(today.ready).toBe(false);
    expect(today.jobs.map((j) => j.reason)).toEqual(['MISSING', 'MISSING']);
    expect((await readinessOf(t, consumer, '2026-10-16')).ready).toBe(true);

    for (const jobId of jobs) await observed({ jobId, businessDate: D, state: 'SUCCEEDED' });
    expect((await readinessOf(t, consumer, D)).ready).toBe(true);
  });

  it('checks exactly the required set: a missing job blocks, other jobs’ successes do not help', async () => {
    const consumer = unique('consumer');
    const [a, b, other] = [unique('a'), unique('b'), unique('other')];
    await gateDefined(t, consumer, [a, b]);
    await observed({ jobId: a, businessDate: D, state: 'SUCCEEDED', runId: 'run-a1' });
    await observed({ jobId: other, businessDate: D, state: 'SUCCEEDED' });
    const res = await readinessOf(t, consumer, D);
    expect(res.ready).toBe(false);
    expect(res.jobs).toEqual([
      expect.objectContaining({
        jobId: a,
        reason: null,
        latest: expect.objectContaining({ attempt: 1, state: 'SUCCEEDED', runId: 'run-a1' }),
      }),
      expect.objectContaining({ jobId: b, reason: 'MISSING', latest: null }),
    ]);
  });

  it('lets the greatest attempt win: a newer RUNNING or FAILED attempt hides an older success', async () => {
    const consumer = unique('consumer');
    const jobId = unique('job');
    await gateDefined(t, consumer, [jobId]);
    await observed({ jobId, businessDate: D, attempt: 1, state: 'SUCCEEDED' });
    expect((await readinessOf(t, consumer, D)).ready).toBe(true);

    await observed({ jobId, businessDate: D, attempt: 2, state: 'RUNNING' });
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({ reason: 'RUNNING', latest: { attempt: 2 } });
    await observed({ jobId, businessDate: D, attempt: 2, state: 'FAILED' });
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({ reason: 'FAILED', latest: { attempt: 2 } });
    await observed({ jobId, businessDate: D, attempt: 3, state: 'SUCCEEDED' });
    const ready = await readinessOf(t, consumer, D);
    expect(ready.ready).toBe(true);
    expect(ready.jobs[0]!.latest).toMatchObject({ attempt: 3, state: 'SUCCEEDED', runId: `run-${jobId}-${D}-3` });
  });

  it('is not moved by delayed messages about older attempts', async () => {
    const consumer = unique('consumer');
    const jobId = unique('job');
    await gateDefined(t, consumer, [jobId]);
    await observed({ jobId, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    // attempt 1's messages arrive late, in any order
    await observed({ jobId, businessDate: D, attempt: 1, state: 'FAILED' });
    await observed({ jobId, businessDate: D, attempt: 1, state: 'RUNNING' });
    const res = await readinessOf(t, consumer, D);
    expect(res.ready).toBe(true);
    expect(res.jobs[0]!.latest).toMatchObject({ attempt: 2, state: 'SUCCEEDED' });
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
    await gateDefined(t, consumer, jobs);
    for (const [i, startedAt] of starts.entries()) await observed({ jobId: jobs[i]!, businessDate: D, state: 'SUCCEEDED', startedAt });

    const res = await readinessOf(t, consumer, D);
    expect(res.ready).toBe(true);
    expect(res.jobs.map((j) => j.latest!.startedAt.toISOString()).sort()).toEqual(starts.map((s) => new Date(s).toISOString()).sort());
    expect((await readinessOf(t, consumer, '2026-10-22')).jobs.map((j) => j.reason)).toEqual(Array(5).fill('MISSING'));
    expect((await readinessOf(t, consumer, '2026-10-24')).jobs.map((j) => j.reason)).toEqual(Array(5).fill('MISSING'));
  });

  it('answers a consumer without a gate as not ready, with gateDefined=false', async () => {
    const res = await readinessOf(t, unique('nobody'), D);
    expect(res).toEqual({ consumer: expect.any(String), businessDate: D, gateDefined: false, ready: false, jobs: [], decision: null });
  });
});

describe('Load Control runs as observations', () => {
  const failRun = (runId: string) =>
    perform(t.db, failRunOperation, {
      runId,
      expectedStatus: 'CREATED',
      failStatus: 'FAILED_MANIFEST',
      errorStage: 'MANIFEST',
      errorCode: 'E',
      message: '',
      actor: ACTOR,
    });

  it('counts a job’s runs for a business key that is a calendar date as its attempts, in start order', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const consumer = unique('consumer');
    await gateDefined(t, consumer, [jobKey]);

    const first = await createdRun(t, { jobKey, businessKey: D });
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({
      reason: 'RUNNING',
      latest: { attempt: 1, runId: first.runId, source: 'LOAD_CONTROL' },
    });
    await failRun(first.runId);
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({ reason: 'FAILED', latest: { attempt: 1, state: 'FAILED' } });

    const second = await publishedRun(t, [3, 4], { jobKey, businessKey: D });
    // PUBLISHED is still RUNNING: the target has not been validated yet
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({ reason: 'RUNNING', latest: { attempt: 2, runId: second.runId } });
    await succeeded(t, second.runId);
    const ready = await readinessOf(t, consumer, D);
    expect(ready.ready).toBe(true);
    expect(ready.jobs[0]!.latest).toMatchObject({ attempt: 2, state: 'SUCCEEDED', runId: second.runId });

    expect(await listAttempts(t.db.prisma, jobKey, D)).toEqual([
      expect.objectContaining({ attempt: 1, runId: first.runId, state: 'FAILED', source: 'LOAD_CONTROL' }),
      expect.objectContaining({ attempt: 2, runId: second.runId, state: 'SUCCEEDED', source: 'LOAD_CONTROL' }),
    ]);
  });

  it('ignores runs whose business key is not that calendar date', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const consumer = unique('consumer');
    await gateDefined(t, consumer, [jobKey]);
    await createdRun(t, { jobKey, businessKey: '20261023' });
    await createdRun(t, { jobKey, businessKey: `${D}_EU` });
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({ reason: 'MISSING' });
  });

  it('reads every run status as exactly one observation state: SUCCESS succeeded, failures failed, the rest running', async () => {
    const jobKey = unique('STATUS').toUpperCase();
    const expected: Record<string, string> = {};
    for (const [i, status] of RUN_STATUSES.entries()) {
      const businessKey = `2026-01-${String(i + 1).padStart(2, '0')}`;
      const run = await createdRun(t, { jobKey, businessKey });
      // Reaching all 17 statuses through the domain operations would replay the whole lifecycle 17 times; this test
      // is about the mapping, so the status is set directly.
      await t.sql.query('UPDATE nifi_ops.load_run SET status = $2 WHERE run_id = $1', [run.runId, status]);
      expected[status] = status === 'SUCCESS' ? 'SUCCEEDED' : ACTIVE_RUN_STATUSES.includes(status) ? 'RUNNING' : 'FAILED';
    }
    const seen: Record<string, string> = {};
    for (const [i, status] of RUN_STATUSES.entries()) {
      const businessDate = `2026-01-${String(i + 1).padStart(2, '0')}`;
      seen[status] = (await listAttempts(t.db.prisma, jobKey, businessDate))[0]!.state;
    }
    expect(seen).toEqual(expected);
    expect(Object.values(seen).filter((s) => s === 'FAILED')).toHaveLength(8);
  });

  it('lets one gate require Load Control jobs and external jobs alike', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const external = unique('databricks_dim');
    const consumer = unique('consumer');
    await gateDefined(t, consumer, [jobKey, external]);
    await observed({ jobId: external, businessDate: D, state: 'SUCCEEDED' });
    const run = await publishedRun(t, [3, 4], { jobKey, businessKey: D });
    expect((await readinessOf(t, consumer, D)).ready).toBe(false);
    await succeeded(t, run.runId);
    const res = await readinessOf(t, consumer, D);
    expect(res.ready).toBe(true);
    expect(res.jobs.map((j) => j.latest!.source).sort()).toEqual(['EXTERNAL', 'LOAD_CONTROL']);
  });
});
