import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CANCEL_RUN, chunkInput, claim, report, startRun } from '../../support/fixtures.js';
import { purgeLedger } from '../../../src/domain/retention/purge.js';
import { decodePartitionCursor, encodePartitionCursor } from '../../../src/domain/runs/partition-page.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const PAGE = `query($runId: UUID!, $first: Int, $after: String, $status: PartitionStatus, $search: String) {
  run(runId: $runId) { partitionPage(first: $first, after: $after, status: $status, search: $search) {
    nodes { partitionId status } pageInfo { hasNextPage endCursor } totalCount } } }`;

interface Page {
  nodes: Array<{ partitionId: string; status: string }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount: number;
}

async function page(runId: string, args: Record<string, unknown> = {}) {
  const res = await api.gql<{ run: { partitionPage: Page } | null }>(PAGE, { runId, ...args });
  return { res, page: res.body.data?.run?.partitionPage };
}

/** Every page of the filter, in order, with `first` per page. */
async function allPages(runId: string, first: number, args: Record<string, unknown> = {}) {
  const pages: Page[] = [];
  let after: string | null = null;
  do {
    const { res, page: p } = await page(runId, { ...args, first, after });
    expect(res.body.errors).toBeUndefined();
    pages.push(p!);
    after = p!.pageInfo.hasNextPage ? p!.pageInfo.endCursor : null;
  } while (after !== null);
  return pages;
}

describe('Run.partitionPage', () => {
  it('pages a run’s partitions in partition order, each once, with the same total on every page', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 23 }, () => 5),
      { nullCount: 2 },
    );
    const expected = [...Array.from({ length: 23 }, (_, i) => String(i).padStart(4, '0')), 'NULL'];
    const pages = await allPages(run.runId, 5);
    expect(pages.map((p) => p.nodes.length)).toEqual([5, 5, 5, 5, 4]);
    expect(pages.flatMap((p) => p.nodes.map((n) => n.partitionId))).toEqual(expected);
    expect(pages.map((p) => p.totalCount)).toEqual([24, 24, 24, 24, 24]);
    expect(pages.at(-1)!.pageInfo).toEqual({ hasNextPage: false, endCursor: encodePartitionCursor('NULL') });
    // the default page (100) holds them all
    const { page: whole } = await page(run.runId);
    expect(whole!.nodes.map((n) => n.partitionId)).toEqual(expected);
    expect(whole!.pageInfo.hasNextPage).toBe(false);
    // a page that ends exactly at the last partition says there is no next page
    const { page: exact } = await page(run.runId, { first: 24 });
    expect(exact!.pageInfo).toEqual({ hasNextPage: false, endCursor: encodePartitionCursor('NULL') });
  });

  it('filters by status, cursors and total included', async () => {
    const run = await startRun(api, [3, 3, 3, 3, 3, 3]);
    for (const pid of ['0001', '0003', '0004']) {
      const { claimToken } = await claim(api, run.runId, pid);
      if (pid !== '0004') await report(api, chunkInput(run, pid, claimToken, 0, 1, 3));
    }
    const success = await allPages(run.runId, 1, { status: 'SUCCESS' });
    expect(success.flatMap((p) => p.nodes)).toEqual([
      { partitionId: '0001', status: 'SUCCESS' },
      { partitionId: '0003', status: 'SUCCESS' },
    ]);
    expect(success.map((p) => p.totalCount)).toEqual([2, 2]);
    const running = await allPages(run.runId, 10, { status: 'RUNNING' });
    expect(running.flatMap((p) => p.nodes)).toEqual([{ partitionId: '0004', status: 'RUNNING' }]);
    const failed = await allPages(run.runId, 10, { status: 'FAILED' });
    expect(failed).toEqual([{ nodes: [], pageInfo: { hasNextPage: false, endCursor: null }, totalCount: 0 }]);
  });

  it('searches the partition id for the text as typed, in any case: % and _ are characters, not wildcards', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 12 }, () => 1),
      { nullCount: 1 },
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
    expect((await page(run.runId, { search: '1', first: 1 })).page!.totalCount).toBe(3);
    // an empty search is no filter
    expect((await page(run.runId, { search: '' })).page!.totalCount).toBe(13);
    // status and search together
    const { claimToken } = await claim(api, run.runId, '0010');
    await report(api, chunkInput(run, '0010', claimToken, 0, 1, 1));
    expect(await ids('1', 10)).toEqual(['0001', '0010', '0011']);
    const succeeded = await page(run.runId, { search: '1', status: 'SUCCESS' });
    expect(succeeded.page!.nodes).toEqual([{ partitionId: '0010', status: 'SUCCESS' }]);
    expect(succeeded.page!.totalCount).toBe(1);
    expect((await page(run.runId, { search: '1', status: 'PENDING' })).page!.totalCount).toBe(2);
  });

  it('refuses a page larger than 500, smaller than 1, a search longer than a partition id and a foreign cursor with 422 INVALID_INPUT', async () => {
    const run = await startRun(api, [1, 1]);
    const refused = [
      [{ first: 501 }, 'first'],
      [{ first: 0 }, 'first'],
      [{ search: 'x'.repeat(41) }, 'search'],
      [{ after: 'not a cursor' }, 'after'],
      [{ after: Buffer.from('0000').toString('base64url') }, 'after'],
      [{ after: Buffer.from('2f5e3c1a-0000-4000-8000-000000000000').toString('base64url') }, 'after'],
      [{ after: Buffer.from('partition:').toString('base64url') }, 'after'],
      [{ after: Buffer.from(`partition:${'x'.repeat(41)}`).toString('base64url') }, 'after'],
      [{ after: Buffer.from('partition:a\0b').toString('base64url') }, 'after'],
      [{ after: 'x'.repeat(201) }, 'after'],
    ] as const;
    for (const [args, field] of refused) {
      const { res } = await page(run.runId, args);
      expect(res.status, JSON.stringify(args)).toBe(422);
      expect(res.code).toBe('INVALID_INPUT');
      expect(res.details).toMatchObject({ field });
    }
    const { page: largest } = await page(run.runId, { first: 500 });
    expect(largest!.nodes).toHaveLength(2);
  });

  it('a cursor names a partition, not a position: a cursor past the last partition gives an empty page', async () => {
    const run = await startRun(api, [1, 1, 1]);
    const { page: after } = await page(run.runId, { after: encodePartitionCursor('0000') });
    expect(after!.nodes.map((n) => n.partitionId)).toEqual(['0001', '0002']);
    const { page: past } = await page(run.runId, { after: encodePartitionCursor('zzzz') });
    expect(past).toEqual({ nodes: [], pageInfo: { hasNextPage: false, endCursor: null }, totalCount: 3 });
  });

  it('costs as many partitions as first asks for: a page of 500 for each of 100 runs is refused before it runs', async () => {
    await startRun(api, [1]);
    const fields = 'partitionId status expectedRowCount actualRowCount receivedChunks receivedRows';
    const query = (first: number) => `{ runs(first: 100) { nodes { partitionPage(first: ${first}) { nodes { ${fields} } totalCount } } } }`;
    const res = await api.gql(query(500));
    expect(res.status).toBe(400);
    expect(res.code).toBe('QUERY_TOO_COSTLY');
    const small = await api.gql(query(10));
    expect(small.body.errors).toBeUndefined();
  });

  it('is empty with a total of 0 for a purged run', async () => {
    const run = await startRun(api, [2, 2]);
    const cancel = await api.gql(CANCEL_RUN, { input: { runId: run.runId, reason: 'not needed' } }, { token: 'operator' });
    expect(cancel.body.data!.cancelRun.runStatus).toBe('CANCELLED');
    await api.sql.query(
      `UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '100 days', heartbeat_at = heartbeat_at - interval '100 days',
              started_at = started_at - interval '100 days' WHERE run_id = $1`,
      [run.runId],
    );
    expect((await page(run.runId)).page!.totalCount).toBe(2);
    const summary = await purgeLedger(api.db, { before: new Date(Date.now() - 90 * 86_400_000), batchRows: 1000 });
    expect(summary.purgedRuns.map((r) => r.runId)).toContain(run.runId);
    expect((await page(run.runId)).page).toEqual({ nodes: [], pageInfo: { hasNextPage: false, endCursor: null }, totalCount: 0 });
  });
});

describe('partition cursors', () => {
  it('decode back to the partition id they encode, and nothing else decodes', () => {
    for (const id of ['0000', 'NULL', '0042', 'ü-β', 'x'.repeat(40)]) expect(decodePartitionCursor(encodePartitionCursor(id))).toBe(id);
    expect(decodePartitionCursor(`${encodePartitionCursor('0001')}=`)).toBeNull();
    expect(decodePartitionCursor('')).toBeNull();
  });
});
