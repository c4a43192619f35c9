import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CANCEL_RUN, chunkInput, claim, createRun, report, startRun } from '../../support/fixtures.js';
import { purgeLedger } from '../../../src/domain/retention/purge.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const COUNTS = `query($runId: UUID!) { run(runId: $runId) { receivedRows extractedCount } }`;
const PAGE_OF_RUNS = `query($jobKey: String!) { runs(filter: { jobKey: $jobKey }) { nodes { runId receivedRows } } }`;

async function counts(runId: string) {
  const res = await api.gql<{ run: { receivedRows: number; extractedCount: number } }>(COUNTS, { runId });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.run;
}

describe('Run.receivedRows', () => {
  it('counts the rows of chunks as they arrive, before their partition finishes (extractedCount does not)', async () => {
    const run = await startRun(api, [5, 7]);
    expect(await counts(run.runId)).toEqual({ receivedRows: 0, extractedCount: 0 });
    const { claimToken } = await claim(api, run.runId, '0000');
    expect((await report(api, chunkInput(run, '0000', claimToken, 0, 2, 3))).body.errors).toBeUndefined();
    expect(await counts(run.runId)).toEqual({ receivedRows: 3, extractedCount: 0 });
    expect((await report(api, chunkInput(run, '0000', claimToken, 1, 2, 2))).body.errors).toBeUndefined();
    const other = await claim(api, run.runId, '0001');
    expect((await report(api, chunkInput(run, '0001', other.claimToken, 0, 3, 4))).body.errors).toBeUndefined();
    expect(await counts(run.runId)).toEqual({ receivedRows: 9, extractedCount: 5 });
  });

  it('is 0 for a run without partitions and for a purged run, and answers for every run of a page', async () => {
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

    await api.gql(CANCEL_RUN, { input: { runId: run.runId, reason: 'superseded by a rerun' } }, { token: 'operator' });
    await api.sql.query(`UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '100 days' WHERE run_id = $1`, [run.runId]);
    await purgeLedger(api.db, { before: new Date(Date.now() - 90 * 86_400_000), batchRows: 1000 });
    expect(await counts(run.runId)).toEqual({ receivedRows: 0, extractedCount: 0 });
  });
});
