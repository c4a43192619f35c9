import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CLAIM_PUBLISH, CREATE_RUN, HDFS_ROOT, RUN, toStagingValidated } from '../../support/fixtures.js';
import { defineGate, observed, unique } from '../../support/gate-fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const D = '2026-10-23';

const createInput = (jobKey: string, businessKey: string, extra: Record<string, unknown> = {}) => ({
  input: { jobKey, businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_GATED_', ...extra },
});

/** A Load Control job bound to a gate over two fresh external jobs, none of them observed yet. */
async function gatedJob() {
  const jobKey = unique('SALES').toUpperCase();
  const consumer = unique('sales_gate');
  const upstream = [unique('dim_customer'), unique('dim_product')];
  await defineGate(api, consumer, upstream, jobKey);
  const ready = async () => {
    for (const jobId of upstream) await observed(api, { jobId, businessDate: D, state: 'SUCCEEDED' });
  };
  return { jobKey, consumer, upstream, ready };
}

async function notReadyEvents(jobKey: string) {
  const { rows } = await api.sql.query(
    `SELECT event_level, run_id::text, business_key, actor, error_code, details FROM nifi_ops.load_event
      WHERE event_name = 'DEPENDENCIES_NOT_READY' AND job_key = $1 ORDER BY event_time`,
    [jobKey],
  );
  return rows;
}

async function runCount(jobKey: string) {
  const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1', [jobKey]);
  return rows[0].n as number;
}

describe('createRun of a job bound to a gate', () => {
  it('refuses with 409 DEPENDENCIES_NOT_READY and per-job reasons, creates nothing, and leaves a WARN event', async () => {
    const { jobKey, consumer, upstream } = await gatedJob();
    await observed(api, { jobId: upstream[0]!, businessDate: D, state: 'FAILED' });
    const res = await api.gql(CREATE_RUN, createInput(jobKey, D));
    expect(res.status).toBe(409);
    expect(res.code).toBe('DEPENDENCIES_NOT_READY');
    expect(res.details).toEqual({
      jobKey,
      businessKey: D,
      consumer,
      businessDate: D,
      gateDefined: true,
      blocking: [
        { jobId: upstream[0], reason: 'FAILED', attempt: 1, runId: `run-${upstream[0]}-${D}-1` },
        { jobId: upstream[1], reason: 'MISSING', attempt: null, runId: null },
      ],
    });
    expect(await runCount(jobKey)).toBe(0);
    expect(await notReadyEvents(jobKey)).toEqual([
      {
        event_level: 'WARN',
        run_id: null,
        business_key: D,
        actor: 'nifi-cluster',
        error_code: 'DEPENDENCIES_NOT_READY',
        details: res.details,
      },
    ]);
  });

  it('creates the run once the gate is ready for the run’s business date', async () => {
    const { jobKey, ready } = await gatedJob();
    await ready();
    const res = await api.gql(CREATE_RUN, createInput(jobKey, D));
    expect(res.body.data!.createRun).toMatchObject({ status: 'CREATED', created: true });
    // ready for the 23rd says nothing about the 24th
    expect((await api.gql(CREATE_RUN, createInput(jobKey, '2026-10-24'))).code).toBe('DEPENDENCIES_NOT_READY');
  });

  it('requires a calendar-date business key for a gated job (422), and leaves ungated jobs alone', async () => {
    const { jobKey, ready } = await gatedJob();
    await ready();
    const res = await api.gql(CREATE_RUN, createInput(jobKey, '2026-02-30'));
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field: 'input.businessKey' });
    const ungated = await api.gql(CREATE_RUN, createInput(unique('FREE').toUpperCase(), 'not-a-date'));
    expect(ungated.body.data!.createRun.created).toBe(true);
  });

  it('still answers an idempotent replay with the existing run after the gate stopped being ready', async () => {
    const { jobKey, upstream, ready } = await gatedJob();
    await ready();
    const body = createInput(jobKey, D, { idempotencyKey: randomUUID() });
    const first = await api.gql(CREATE_RUN, body);
    await observed(api, { jobId: upstream[1]!, businessDate: D, attempt: 2, state: 'RUNNING' });
    const replay = await api.gql(CREATE_RUN, body);
    expect(replay.body.data!.createRun).toEqual({ ...first.body.data!.createRun, created: false });
    expect(await notReadyEvents(jobKey)).toEqual([]);
  });
});

