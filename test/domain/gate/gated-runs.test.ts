// A Load Control job bound to a gate waits for it (src/domain/gate/run-gate.ts): createRun and claimPublish refuse
// with DEPENDENCIES_NOT_READY, record the refusal, and a claim stores the evidence it was authorised by.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { perform } from '../../../src/db/operation.js';
import { listPublishClaimEvidence } from '../../../src/domain/gate/publish-claim.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import type { CreateRunCommand } from '../../../src/domain/runs/create-run.js';
import { ACTOR, createdRun, type DomainTest, gateDefined, observed, stagingValidatedRun, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const D = '2026-10-23';

const create = (jobKey: string, businessKey: string, extra: Partial<CreateRunCommand> = {}) =>
  createdRun(t, { jobKey, businessKey, stageTablePrefix: 'TMP_GATED_', ...extra });

/** The error a refused call raised. */
const refusal = (call: Promise<unknown>) =>
  call.then(
    () => expect.unreachable('the call was not refused'),
    (error: unknown) => error as { name: string; code: string; httpStatus: number; details: Record<string, unknown> },
  );

const claimPublish = (runId: string, publishToken: string) => perform(t.db, claimPublishOperation, { runId, publishToken, actor: ACTOR });

/** A Load Control job bound to a gate over two fresh external jobs, none of them observed yet. */
async function gatedJob() {
  const jobKey = unique('SALES').toUpperCase();
  const consumer = unique('sales_gate');
  const upstream = [unique('dim_customer'), unique('dim_product')];
  await gateDefined(t, consumer, upstream, { boundJobKey: jobKey });
  const ready = async () => {
    for (const jobId of upstream) await observed(t, { jobId, businessDate: D, state: 'SUCCEEDED' });
  };
  return { jobKey, consumer, upstream, ready };
}

async function notReadyEvents(jobKey: string) {
  const { rows } = await t.sql.query(
    `SELECT event_level, run_id::text, business_key, actor, error_code, details FROM nifi_ops.load_event
      WHERE event_name = 'DEPENDENCIES_NOT_READY' AND job_key = $1 ORDER BY event_time`,
    [jobKey],
  );
  return rows;
}

async function runCount(jobKey: string) {
  const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1', [jobKey]);
  return rows[0].n as number;
}

describe('createRun of a job bound to a gate', () => {
  it('refuses with 409 DEPENDENCIES_NOT_READY and per-job reasons, creates nothing, and leaves a WARN event', async () => {
    const { jobKey, consumer, upstream } = await gatedJob();
    await observed(t, { jobId: upstream[0]!, businessDate: D, state: 'FAILED' });
    const error = await refusal(create(jobKey, D));
    expect(error).toMatchObject({ name: 'DomainError', code: 'DEPENDENCIES_NOT_READY', httpStatus: 409 });
    expect(error.details).toEqual({
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
        details: error.details,
      },
    ]);
  });

  it('creates the run once the gate is ready for the run’s business date', async () => {
    const { jobKey, ready } = await gatedJob();
    await ready();
    expect(await create(jobKey, D)).toMatchObject({ status: 'CREATED', created: true });
    // ready for the 23rd says nothing about the 24th
    expect((await refusal(create(jobKey, '2026-10-24'))).code).toBe('DEPENDENCIES_NOT_READY');
  });

  it('requires a calendar-date business key for a gated job (422), and leaves ungated jobs alone', async () => {
    const { jobKey, ready } = await gatedJob();
    await ready();
    const error = await refusal(create(jobKey, '2026-02-30'));
    expect(error).toMatchObject({ name: 'DomainError', code: 'INVALID_INPUT', httpStatus: 422, details: { field: 'input.businessKey' } });
    const ungated = await create(unique('FREE').toUpperCase(), 'not-a-date');
    expect(ungated.created).toBe(true);
  });

  it('still answers an idempotent replay with the existing run after the gate stopped being ready', async () => {
    const { jobKey, upstream, ready } = await gatedJob();
    await ready();
    const idempotencyKey = randomUUID();
    const first = await create(jobKey, D, { idempotencyKey });
    await observed(t, { jobId: upstream[1]!, businessDate: D, attempt: 2, state: 'RUNNING' });
    const replay = await create(jobKey, D, { idempotencyKey });
    expect(replay).toEqual({ ...first, created: false });
    expect(await notReadyEvents(jobKey)).toEqual([]);
  });
});

