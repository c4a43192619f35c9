// A run's partitions a page at a time (src/domain/runs/partition-page.ts): order, filters, the literal search,
// the cursor's partition and the total, read on the database directly. The GraphQL connection (its default page,
// its opaque cursors, its limits and cost) is in test/api/runs/partition-page.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { registerManifestOperation } from '../../../src/domain/manifest/register-manifest.js';
import { purgeLedger } from '../../../src/domain/retention/purge.js';
import { countPartitions, partitionPage, type PartitionPageFilter } from '../../../src/domain/runs/partition-page.js';
import {
  cancelled,
  chunk,
  claimed,
  createdRun,
  type DomainTest,
  manifestCommand,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

interface Page {
  nodes: Array<{ partitionId: string; status: string }>;
  hasNextPage: boolean;
  /** The partition the next page starts after. */
  last: string | null;
  totalCount: number;
}

async function page(
  runId: string,
  { status = null, search = null }: Partial<PartitionPageFilter> = {},
  first = 100,
  after: string | null = null,
) {
  const filter = { status, search };
  const { partitions, hasNextPage } = await partitionPage(t.db.prisma, runId, filter, first, after);
  const nodes = partitions.map(({ partitionId, status }) => ({ partitionId, status }));
  return { nodes, hasNextPage, last: nodes.at(-1)?.partitionId ?? null, totalCount: await countPartitions(t.db.prisma, runId, filter) };
}

/** Every page of the filter, in order, with `first` per page. */
async function allPages(runId: string, first: number, filter: Partial<PartitionPageFilter> = {}) {
  const pages: Page[] = [];
  let after: string | null = null;
  do {
    const p: Page = await page(runId, filter, first, after);
    pages.push(p);
    after = p.hasNextPage ? p.last : null;
  } while (after !== null);
  return pages;
}

/** A run in EXTRACTING with these partition counts and a NULL partition. */
async function startedWithNull(counts: number[], nullCount: number) {
  const run = await createdRun(t);
  await perform(t.db, registerManifestOperation, manifestCommand(run.runId, counts, { nullCount }));
  return run;
}

const reported = async (run: Awaited<ReturnType<typeof startedRun>>, partitionId: string, rows: number) => {
  const { claimToken } = await claimed(t, run.runId, partitionId);
  await perform(t.db, reportChunkOperation, chunk(run, partitionId, claimToken, 0, 1, rows));
};

describe('Run.partitionPage', () => {
  it('pages a run’s partitions in partition order, each once, with the same total on every page', async () => {
    const run = await startedWithNull(
      Array.from({ length: 23 }, () => 5),
      2,
    );
    const expected = [...Array.from({ length: 23 }, (_, i) => String(i).padStart(4, '0')), 'NULL'];
    const pages = await allPages(run.runId, 5);
    expect(pages.map((p) => p.nodes.length)).toEqual([5, 5, 5, 5, 4]);
    expect(pages.flatMap((p) => p.nodes.map((n) => n.partitionId))).toEqual(expected);
    expect(pages.map((p) => p.totalCount)).toEqual([24, 24, 24, 24, 24]);
    expect(pages.at(-1)!).toMatchObject({ hasNextPage: false, last: 'NULL' });
    // a page that ends exactly at the last partition says there is no next page
    expect(await page(run.runId, {}, 24)).toMatchObject({ hasNextPage: false, last: 'NULL' });
  });

  it('filters by status, cursors and total included', async () => {
    const run = await startedRun(t, [3, 3, 3, 3, 3, 3]);
    for (const pid of ['0001', '0003']) await reported(run, pid, 3);
    await claimed(t, run.runId, '0004');
    const success = await allPages(run.runId, 1, { status: 'SUCCESS' });
    expect(success.flatMap((p) => p.nodes)).toEqual([
      { partitionId: '0001', status: 'SUCCESS' },
      { partitionId: '0003', status: 'SUCCESS' },
    ]);
    expect(success.map((p) => p.totalCount)).toEqual([2, 2]);
    const running = await allPages(run.runId, 10, { status: 'RUNNING' });
    expect(running.flatMap((p) => p.nodes)).toEqual([{ partitionId: '0004', status: 'RUNNING' }]);
    const failed = await allPages(run.runId, 10, { status: 'FAILED' });
    expect(failed).toEqual([{ nodes: [], hasNextPage: false, last: null, totalCount: 0 }]);
  });

  it('searches the partition id for the text as typed, in any case: % and _ are characters, not wildcards', async () => {
    const run = await startedWithNull(
      Array.from({ length: 12 }, () => 1),
      1,
    );
    const ids = async (search: string, first = 10) =>
      (await allPages(run.runId, first, { search })).flatMap((p) => p.nodes.map((n) => n.partitionId));
    expect(await ids('1', 2)).toEqual(['0001', '0010', '0011']);
    expect(await ids('null')).toEqual(['NULL']);
    // as wildcards these would match every partition, or 0000 and 0010
    expect(await ids('_')).toEqual([]);
    expect(await ids('%')).toEqual([]);
    expect(await ids('0_0')).toEqual([]);
    expect(await ids('\\')).toEqual([]);
    expect((await page(run.runId, { search: '1' }, 1)).totalCount).toBe(3);
    // an empty search is no filter
    expect((await page(run.runId, { search: '' })).totalCount).toBe(13);
    // status and search together
    await reported(run, '0010', 1);
    expect(await ids('1', 10)).toEqual(['0001', '0010', '0011']);
    const succeeded = await page(run.runId, { search: '1', status: 'SUCCESS' });
    expect(succeeded.nodes).toEqual([{ partitionId: '0010', status: 'SUCCESS' }]);
    expect(succeeded.totalCount).toBe(1);
    expect((await page(run.runId, { search: '1', status: 'PENDING' })).totalCount).toBe(2);
  });

  it('a cursor names a partition, not a position: a cursor past the last partition gives an empty page', async () => {
    const run = await startedRun(t, [1, 1, 1]);
    const after = await page(run.runId, {}, 100, '0000');
    expect(after.nodes.map((n) => n.partitionId)).toEqual(['0001', '0002']);
    expect(await page(run.runId, {}, 100, 'zzzz')).toEqual({ nodes: [], hasNextPage: false, last: null, totalCount: 3 });
  });

  it('is empty with a total of 0 for a purged run', async () => {
    const run = await startedRun(t, [2, 2]);
    expect((await cancelled(t, run.runId)).runStatus).toBe('CANCELLED');
    await t.sql.query(
      `UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '100 days', heartbeat_at = heartbeat_at - interval '100 days',
              started_at = started_at - interval '100 days' WHERE run_id = $1`,
      [run.runId],
    );
    expect((await page(run.runId)).totalCount).toBe(2);
    const summary = await purgeLedger(t.db, { before: new Date(Date.now() - 90 * 86_400_000), batchRows: 1000 });
    expect(summary.purgedRuns.map((r) => r.runId)).toContain(run.runId);
    expect(await page(run.runId)).toEqual({ nodes: [], hasNextPage: false, last: null, totalCount: 0 });
  });
});
