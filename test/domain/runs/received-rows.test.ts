// A run's received rows (receivedRows, src/domain/runs/queries.ts): the rows of its chunks as they arrive, read on
// the database directly. Run.receivedRows on a page of runs over GraphQL: test/api/runs/received-rows.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { purgeLedger } from '../../../src/domain/retention/purge.js';
import { getRun, receivedRows } from '../../../src/domain/runs/queries.js';
import { cancelled, chunk, claimed, createdRun, type DomainTest, startDomainTest, startedRun } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

async function counts(runId: string) {
  const [received] = await receivedRows(t.db.prisma, [runId]);
  return { receivedRows: received, extractedCount: (await getRun(t.db.prisma, runId)).extractedCount };
}

describe('Run.receivedRows', () => {
  it('counts the rows of chunks as they arrive, before their partition finishes (extractedCount does not)', async () => {
    const run = await startedRun(t, [5, 7]);
    expect(await counts(run.runId)).toEqual({ receivedRows: 0n, extractedCount: 0n });
    const { claimToken } = await claimed(t, run.runId, '0000');
    await perform(t.db, reportChunkOperation, chunk(run, '0000', claimToken, 0, 2, 3));
    expect(await counts(run.runId)).toEqual({ receivedRows: 3n, extractedCount: 0n });
    await perform(t.db, reportChunkOperation, chunk(run, '0000', claimToken, 1, 2, 2));
    const other = await claimed(t, run.runId, '0001');
    await perform(t.db, reportChunkOperation, chunk(run, '0001', other.claimToken, 0, 3, 4));
    expect(await counts(run.runId)).toEqual({ receivedRows: 9n, extractedCount: 5n });
  });

  it('is 0 for a run without partitions and for a purged run, and answers for every run of a page', async () => {
    const empty = await createdRun(t);
    const run = await startedRun(t, [4]);
    const { claimToken } = await claimed(t, run.runId, '0000');
    await perform(t.db, reportChunkOperation, chunk(run, '0000', claimToken, 0, 2, 4));
    expect(await receivedRows(t.db.prisma, [run.runId, empty.runId])).toEqual([4n, 0n]);

    await cancelled(t, run.runId, 'superseded by a rerun');
    await t.sql.query(`UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '100 days' WHERE run_id = $1`, [run.runId]);
    await purgeLedger(t.db, { before: new Date(Date.now() - 90 * 86_400_000), batchRows: 1000 });
    expect(await counts(run.runId)).toEqual({ receivedRows: 0n, extractedCount: 0n });
  });
});
