// Run.receivedRows over GraphQL: one answer for every run of a page. What it counts is a domain test:
// test/domain/runs/received-rows.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, createRun, report, startRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const PAGE_OF_RUNS = `query($jobKey: String!) { runs(filter: { jobKey: $jobKey }) { nodes { runId receivedRows } } }`;

describe('Run.receivedRows', () => {
  it('answers for every run of a page, 0 for a run without partitions', async () => {
    const jobKey = `RECEIVED_${Date.now()}`;
    const empty = await createRun(api, { jobKey });
    const run = await startRun(api, [4], { create: { jobKey } });
    const { claimToken } = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', claimToken, 0, 2, 4));
    const res = await api.gql<{ runs: { nodes: Array<{ runId: string; receivedRows: number }> } }>(PAGE_OF_RUNS, { jobKey });
    expect(res.body.data!.runs.nodes).toEqual([
      { runId: run.runId, receivedRows: 4 },
      { runId: empty.runId, receivedRows: 0 },
    ]);
  });
});