describe('claimPublish of a run bound to a gate', () => {
  it('re-checks the gate: refuses with DEPENDENCIES_NOT_READY while an upstream job re-runs, leaving the run unclaimed', async () => {
    const { jobKey, upstream, ready } = await gatedJob();
    await ready();
    const run = await toStagingValidated(api, [3, 4], { create: { jobKey, businessKey: D } });
    await observed(api, { jobId: upstream[0]!, businessDate: D, attempt: 2, state: 'RUNNING' });

    const refused = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken: randomUUID() } });
    expect(refused.status).toBe(409);
    expect(refused.code).toBe('DEPENDENCIES_NOT_READY');
    expect(refused.details).toMatchObject({ jobKey, blocking: [{ jobId: upstream[0], reason: 'RUNNING', attempt: 2 }] });
    const { rows } = await api.sql.query('SELECT status, publish_token FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ status: 'STAGING_VALIDATED', publish_token: null });
    expect(await notReadyEvents(jobKey)).toEqual([expect.objectContaining({ run_id: run.runId, event_level: 'WARN' })]);

    await observed(api, { jobId: upstream[0]!, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    const publishToken = randomUUID();
    const claimed = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
    expect(claimed.body.data!.claimPublish).toEqual({ claimed: true, runStatus: 'PUBLISHING' });

    const detail = await api.gql(
      `query($runId: UUID!) { run(runId: $runId) {
      evidence { jobId attempt runId consumer businessDate publishToken } } }`,
      { runId: run.runId },
      { token: 'viewer' },
    );
    expect(detail.body.data!.run.evidence).toEqual([
      expect.objectContaining({ jobId: upstream[0], attempt: 2, runId: `run-${upstream[0]}-${D}-2`, businessDate: D, publishToken }),
      expect.objectContaining({ jobId: upstream[1], attempt: 1, runId: `run-${upstream[1]}-${D}-1`, businessDate: D, publishToken }),
    ]);
    // the replay of the claim is answered by the claim, not by a second check
    const replay = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
    expect(replay.body.data!.claimPublish.claimed).toBe(true);
    const stored = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_publish_claim_evidence WHERE run_id = $1', [
      run.runId,
    ]);
    expect(stored.rows[0].n).toBe(2);
  });

  it('stores the evidence once, with the winner’s token, when many claims race', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const { jobKey, ready } = await gatedJob();
      await ready();
      const run = await toStagingValidated(api, [3, 4], { create: { jobKey, businessKey: D } });
      const tokens = Array.from({ length: 6 }, () => randomUUID());
      const results = await Promise.all(
        tokens.map((publishToken) => api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } })),
      );
      const winners = tokens.filter((_, i) => results[i]!.body.data?.claimPublish?.claimed);
      expect(winners).toHaveLength(1);
      const { rows } = await api.sql.query(
        'SELECT DISTINCT publish_token::text, count(*) OVER ()::int AS n FROM nifi_ops.gate_publish_claim_evidence WHERE run_id = $1',
        [run.runId],
      );
      expect(rows).toEqual([{ publish_token: winners[0], n: 2 }]);
    }
  });

  it('writes no evidence for a run of an ungated job', async () => {
    const run = await toStagingValidated(api, [3, 4], { create: { jobKey: unique('FREE').toUpperCase() } });
    const claimed = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken: randomUUID() } });
    expect(claimed.body.data!.claimPublish.claimed).toBe(true);
    const detail = await api.gql(RUN, { runId: run.runId });
    expect(detail.body.errors).toBeUndefined();
    const stored = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_publish_claim_evidence WHERE run_id = $1', [
      run.runId,
    ]);
    expect(stored.rows[0].n).toBe(0);
  });

  it('refuses a run whose job was bound to the gate after the run was created with a non-date business key', async () => {
    const jobKey = unique('LATE').toUpperCase();
    const run = await toStagingValidated(api, [3, 4], { create: { jobKey, businessKey: 'monthly-10' } });
    const consumer = unique('late_gate');
    await defineGate(api, consumer, [unique('dim')], jobKey);
    const refused = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken: randomUUID() } });
    expect(refused.status).toBe(409);
    expect(refused.code).toBe('DEPENDENCIES_NOT_READY');
    expect(refused.details).toEqual({ jobKey, businessKey: 'monthly-10', consumer, reason: 'BUSINESS_KEY_NOT_A_DATE' });
  });
});
