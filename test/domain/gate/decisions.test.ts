// Readiness decided once (issue 15, point 1): every change of a consumer's readiness for a business date is
// recorded once, with a version and the evidence, in the transaction of the attempt that changed it — external
// observations and Load Control runs alike, whichever code path moved the run — and at a gate's definition.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { DECIDED_AT_DEFINITION } from '../../../src/domain/gate/decisions.js';
import { recordObservation } from '../../../src/domain/gate/record-observation.js';
import { failRunOperation } from '../../../src/domain/runs/fail-run.js';
import {
  ACTOR,
  chunk,
  claimed,
  createdRun,
  decisionsOf,
  type DomainTest,
  gateDefined,
  observed,
  publishedRun,
  readinessOf,
  startDomainTest,
  startedRun,
  succeeded,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const D = '2026-10-23';
const evidence = (jobId: string, attempt: number, runId = `run-${jobId}-${D}-${attempt}`) => ({
  source: 'EXTERNAL',
  jobId,
  attempt,
  runId,
});
/** Evidence in one order whatever the database's collation sorts job ids by. */
const byJob = <E extends { jobId: string }>(list: E[]): E[] => [...list].sort((x, y) => (x.jobId < y.jobId ? -1 : 1));

describe('readiness decided once, for external observations', () => {
  it('records the change with version 1 and the evidence when the last required job’s latest attempt succeeds, once', async () => {
    const consumer = unique('consumer');
    const [a, b] = [unique('a'), unique('b')];
    await gateDefined(t, consumer, [a, b]);
    await observed(t, { jobId: a, businessDate: D, state: 'SUCCEEDED' });
    await observed(t, { jobId: b, businessDate: D, state: 'RUNNING' });
    expect(await decisionsOf(t, consumer, D)).toEqual([]);

    await observed(t, { jobId: b, businessDate: D, state: 'SUCCEEDED' });
    const [first, ...more] = await decisionsOf(t, consumer, D);
    expect(more).toEqual([]);
    expect(first).toMatchObject({ version: 1, ready: true, cause: { source: 'EXTERNAL', jobId: b, attempt: 1, state: 'SUCCEEDED' } });
    expect(byJob(first!.evidence)).toEqual(byJob([evidence(a, 1), evidence(b, 1)]));
    // the replay changes nothing, so it decides nothing
    expect((await observed(t, { jobId: b, businessDate: D, state: 'SUCCEEDED' })).changed).toBe(false);
    expect(await decisionsOf(t, consumer, D)).toHaveLength(1);
    expect((await readinessOf(t, consumer, D)).decision).toMatchObject({ version: 1, ready: true });
  });

  it('withdraws a ready date when a newer attempt starts or fails, and decides again when the newest succeeds', async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    await gateDefined(t, consumer, [job]);
    await observed(t, { jobId: job, businessDate: D, attempt: 1, state: 'SUCCEEDED' });
    await observed(t, { jobId: job, businessDate: D, attempt: 2, state: 'RUNNING' });
    await observed(t, { jobId: job, businessDate: D, attempt: 2, state: 'FAILED' }); // not ready already: nothing new
    await observed(t, { jobId: job, businessDate: D, attempt: 3, state: 'SUCCEEDED' });
    // a newer success changes the evidence of a ready date: a decision of its own
    await observed(t, { jobId: job, businessDate: D, attempt: 4, state: 'SUCCEEDED' });
    await observed(t, { jobId: job, businessDate: D, attempt: 1, state: 'SUCCEEDED' }); // a late replay of attempt 1
    await observed(t, { jobId: job, businessDate: D, attempt: 5, state: 'FAILED' }); // a newer attempt, failed at once

    const decisions = await decisionsOf(t, consumer, D);
    expect(decisions.map(({ version, ready, evidence }) => ({ version, ready, evidence }))).toEqual([
      { version: 1, ready: true, evidence: [evidence(job, 1)] },
      { version: 2, ready: false, evidence: [] },
      { version: 3, ready: true, evidence: [evidence(job, 3)] },
      { version: 4, ready: true, evidence: [evidence(job, 4)] },
      { version: 5, ready: false, evidence: [] },
    ]);
    expect(decisions[1]!.cause).toMatchObject({ jobId: job, attempt: 2, state: 'RUNNING' });
    expect(decisions[4]!.cause).toMatchObject({ jobId: job, attempt: 5, state: 'FAILED' });
  });

  it('decides every gate that requires the job, each with its own versions', async () => {
    const [shared, other] = [unique('shared'), unique('other')];
    const [one, two] = [unique('one'), unique('two')];
    await gateDefined(t, one, [shared]);
    await gateDefined(t, two, [shared, other]);
    await observed(t, { jobId: other, businessDate: D, state: 'SUCCEEDED' });
    await observed(t, { jobId: shared, businessDate: D, state: 'SUCCEEDED' });
    expect((await decisionsOf(t, one, D)).map((d) => [d.version, d.ready])).toEqual([[1, true]]);
    expect((await decisionsOf(t, two, D)).map((d) => [d.version, d.ready])).toEqual([[1, true]]);
    expect(await decisionsOf(t, one, '2026-10-24')).toEqual([]);
  });

  it('records nothing for an observation whose transaction rolled back: the decision is part of it', async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    await gateDefined(t, consumer, [job]);
    const rolledBack = inTransaction(t.db, async (tx) => {
      await recordObservation(tx, {
        jobId: job,
        businessDate: D,
        attempt: 1,
        runId: 'r1',
        state: 'SUCCEEDED',
        startedAt: new Date(),
        actor: 't',
      });
      throw new Error('the caller gave up');
    });
    await expect(rolledBack).rejects.toThrow('the caller gave up');
    expect(await decisionsOf(t, consumer, D)).toEqual([]);
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_observation WHERE job_id = $1', [job]);
    expect(rows[0].n).toBe(0);
  });
});

