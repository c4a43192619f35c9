// publish's rules (src/domain/gate/publish.ts): a publication written once with the upstream attempts that
// authorised it; identical retries are no-ops, a different output or newer evidence a conflict, publishers serialised.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { DomainError } from '../../../src/contract/errors.js';
import { createDb } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { getPublication, publish, publishOperation } from '../../../src/domain/gate/publish.js';
import { ACTOR, type DomainTest, gateDefined, observed, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const D = '2026-10-23';

async function storedPublications(consumer: string) {
  const publications = await t.sql.query(
    'SELECT business_date::text, output, published_by FROM nifi_ops.gate_publication WHERE consumer = $1',
    [consumer],
  );
  const evidence = await t.sql.query(
    'SELECT job_id, attempt, run_id FROM nifi_ops.gate_publication_evidence WHERE consumer = $1 ORDER BY job_id',
    [consumer],
  );
  return { publications: publications.rows, evidence: evidence.rows };
}

/** A gate over fresh job ids, with every job's attempt 1 SUCCEEDED for the date when `ready`. */
async function gateWithJobs(businessDate: string, options: { jobs?: number; ready?: boolean } = {}) {
  const consumer = unique('consumer');
  const jobs = Array.from({ length: options.jobs ?? 2 }, (_, i) => unique(`job${i}`));
  await gateDefined(t, consumer, jobs);
  if (options.ready ?? true) {
    for (const jobId of jobs) await observed(t, { jobId, businessDate, state: 'SUCCEEDED' });
  }
  return { consumer, jobs };
}

const published = (consumer: string, businessDate: string, output: Record<string, unknown> = { totalCents: 17_500 }) =>
  perform(t.db, publishOperation, { consumer, businessDate, output, actor: ACTOR });

/** The same call, settled: the result or the error it raised. */
const settled = (call: ReturnType<typeof published>) =>
  call.then(
    (result) => ({ result, error: null }),
    (error: unknown) => ({ result: null, error: error as { code?: string } }),
  );

describe('publish', () => {
  it('answers an identical retry with published=false and the existing publication, writing nothing', async () => {
    const { consumer } = await gateWithJobs(D);
    const first = await published(consumer, D, { totalCents: 17_500, currency: 'EUR' });
    // the same output with its keys in another order is the same output
    const retry = await published(consumer, D, { currency: 'EUR', totalCents: 17_500 });
    expect(retry).toEqual({ published: false, publication: first.publication });
    expect((await storedPublications(consumer)).publications).toHaveLength(1);
  });

  it('refuses another output for a published date with 409 PUBLICATION_CONFLICT', async () => {
    const { consumer } = await gateWithJobs(D);
    await published(consumer, D);
    await expect(published(consumer, D, { totalCents: 18_000 })).rejects.toMatchObject({
      name: 'DomainError',
      code: 'PUBLICATION_CONFLICT',
      httpStatus: 409,
      details: { consumer, businessDate: D, reason: 'OUTPUT_DIFFERS' },
    });
    expect((await storedPublications(consumer)).publications[0].output).toEqual({ totalCents: 17_500 });
  });

  it('refuses a retry after a newer successful upstream attempt with 409 PUBLICATION_CONFLICT: a correction is no retry', async () => {
    const { consumer, jobs } = await gateWithJobs(D);
    await published(consumer, D);
    await observed(t, { jobId: jobs[0]!, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    await expect(published(consumer, D)).rejects.toMatchObject({
      name: 'DomainError',
      code: 'PUBLICATION_CONFLICT',
      httpStatus: 409,
      details: { reason: 'EVIDENCE_DIFFERS' },
    });
    expect((await storedPublications(consumer)).evidence.map((e) => e.attempt)).toEqual([1, 1]);
  });

  it('refuses while not ready with 409 DEPENDENCIES_NOT_READY naming each blocking job, and writes nothing', async () => {
    const { consumer, jobs } = await gateWithJobs(D, { jobs: 3, ready: false });
    await observed(t, { jobId: jobs[0]!, businessDate: D, state: 'SUCCEEDED' });
    await observed(t, { jobId: jobs[1]!, businessDate: D, state: 'RUNNING' });
    const notReady = await settled(published(consumer, D));
    expect(notReady.error).toMatchObject({ name: 'DomainError', code: 'DEPENDENCIES_NOT_READY', httpStatus: 409 });
    expect((notReady.error as { details?: unknown }).details).toEqual({
      consumer,
      businessDate: D,
      gateDefined: true,
      blocking: [
        { jobId: jobs[1], reason: 'RUNNING', attempt: 1, runId: `run-${jobs[1]}-${D}-1` },
        { jobId: jobs[2], reason: 'MISSING', attempt: null, runId: null },
      ],
    });
    expect(await storedPublications(consumer)).toEqual({ publications: [], evidence: [] });
    await expect(published(unique('nobody'), D)).rejects.toMatchObject({
      code: 'DEPENDENCIES_NOT_READY',
      details: { gateDefined: false, blocking: [] },
    });
  });

  it('keeps the evidence after a later upstream failure, and a replay stays a no-op', async () => {
    const { consumer, jobs } = await gateWithJobs(D);
    const first = await published(consumer, D);
    await observed(t, { jobId: jobs[1]!, businessDate: D, attempt: 2, state: 'FAILED' });
    const replay = await published(consumer, D);
    expect(replay).toEqual({ published: false, publication: first.publication });
    const read = await getPublication(t.db.prisma, consumer, D);
    expect(read.evidence).toEqual(first.publication.evidence);
  });

  it('rolls the publication back when writing its evidence fails; once the fault is gone a retry succeeds', async () => {
    const { consumer } = await gateWithJobs(D);
    await t.sql.query(`CREATE FUNCTION public.reject_evidence() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'evidence rejected on purpose'; END $$`);
    await t.sql.query(`CREATE TRIGGER reject_evidence BEFORE INSERT ON nifi_ops.gate_publication_evidence
      FOR EACH ROW EXECUTE FUNCTION public.reject_evidence()`);
    try {
      // not one of the contract's codes: the API answers it 500 INTERNAL
      const failed = await settled(published(consumer, D));
      expect(failed.error).toBeInstanceOf(Error);
      expect(failed.error).not.toBeInstanceOf(DomainError);
      expect(String(failed.error)).toContain('evidence rejected on purpose');
      expect(await storedPublications(consumer)).toEqual({ publications: [], evidence: [] });
    } finally {
      await t.sql.query('DROP TRIGGER reject_evidence ON nifi_ops.gate_publication_evidence');
      await t.sql.query('DROP FUNCTION public.reject_evidence()');
    }
    const retry = await published(consumer, D);
    expect(retry.published).toBe(true);
    const stored = await storedPublications(consumer);
    expect(stored.publications).toHaveLength(1);
    expect(stored.evidence).toHaveLength(2);
  });

  it('lets exactly one of many concurrent identical publishers write', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const { consumer } = await gateWithJobs(D);
      const results = await Promise.all(Array.from({ length: 6 }, () => settled(published(consumer, D))));
      expect(results.map((r) => r.error)).toEqual(Array(6).fill(null));
      expect(results.filter((r) => r.result!.published)).toHaveLength(1);
      const stored = await storedPublications(consumer);
      expect(stored.publications).toHaveLength(1);
      expect(stored.evidence).toHaveLength(2);
    }
  });

  it('lets exactly one of two publishers with different outputs write; the other gets a conflict', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const { consumer } = await gateWithJobs(D);
      const [a, b] = await Promise.all([
        settled(published(consumer, D, { totalCents: 1 })),
        settled(published(consumer, D, { totalCents: 2 })),
      ]);
      const winner = [a, b].find((r) => r.error === null)!;
      expect([a, b].filter((r) => r.error?.code === 'PUBLICATION_CONFLICT')).toHaveLength(1);
      expect((await storedPublications(consumer)).publications).toEqual([
        expect.objectContaining({ output: winner.result!.publication.output }),
      ]);
    }
  });

  it('serialises publishers on separate database connections: one writes, the other waits and sees it', async () => {
    // two pools, so the transactions certainly run on different connections
    const dbs = [createDb(t.database.url, { poolSize: 1 }), createDb(t.database.url, { poolSize: 1 })];
    try {
      for (let rep = 0; rep < 10; rep++) {
        const { consumer } = await gateWithJobs(D);
        const cmd = { consumer, businessDate: D, output: { totalCents: 17_500 }, actor: 'publisher' };
        const results = await Promise.all(dbs.map((db) => inTransaction(db, (tx) => publish(tx, cmd))));
        expect(results.map((r) => r.published).sort()).toEqual([false, true]);
        expect(results[0]!.publication).toEqual(results[1]!.publication);
      }
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });
});
