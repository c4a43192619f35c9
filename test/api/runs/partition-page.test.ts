// Run.partitionPage as a GraphQL connection: its default page, its opaque cursors, its limits and its cost. What a
// page holds (order, filters, search, totals) is a domain test: test/domain/runs/partition-page.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { startRun } from '../../support/fixtures.js';
import { encodePartitionCursor } from '../../../src/domain/runs/partition-page.js';

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
  it('holds 100 partitions by default, and endCursor is the opaque cursor of the page’s last partition', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 23 }, () => 5),
      { nullCount: 2 },
    );
    const expected = [...Array.from({ length: 23 }, (_, i) => String(i).padStart(4, '0')), 'NULL'];
    const pages = await allPages(run.runId, 5);
    expect(pages.flatMap((p) => p.nodes.map((n) => n.partitionId))).toEqual(expected);
    expect(pages.map((p) => p.totalCount)).toEqual([24, 24, 24, 24, 24]);
    expect(pages[0]!.pageInfo).toEqual({ hasNextPage: true, endCursor: encodePartitionCursor('0004') });
    expect(pages.at(-1)!.pageInfo).toEqual({ hasNextPage: false, endCursor: encodePartitionCursor('NULL') });
    const { page: whole } = await page(run.runId);
    expect(whole!.nodes.map((n) => n.partitionId)).toEqual(expected);
    expect(whole!.pageInfo.hasNextPage).toBe(false);
    const { page: after } = await page(run.runId, { after: encodePartitionCursor('0021') });
    expect(after!.nodes.map((n) => n.partitionId)).toEqual(['0022', 'NULL']);
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
});
