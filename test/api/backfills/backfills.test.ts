// Backfills and pausing a job through the API (issue 28, points 1 and 3): roles, input validation, the codes and their
// HTTP statuses, and a whole backfill of 5 dates with maxConcurrent 2 driven by the worker's dispatcher and backfill
// pump against a loopback PG-05 receiver that answers each START_LOAD call as the NiFi kit does — createRun with the
// backfill id, then the load through the API (test/support/ledger-flow.ts) — with its readiness held until released.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentText } from '../../../schema/documents/graphql.js';
import * as operator from '../../../schema/documents/operator.js';
import { createBackfillPump } from '../../../src/worker/backfill-pump.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CREATE_RUN, HDFS_ROOT, START_BACKFILL } from '../../support/fixtures.js';
import { defineGate, unique } from '../../support/gate-fixtures.js';
import { call, extractAll, publishRun, succeed, validateDispatch, validateStaging } from '../../support/ledger-flow.js';
import { startReceiver, type ReceivedCall, type Receiver } from '../../support/receiver.js';
import { until } from '../../support/until.js';
import { quietLog, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';
import { manifestInput, REGISTER_MANIFEST } from '../../support/fixtures.js';

const PAUSE_JOB = documentText(operator.PAUSE_JOB);
const RESUME_JOB = documentText(operator.RESUME_JOB);
const PAUSE_BACKFILL = documentText(operator.PAUSE_BACKFILL);
const RELEASE = documentText(operator.RELEASE_BACKFILL_READINESS);
const BACKFILL = `query($backfillId: UUID!) { backfill(backfillId: $backfillId) {
  status readinessHeld allowedActions progress { queued running succeeded failed skipped cancelled total }
  dates { businessDate status reason runId startDispatchStatus } } }`;
const RUN_BACKFILL = `query($runId: UUID!) { run(runId: $runId) { backfillId } }`;
const PLAN = `query($jobKey: String!, $from: Date!, $to: Date!, $reprocess: BackfillReprocess!) {
  planBackfill(jobKey: $jobKey, from: $from, to: $to, reprocess: $reprocess) { businessDate action reason } }`;
const PAUSED_JOBS = `{ pausedJobs { jobKey pausedBy pauseReason } }`;

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const newJob = () =>
  unique('BF')
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_');
const range = (jobKey: string, more: Record<string, unknown> = {}) => ({
  jobKey,
  from: '2026-07-01',
  to: '2026-07-05',
  reprocess: 'MISSING',
  maxConcurrent: 2,
  ...more,
});

describe('pauseJob through the API', () => {
  it('is the operator’s: createRun answers 409 JOB_PAUSED (header too) with who, why and since when, until resumeJob', async () => {
    const jobKey = newJob();
    expect((await api.gql(PAUSE_JOB, { input: { jobKey, reason: 'source maintenance' } }, { token: 'nifi' })).status).toBe(403);
    const paused = await api.gql(PAUSE_JOB, { input: { jobKey, reason: 'source maintenance' } }, { token: 'operator' });
    expect(paused.body.data!.pauseJob).toMatchObject({ changed: true, job: { jobKey, paused: true, pausedBy: 'alice-operator' } });
    const listed = await api.gql(PAUSED_JOBS, {}, { token: 'viewer' });
    expect(listed.body.data!.pausedJobs).toContainEqual({ jobKey, pausedBy: 'alice-operator', pauseReason: 'source maintenance' });

    const input = { jobKey, businessKey: '2026-07-01', hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_', idempotencyKey: randomUUID() };
    const refused = await api.gql(CREATE_RUN, { input }, { token: 'nifi' });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('x-error-code')).toBe('JOB_PAUSED');
    expect(refused.details).toMatchObject({ jobKey, pausedBy: 'alice-operator', reason: 'source maintenance' });

    const resumed = await api.gql(RESUME_JOB, { input: { jobKey, reason: 'maintenance done' } }, { token: 'operator' });
    expect(resumed.body.data!.resumeJob).toMatchObject({ changed: true, job: { paused: false } });
    expect((await api.gql(CREATE_RUN, { input }, { token: 'nifi' })).status).toBe(200);
  });

  it('refuses a bad job key or a short reason with 422 and changes nothing', async () => {
    const bad = await api.gql(PAUSE_JOB, { input: { jobKey: 'lower case', reason: 'source maintenance' } }, { token: 'operator' });
    expect([bad.status, bad.code, bad.details?.field]).toEqual([422, 'INVALID_INPUT', 'input.jobKey']);
    const short = await api.gql(PAUSE_JOB, { input: { jobKey: newJob(), reason: 'no' } }, { token: 'operator' });
    expect([short.status, short.details?.field]).toEqual([422, 'input.reason']);
    const { rows } = await api.sql.query(
      `SELECT count(*)::int AS n FROM nifi_ops.load_job WHERE paused_at IS NOT NULL AND pause_reason = 'no'`,
    );
    expect(rows[0].n).toBe(0);
  });
});

describe('backfill inputs and codes', () => {
  it('is the operator’s to start; its plan, a read, is anyone’s', async () => {
    const jobKey = newJob();
    expect((await api.gql(START_BACKFILL, { input: range(jobKey) }, { token: 'viewer' })).status).toBe(403);
    const plan = await api.gql(PLAN, { jobKey, from: '2026-07-01', to: '2026-07-02', reprocess: 'ALL' }, { token: 'viewer' });
    expect(plan.body.data!.planBackfill).toEqual([
      { businessDate: '2026-07-01', action: 'START', reason: 'NO_RUN' },
      { businessDate: '2026-07-02', action: 'START', reason: 'NO_RUN' },
    ]);
  });

  it.each([
    ['to before from', { to: '2026-06-30' }, 'input.to'],
    ['a range of 367 dates', { from: '2026-01-01', to: '2027-01-02' }, 'input.to'],
    // the Date scalar refuses it while parsing the variables, before the input's own rules
    ['a date that is not one', { to: '2026-02-30' }, 'Date'],
    ['maxConcurrent 0', { maxConcurrent: 0 }, 'input.maxConcurrent'],
    ['maxConcurrent 101', { maxConcurrent: 101 }, 'input.maxConcurrent'],
    ['an unknown reprocess', { reprocess: 'SOME' }, null],
  ])('refuses %s before the database, and records nothing', async (_label, more, field) => {
    const jobKey = newJob();
    const res = await api.gql(START_BACKFILL, { input: range(jobKey, more) }, { token: 'operator' });
    expect(res.status).toBe(field === null ? 400 : 422);
    if (field !== null) expect([res.code, res.details?.field]).toEqual(['INVALID_INPUT', field]);
    const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_backfill WHERE job_key = $1', [jobKey]);
    expect(rows[0].n).toBe(0);
  });

  it('answers 404 BACKFILL_NOT_FOUND and 409 BACKFILL_STATUS_MISMATCH, and createRun with an unknown backfill id 404', async () => {
    const missing = await api.gql(
      PAUSE_BACKFILL,
      { input: { backfillId: randomUUID(), reason: 'hold it for now' } },
      { token: 'operator' },
    );
    expect([missing.status, missing.code]).toEqual([404, 'BACKFILL_NOT_FOUND']);
    const jobKey = newJob();
    const started = await api.gql(START_BACKFILL, { input: range(jobKey) }, { token: 'operator' });
    const { backfillId } = started.body.data!.startBackfill.backfill;
    const release = await api.gql(RELEASE, { input: { backfillId, reason: 'reports may go' } }, { token: 'operator' });
    expect([release.status, release.code, release.headers.get('x-error-code')]).toEqual([
      409,
      'BACKFILL_STATUS_MISMATCH',
      'BACKFILL_STATUS_MISMATCH',
    ]);
    const input = { jobKey, businessKey: '2026-07-01', hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_', backfillId: randomUUID() };
    const orphan = await api.gql(CREATE_RUN, { input }, { token: 'nifi' });
    expect([orphan.status, orphan.code]).toEqual([404, 'BACKFILL_NOT_FOUND']);
  });
});

describe('a whole backfill through NiFi’s calls', () => {
  let receiver: Receiver;
  let worker: TestWorkerParts;
  let pump: ReturnType<typeof createBackfillPump>;
  beforeAll(async () => {
    receiver = await startReceiver();
    worker = testWorker(api, workerConfig(api, receiver, { dispatch: { pollInterval: 100, ackTimeout: 60_000 } }));
    pump = createBackfillPump({ config: { ...worker.config, backfill: { pumpInterval: 100 } }, db: api.db, log: quietLog });
  });
  afterAll(async () => {
    await pump?.stop();
    await worker?.close();
    await receiver?.close();
  });

  it('starts 5 dates 2 at a time through START_LOAD, each acknowledged by its createRun, and holds readiness until released', async () => {
    const jobKey = newJob();
    const consumer = unique('consumer');
    await defineGate(api, consumer, [jobKey], undefined, { notifyUrl: `${receiver.url}gates/${consumer}` });
    const rows = [3, 4];
    const loads: Promise<void>[] = [];
    let mostActive = 0;
    const activeRuns = async () => {
      const { rows: active } = await api.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1 AND completed_at IS NULL`,
        [jobKey],
      );
      mostActive = Math.max(mostActive, active[0]!.n);
    };
    // the kit: PG-05 answers 202, PG-10 opens the run with the backfill id, the load goes on; PG-40 takes VALIDATE_RUN
    receiver.onCall((received: ReceivedCall) => {
      if (received.path.includes('/start/')) {
        const { businessKey, backfillId } = received.body as { businessKey: string; backfillId: string };
        const jobKey = received.path.split('/start/')[1]!;
        loads.push(
          (async () => {
            const created = await call<{ runId: string; hdfsRunPath: string }>(api.gql, CREATE_RUN, {
              input: { jobKey, businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_BF_', idempotencyKey: randomUUID(), backfillId },
            });
            await activeRuns();
            await call(api.gql, REGISTER_MANIFEST, { input: manifestInput(created.runId, rows) });
            await extractAll(api.gql, created, rows);
          })(),
        );
      } else if (received.path.includes('/validate/')) {
        const runId = String(received.body.runId);
        loads.push(
          (async () => {
            const dispatch = await validateDispatch(api.gql, runId);
            await validateStaging(api.gql, runId, dispatch.dispatchId, 7);
            await publishRun(api.gql, runId, 'PUBLISHED');
            await succeed(api.gql, runId, 7);
          })(),
        );
      }
    });
    worker.dispatcher.start();
    pump.start();

    const started = await api.gql(START_BACKFILL, { input: range(jobKey, { pushReadiness: false }) }, { token: 'operator' });
    expect(started.body.errors).toBeUndefined();
    const { backfillId } = started.body.data!.startBackfill.backfill;
    const backfill = async () => (await api.gql(BACKFILL, { backfillId }, { token: 'viewer' })).body.data!.backfill;
    const done = await until(
      'the backfill to complete',
      async () => {
        const b = await backfill();
        return b.status === 'COMPLETED' && b;
      },
      60_000,
    );
    await Promise.all(loads);

    expect(done.progress).toEqual({ queued: 0, running: 0, succeeded: 5, failed: 0, skipped: 0, cancelled: 0, total: 5 });
    expect(done.dates.map((d: { status: string; startDispatchStatus: string }) => [d.status, d.startDispatchStatus])).toEqual(
      Array(5).fill(['SUCCEEDED', 'ACKED']),
    );
    expect(mostActive).toBeLessThanOrEqual(2);
    const starts = receiver.calls.filter((c) => c.path.includes('/start/') && c.body.backfillId === backfillId);
    expect(starts).toHaveLength(5);
    for (const c of starts) {
      expect(c.path).toMatch(new RegExp(`/start/${jobKey}$`));
      expect(c.headers['x-dispatch-id']).toBe(c.body.dispatchId);
      expect(c.headers['x-run-id']).toBeUndefined();
      expect(c.body).toMatchObject({ backfillId, businessKey: expect.stringMatching(/^2026-07-0[1-5]$/) });
    }
    const runId = done.dates[0].runId;
    expect((await api.gql(RUN_BACKFILL, { runId }, { token: 'viewer' })).body.data!.run.backfillId).toBe(backfillId);

    // readiness: decided for every date, not pushed; the release pushes each date's once
    expect(receiver.calls.filter((c) => c.path.includes('/gates/'))).toEqual([]);
    expect(done).toMatchObject({ readinessHeld: true, allowedActions: ['RELEASE_READINESS'] });
    const released = await api.gql(RELEASE, { input: { backfillId, reason: 'the reports may go now' } }, { token: 'operator' });
    expect(released.body.data!.releaseBackfillReadiness).toMatchObject({
      changed: true,
      backfill: { readinessHeld: false, allowedActions: [] },
    });
    const gateCalls = await until('the released decisions to be pushed', () => {
      const calls = receiver.calls.filter((c) => c.path.includes('/gates/'));
      return calls.length >= 5 && calls;
    });
    expect(gateCalls.map((c) => c.body.businessDate).sort()).toEqual([
      '2026-07-01',
      '2026-07-02',
      '2026-07-03',
      '2026-07-04',
      '2026-07-05',
    ]);
    expect(gateCalls.every((c) => c.body.ready === true)).toBe(true);
  });
});
