import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createDb } from '../../../src/db/client.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { PUBLICATION, PUBLISH, gateWithJobs, observed, publishInput, unique } from '../../support/gate-fixtures.js';
import { publish } from '../../../src/domain/gate/publish.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const D = '2026-10-23';

async function storedPublications(consumer: string) {
  const publications = await api.sql.query(
    'SELECT business_date::text, output, published_by FROM nifi_ops.gate_publication WHERE consumer = $1',
    [consumer],
  );
  const evidence = await api.sql.query(
    'SELECT job_id, attempt, run_id FROM nifi_ops.gate_publication_evidence WHERE consumer = $1 ORDER BY job_id',
    [consumer],
  );
  return { publications: publications.rows, evidence: evidence.rows };
}

describe('publish', () => {
  it('writes the publication and, with it, the exact upstream runs that authorised it', async () => {
    const { consumer, jobs } = await gateWithJobs(api, D);
    const res = await api.gql(PUBLISH, publishInput(consumer, D));
    expect(res.status).toBe(200);
    const { published, publication } = res.body.data!.publish;
    expect(published).toBe(true);
    expect(publication).toMatchObject({
      consumer,
      businessDate: D,
      output: { totalCents: 17_500 },
      publishedBy: 'nifi-cluster',
      evidence: jobs.map((jobId) => ({ jobId, attempt: 1, runId: `run-${jobId}-${D}-1` })),
    });
    expect(publication.outputHash).toMatch(/^[0-9a-f]{64}$/);
    const read = await api.gql(PUBLICATION, { consumer, businessDate: D }, { token: 'viewer' });
    expect(read.body.data!.publication).toEqual({
      consumer,
      businessDate: D,
      output: publication.output,
      outputHash: publication.outputHash,
      publishedBy: 'nifi-cluster',
      evidence: publication.evidence,
    });
  });

  it('answers an identical retry with published=false and the existing publication, writing nothing', async () => {
    const { consumer } = await gateWithJobs(api, D);
    const first = await api.gql(PUBLISH, publishInput(consumer, D, { totalCents: 17_500, currency: 'EUR' }));
    // the same output with its keys in another order is the same output
    const retry = await api.gql(PUBLISH, publishInput(consumer, D, { currency: 'EUR', totalCents: 17_500 }));
    expect(retry.status).toBe(200);
    expect(retry.body.data!.publish).toEqual({ published: false, publication: first.body.data!.publish.publication });
    expect((await storedPublications(consumer)).publications).toHaveLength(1);
  });

  it('refuses another output for a published date with 409 PUBLICATION_CONFLICT', async () => {
    const { consumer } = await gateWithJobs(api, D);
    await api.gql(PUBLISH, publishInput(consumer, D));
    const res = await api.gql(PUBLISH, publishInput(consumer, D, { totalCents: 18_000 }));
    expect(res.status).toBe(409);
    expect(res.code).toBe('PUBLICATION_CONFLICT');
    expect(res.details).toMatchObject({ consumer, businessDate: D, reason: 'OUTPUT_DIFFERS' });
    expect((await storedPublications(consumer)).publications[0].output).toEqual({ totalCents: 17_500 });
  });

  it('refuses a retry after a newer successful upstream attempt with 409 PUBLICATION_CONFLICT: a correction is no retry', async () => {
    const { consumer, jobs } = await gateWithJobs(api, D);
    await api.gql(PUBLISH, publishInput(consumer, D));
    await observed(api, { jobId: jobs[0]!, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    const res = await api.gql(PUBLISH, publishInput(consumer, D));
    expect(res.status).toBe(409);
    expect(res.code).toBe('PUBLICATION_CONFLICT');
    expect(res.details).toMatchObject({ reason: 'EVIDENCE_DIFFERS' });
    expect((await storedPublications(consumer)).evidence.map((e) => e.attempt)).toEqual([1, 1]);
  });

  it('refuses while not ready with 409 DEPENDENCIES_NOT_READY naming each blocking job, and writes nothing', async () => {
    const { consumer, jobs } = await gateWithJobs(api, D, { jobs: 3, ready: false });
    await observed(api, { jobId: jobs[0]!, businessDate: D, state: 'SUCCEEDED' });
    await observed(api, { jobId: jobs[1]!, businessDate: D, state: 'RUNNING' });
    const res = await api.gql(PUBLISH, publishInput(consumer, D));
    expect(res.status).toBe(409);
    expect(res.code).toBe('DEPENDENCIES_NOT_READY');
    expect(res.details).toEqual({
      consumer,
      businessDate: D,
      gateDefined: true,
      blocking: [
        { jobId: jobs[1], reason: 'RUNNING', attempt: 1, runId: `run-${jobs[1]}-${D}-1` },
        { jobId: jobs[2], reason: 'MISSING', attempt: null, runId: null },
      ],
    });
    expect(await storedPublications(consumer)).toEqual({ publications: [], evidence: [] });
    const undefinedGate = await api.gql(PUBLISH, publishInput(unique('nobody'), D));
    expect(undefinedGate.code).toBe('DEPENDENCIES_NOT_READY');
    expect(undefinedGate.details).toMatchObject({ gateDefined: false, blocking: [] });
  });

  it('keeps the evidence after a later upstream failure, and a replay stays a no-op', async () => {
    const { consumer, jobs } = await gateWithJobs(api, D);
    const first = await api.gql(PUBLISH, publishInput(consumer, D));
    await observed(api, { jobId: jobs[1]!, businessDate: D, attempt: 2, state: 'FAILED' });
    const replay = await api.gql(PUBLISH, publishInput(consumer, D));
    expect(replay.body.data!.publish).toEqual({ published: false, publication: first.body.data!.publish.publication });
    const read = await api.gql(PUBLICATION, { consumer, businessDate: D });
    expect(read.body.data!.publication.evidence).toEqual(first.body.data!.publish.publication.evidence);
  });

  it('rolls the publication back when writing its evidence fails; once the fault is gone a retry succeeds', async () => {
    const { consumer } = await gateWithJobs(api, D);
    await api.sql.query(`CREATE FUNCTION public.reject_evidence() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'evidence rejected on purpose'; END $$`);
    await api.sql.query(`CREATE TRIGGER reject_evidence BEFORE INSERT ON nifi_ops.gate_publication_evidence
      FOR EACH ROW EXECUTE FUNCTION public.reject_evidence()`);
    try {
      const failed = await api.gql(PUBLISH, publishInput(consumer, D));
      expect(failed.status).toBe(500);
      expect(failed.code).toBe('INTERNAL');
      expect(await storedPublications(consumer)).toEqual({ publications: [], evidence: [] });
    } finally {
      await api.sql.query('DROP TRIGGER reject_evidence ON nifi_ops.gate_publication_evidence');
      await api.sql.query('DROP FUNCTION public.reject_evidence()');
    }
    const retry = await api.gql(PUBLISH, publishInput(consumer, D));
    expect(retry.body.data!.publish.published).toBe(true);
    const stored = await storedPublications(consumer);
    expect(stored.publications).toHaveLength(1);
    expect(stored.evidence).toHaveLength(2);
  });

  it('lets exactly one of many concurrent identical publishers write', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const { consumer } = await gateWithJobs(api, D);
      const results = await Promise.all(Array.from({ length: 6 }, () => api.gql(PUBLISH, publishInput(consumer, D))));
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(results.filter((r) => r.body.data!.publish.published)).toHaveLength(1);
      const stored = await storedPublications(consumer);
      expect(stored.publications).toHaveLength(1);
      expect(stored.evidence).toHaveLength(2);
    }
  });

  it('lets exactly one of two publishers with different outputs write; the other gets a conflict', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const { consumer } = await gateWithJobs(api, D);
      const [a, b] = await Promise.all([
        api.gql(PUBLISH, publishInput(consumer, D, { totalCents: 1 })),
        api.gql(PUBLISH, publishInput(consumer, D, { totalCents: 2 })),
      ]);
      const winner = [a, b].find((r) => r.status === 200)!;
      expect([a, b].filter((r) => r.code === 'PUBLICATION_CONFLICT')).toHaveLength(1);
      expect((await storedPublications(consumer)).publications).toEqual([
        expect.objectContaining({ output: winner.body.data!.publish.publication.output }),
      ]);
    }
  });

  it('serialises publishers on separate database connections: one writes, the other waits and sees it', async () => {
    // two pools, so the transactions certainly run on different connections
    const dbs = [createDb(api.database.url, { poolSize: 1 }), createDb(api.database.url, { poolSize: 1 })];
    try {
      for (let rep = 0; rep < 10; rep++) {
        const { consumer } = await gateWithJobs(api, D);
        const cmd = { consumer, businessDate: D, output: { totalCents: 17_500 }, actor: 'publisher' };
        const results = await Promise.all(dbs.map((db) => inTransaction(db, (tx) => publish(tx, cmd))));
        expect(results.map((r) => r.published).sort()).toEqual([false, true]);
        expect(results[0]!.publication).toEqual(results[1]!.publication);
      }
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });

  it.each([
    ['an output that is not an object', { output: [1, 2] }, 'JSON'],
    ['an output over 64 KiB', { output: { blob: 'x'.repeat(70_000) } }, 'input.output'],
    ['a malformed consumer', { consumer: 'a b' }, 'input.consumer'],
    ['an impossible date', { businessDate: '2026-02-30' }, 'Date'],
  ])('refuses %s with 422 INVALID_INPUT and writes nothing', async (_what, change, field) => {
    const { consumer } = await gateWithJobs(api, D);
    const res = await api.gql(PUBLISH, { input: { ...publishInput(consumer, D).input, ...change } });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field });
    expect((await storedPublications(consumer)).publications).toEqual([]);
  });

  it('is for nifi: operators and viewers get 403; anyone may read a publication, 404 when there is none', async () => {
    const { consumer } = await gateWithJobs(api, D);
    expect((await api.gql(PUBLISH, publishInput(consumer, D), { token: 'operator' })).status).toBe(403);
    expect((await api.gql(PUBLISH, publishInput(consumer, D), { token: 'viewer' })).status).toBe(403);
    const missing = await api.gql(PUBLICATION, { consumer, businessDate: D }, { token: 'operator' });
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('PUBLICATION_NOT_FOUND');
    expect(missing.details).toEqual({ consumer, businessDate: D });
  });
});