describe('readiness decided once, for Load Control runs', () => {
  it('counts a new run as a newer attempt and SUCCESS as its success, deciding in the transition’s transaction', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const external = unique('ext');
    const consumer = unique('consumer');
    await gateDefined(t, consumer, [jobKey, external]);
    await observed(t, { jobId: external, businessDate: D, state: 'SUCCEEDED' });

    const first = await publishedRun(t, [3, 4], { jobKey, businessKey: D });
    expect(await decisionsOf(t, consumer, D)).toEqual([]); // PUBLISHED is still RUNNING
    await succeeded(t, first.runId);
    const second = await createdRun(t, { jobKey, businessKey: D });
    const failed = await perform(t.db, failRunOperation, {
      runId: second.runId,
      expectedStatus: 'CREATED',
      failStatus: 'FAILED_MANIFEST',
      errorStage: 'MANIFEST',
      errorCode: 'E',
      message: '',
      actor: ACTOR,
    });
    expect(failed.runStatus).toBe('FAILED_MANIFEST');
    const third = await publishedRun(t, [3, 4], { jobKey, businessKey: D });
    await succeeded(t, third.runId);

    const decisions = await decisionsOf(t, consumer, D);
    const runEvidence = (runId: string, attempt: number) => ({ source: 'LOAD_CONTROL', jobId: jobKey, attempt, runId });
    expect(decisions.map(({ version, ready, evidence }) => ({ version, ready, evidence: byJob(evidence) }))).toEqual([
      { version: 1, ready: true, evidence: byJob([runEvidence(first.runId, 1), evidence(external, 1)]) },
      { version: 2, ready: false, evidence: [] },
      { version: 3, ready: true, evidence: byJob([runEvidence(third.runId, 3), evidence(external, 1)]) },
    ]);
    expect(decisions[0]!.cause).toMatchObject({ source: 'LOAD_CONTROL', jobId: jobKey, runId: first.runId, runStatus: 'SUCCESS' });
    expect(decisions[1]!.cause).toMatchObject({ source: 'LOAD_CONTROL', runId: second.runId, runStatus: 'CREATED' });
  });

  it('decides a status change made by any statement, as the SQL functions make theirs, not only through transitions.ts', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const consumer = unique('consumer');
    await gateDefined(t, consumer, [jobKey]);
    const run = await createdRun(t, { jobKey, businessKey: D });
    await t.sql.query(`UPDATE nifi_ops.load_run SET status = 'SUCCESS' WHERE run_id = $1`, [run.runId]);
    expect(await decisionsOf(t, consumer, D)).toMatchObject([{ version: 1, ready: true, cause: { runStatus: 'SUCCESS' } }]);
  });

  it('records nothing for what cannot change readiness: a chunk report’s FAILED_EXTRACT of a running attempt, other keys', async () => {
    const jobKey = unique('LOAD').toUpperCase();
    const consumer = unique('consumer');
    await gateDefined(t, consumer, [jobKey]);
    const run = await startedRun(t, [3], { jobKey, businessKey: D });
    const { claimToken } = await claimed(t, run.runId, '0000');
    // two rows where three were expected: report_chunk fails the partition and the run (in SQL)
    const failed = await perform(t.db, reportChunkOperation, chunk(run, '0000', claimToken, 0, 1, 2));
    expect(failed).toMatchObject({ partitionStatus: 'FAILED', runStatus: 'FAILED_EXTRACT' });
    expect((await readinessOf(t, consumer, D)).jobs[0]).toMatchObject({ reason: 'FAILED', latest: { runId: run.runId } });
    await createdRun(t, { jobKey, businessKey: `${D}_EU` });
    await t.sql.query(`UPDATE nifi_ops.load_run SET status = 'SUCCESS' WHERE job_key = $1 AND business_key <> $2`, [jobKey, D]);
    expect(await decisionsOf(t, consumer, D)).toEqual([]);
  });
});

