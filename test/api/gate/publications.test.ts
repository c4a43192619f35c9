// Audit (issue 15, point 4): a consumer's publications over a range of business dates, a bounded page at a time,
// each with its evidence and the attempts around it — the ones it superseded and any that superseded it since.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { FAIL_RUN, createRun, toPublished } from '../../support/fixtures.js';
import { PUBLISH, defineGate, observed, publishInput, toSuccess, unique } from '../../support/gate-fixtures.js';

const PUBLICATIONS = `query($consumer: String!, $from: Date, $to: Date, $first: Int, $after: Date) {
  publications(consumer: $consumer, from: $from, to: $to, first: $first, after: $after) {
    nodes { businessDate publishedBy outputHash evidence { jobId attempt runId attempts { attempt runId state source } } }
    pageInfo { hasNextPage endCursor } } }`;
const GATE = `query($consumer: String!) { gate(consumer: $consumer) {
  consumer requiredJobs notifyUrl expectedBy { jobId text } dispatches { dispatchId } } }`;

let api: TestApi;
let consumer: string;
let jobKey: string;
let external: string;
const [D1, D2, D3] = ['2026-10-21', '2026-10-22', '2026-10-23'];
const runs: Record<string, string> = {};

beforeAll(async () => {
  api = await startTestApi();
  consumer = unique('consumer');
  jobKey = unique('LOAD').toUpperCase();
  external = unique('ext');
  await defineGate(api, consumer, [jobKey, external]);
  for (const businessDate of [D1, D2, D3]) await observed(api, { jobId: external, businessDate, state: 'SUCCEEDED' });
  // D1: the first run failed, the second (attempt 2) succeeded and is the evidence
  runs.failed = (await createRun(api, { jobKey, businessKey: D1 })).runId;
  await api.gql(FAIL_RUN, {
    input: { runId: runs.failed, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'E' },
  });
  for (const businessDate of [D1, D2, D3]) {
    const run = await toPublished(api, [3, 4], { create: { jobKey, businessKey: businessDate } });
    await toSuccess(api, run.runId);
    runs[businessDate] = run.runId;
    const published = await api.gql(PUBLISH, publishInput(consumer, businessDate, { date: businessDate }));
    expect(published.body.data!.publish.published).toBe(true);
  }
  // after D2 was published, a newer attempt of the external job started: it supersedes D2's evidence
  await observed(api, { jobId: external, businessDate: D2, attempt: 2, state: 'RUNNING' });
}, 120_000);
afterAll(async () => api?.close());

async function publications(variables: Record<string, unknown>) {
  const res = await api.gql(PUBLICATIONS, { consumer, ...variables }, { token: 'viewer' });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.publications as {
    nodes: Array<{
      businessDate: string;
      evidence: Array<{ jobId: string; attempt: number; runId: string; attempts: Array<Record<string, unknown>> }>;
    }>;
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

describe('publications', () => {
  it('lists a consumer’s publications newest first, each with its evidence and the attempts it superseded or was superseded by', async () => {
    const page = await publications({});
    expect(page.nodes.map((p) => p.businessDate)).toEqual([D3, D2, D1]);
    expect(page.pageInfo).toEqual({ hasNextPage: false, endCursor: D1 });

    const evidenceOf = (date: string, jobId: string) =>
      page.nodes.find((p) => p.businessDate === date)!.evidence.find((e) => e.jobId === jobId)!;
    expect(evidenceOf(D1, jobKey)).toEqual({
      jobId: jobKey,
      attempt: 2,
      runId: runs[D1],
      attempts: [
        { attempt: 1, runId: runs.failed, state: 'FAILED', source: 'LOAD_CONTROL' },
        { attempt: 2, runId: runs[D1], state: 'SUCCEEDED', source: 'LOAD_CONTROL' },
      ],
    });
    expect(evidenceOf(D2, external)).toMatchObject({
      attempt: 1,
      attempts: [
        { attempt: 1, state: 'SUCCEEDED', source: 'EXTERNAL' },
        { attempt: 2, state: 'RUNNING', source: 'EXTERNAL' },
      ],
    });
    expect(evidenceOf(D3, external).attempts).toHaveLength(1);
  });

  it('pages with first and after (pageInfo.endCursor), and keeps to from and to', async () => {
    const first = await publications({ first: 2 });
    expect(first.nodes.map((p) => p.businessDate)).toEqual([D3, D2]);
    expect(first.pageInfo).toEqual({ hasNextPage: true, endCursor: D2 });
    const next = await publications({ first: 2, after: first.pageInfo.endCursor });
    expect(next.nodes.map((p) => p.businessDate)).toEqual([D1]);
    expect(next.pageInfo.hasNextPage).toBe(false);

    expect((await publications({ from: D2, to: D2 })).nodes.map((p) => p.businessDate)).toEqual([D2]);
    expect((await publications({ from: D2 })).nodes.map((p) => p.businessDate)).toEqual([D3, D2]);
    expect((await publications({ to: D1 })).nodes.map((p) => p.businessDate)).toEqual([D1]);
    const nobody = await api.gql(PUBLICATIONS, { consumer: unique('nobody') }, { token: 'viewer' });
    expect(nobody.body.data!.publications).toEqual({ nodes: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it('refuses a reversed range, a page out of bounds or a malformed argument with 422 INVALID_INPUT', async () => {
    for (const [variables, field] of [
      [{ from: D3, to: D1 }, 'args.to'],
      [{ first: 0 }, 'args.first'],
      [{ first: 51 }, 'args.first'],
      [{ consumer: 'two words' }, 'args.consumer'],
    ] as const) {
      const res = await api.gql(PUBLICATIONS, { consumer, ...variables }, { token: 'viewer' });
      expect([res.status, res.code, res.details?.field], JSON.stringify(variables)).toEqual([422, 'INVALID_INPUT', field]);
    }
    const badCursor = await api.gql(PUBLICATIONS, { consumer, after: '2026-02-30' }, { token: 'viewer' });
    expect([badCursor.status, badCursor.code]).toEqual([422, 'INVALID_INPUT']);
    expect((await api.gql(PUBLICATIONS, { consumer }, { token: null })).status).toBe(401);
  });
});

describe('gate', () => {
  it('answers a consumer’s definition, and null for a consumer without a gate', async () => {
    const res = await api.gql(GATE, { consumer }, { token: 'viewer' });
    expect(res.body.data!.gate).toEqual({
      consumer,
      requiredJobs: expect.arrayContaining([jobKey, external]),
      notifyUrl: null,
      expectedBy: [],
      dispatches: [],
    });
    expect((await api.gql(GATE, { consumer: unique('nobody') }, { token: 'viewer' })).body.data!.gate).toBeNull();
  });
});
