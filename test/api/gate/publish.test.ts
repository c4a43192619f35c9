// publish over HTTP: the happy path with the publication query, the input's refusals and the roles. Its rules
// (retries, conflicts, readiness, atomicity, races) are in test/domain/gate/publish.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { PUBLICATION, PUBLISH, gateWithJobs, publishInput } from '../../support/gate-fixtures.js';

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