describe('a gate defined after its observations exist', () => {
  it('decides at definition, and again when a redefinition changes what the date needs', async () => {
    const consumer = unique('consumer');
    const [a, b, c] = [unique('a'), unique('b'), unique('c')];
    const [ready, notReady] = ['2026-10-20', '2026-10-21'];
    for (const jobId of [a, b]) await observed(t, { jobId, businessDate: ready, state: 'SUCCEEDED' });
    await observed(t, { jobId: a, businessDate: notReady, state: 'SUCCEEDED' });

    const defined = await gateDefined(t, consumer, [a, b]);
    expect(defined.decisions).toMatchObject([{ businessDate: ready, version: 1, ready: true, cause: { source: 'DEFINITION' } }]);
    expect((await readinessOf(t, consumer, ready)).decision).toMatchObject({ version: 1, ready: true });
    expect((await readinessOf(t, consumer, notReady)).decision).toBeNull();

    expect((await gateDefined(t, consumer, [b, a])).decisions).toEqual([]); // the same definition
    const widened = await gateDefined(t, consumer, [a, b, c]);
    expect(widened.decisions).toMatchObject([{ businessDate: ready, version: 2, ready: false, evidence: [] }]);
    const narrowed = await gateDefined(t, consumer, [a]);
    expect(narrowed.decisions.map((d) => [d.businessDate, d.version, d.ready])).toEqual([
      [ready, 3, true],
      [notReady, 1, true],
    ]);
  });

  it(`decides only the latest ${DECIDED_AT_DEFINITION} business dates at once; an older one when its next attempt changes`, async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    const dates = Array.from({ length: DECIDED_AT_DEFINITION + 1 }, (_, i) =>
      new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10),
    );
    for (const businessDate of dates) await observed(t, { jobId: job, businessDate, state: 'SUCCEEDED' });
    const defined = await gateDefined(t, consumer, [job]);
    expect(defined.decisions.map((d) => d.businessDate)).toEqual(dates.slice(1));
    const oldest = dates[0]!;
    expect(await decisionsOf(t, consumer, oldest)).toEqual([]);
    await observed(t, { jobId: job, businessDate: oldest, attempt: 2, state: 'SUCCEEDED' });
    expect(await decisionsOf(t, consumer, oldest)).toMatchObject([{ version: 1, ready: true, evidence: [{ attempt: 2 }] }]);
  });
});