describe('claimPublish of a run bound to a gate', () => {
  it('re-checks the gate: refuses with DEPENDENCIES_NOT_READY while an upstream job re-runs, leaving the run unclaimed', async () => {
    const { jobKey, upstream, ready } = await gatedJob();
    await ready();
    const run = await stagingValidatedRun(t, [3, 4], { jobKey, businessKey: D });
    await observed(t, { jobId: upstream[0]!, businessDate: D, attempt: 2, state: 'RUNNING' });

    const refused = await refusal(claimPublish(run.runId, randomUUID()));
    expect(refused).toMatchObject({ name: 'DomainError', code: 'DEPENDENCIES_NOT_READY', httpStatus: 409 });
    expect(refused.details).toMatchObject({ jobKey, blocking: [{ jobId: upstream[0], reason: 'RUNNING', attempt: 2 }] });
    const { rows } = await t.sql.query('SELECT status, publish_token FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0]).toEqual({ status: 'STAGING_VALIDATED', publish_token: null });
    expect(await notReadyEvents(jobKey)).toEqual([expect.objectContaining({ run_id: run.runId, event_level: 'WARN' })]);

    await observed(t, { jobId: upstream[0]!, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    const publishToken = randomUUID();
    expect(await claimPublish(run.runId, publishToken)).toEqual({ claimed: true, runStatus: 'PUBLISHING' });

    // what Run.evidence loads
    const [evidence] = await listPublishClaimEvidence(t.db.prisma, [run.runId]);
    expect(evidence).toEqual([
      expect.objectContaining({ jobId: upstream[0], attempt: 2, runId: `run-${upstream[0]}-${D}-2`, businessDate: D, publishToken }),
      expect.objectContaining({ jobId: upstream[1], attempt: 1, runId: `run-${upstream[1]}-${D}-1`, businessDate: D, publishToken }),
    ]);
    // the replay of the claim is answered by the claim, not by a second check
    expect((await claimPublish(run.runId, publishToken)).claimed).toBe(true);
    const stored = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_publish_claim_evidence WHERE run_id = $1', [run.runId]);
    expect(stored.rows[0].n).toBe(2);
  });

  it('stores the evidence once, with the winner’s token, when many claims race', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const { jobKey, ready } = await gatedJob();
      await ready();
      const run = await stagingValidatedRun(t, [3, 4], { jobKey, businessKey: D });
      const tokens = Array.from({ length: 6 }, () => randomUUID());
      const results = await Promise.all(tokens.map((publishToken) => claimPublish(run.runId, publishToken)));
      const winners = tokens.filter((_, i) => results[i]!.claimed);
      expect(winners).toHaveLength(1);
      const { rows } = await t.sql.query(
        'SELECT DISTINCT publish_token::text, count(*) OVER ()::int AS n FROM nifi_ops.gate_publish_claim_evidence WHERE run_id = $1',
        [run.runId],
      );
      expect(rows).toEqual([{ publish_token: winners[0], n: 2 }]);
    }
  });

  it('writes no evidence for a run of an ungated job', async () => {
    const run = await stagingValidatedRun(t, [3, 4], { jobKey: unique('FREE').toUpperCase() });
    expect((await claimPublish(run.runId, randomUUID())).claimed).toBe(true);
    expect(await listPublishClaimEvidence(t.db.prisma, [run.runId])).toEqual([[]]);
    const stored = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_publish_claim_evidence WHERE run_id = $1', [run.runId]);
    expect(stored.rows[0].n).toBe(0);
  });

  it('refuses a run whose job was bound to the gate after the run was created with a non-date business key', async () => {
    const jobKey = unique('LATE').toUpperCase();
    const run = await stagingValidatedRun(t, [3, 4], { jobKey, businessKey: 'monthly-10' });
    const consumer = unique('late_gate');
    await gateDefined(t, consumer, [unique('dim')], { boundJobKey: jobKey });
    const refused = await refusal(claimPublish(run.runId, randomUUID()));
    expect(refused).toMatchObject({ name: 'DomainError', code: 'DEPENDENCIES_NOT_READY', httpStatus: 409 });
    expect(refused.details).toEqual({ jobKey, businessKey: 'monthly-10', consumer, reason: 'BUSINESS_KEY_NOT_A_DATE' });
  });
});
