import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { PartitionStatus } from '../states.js';
import { partitionsById, type PartitionRecord } from './queries.js';

/** Which of a run's partitions a page holds: one status, and a substring of the partition id. */
export interface PartitionPageFilter {
  status: PartitionStatus | null;
  /** In any case, taken literally: `%` and `_` are characters, not wildcards. */
  search: string | null;
}

export interface PartitionPage {
  partitions: PartitionRecord[];
  hasNextPage: boolean;
}

// The page is ordered the way the table orders a run's partitions: by partition_id, the primary key's
// second column, so a page is one range scan of the key (run_id, partition_id) from the cursor on.
const CURSOR_PREFIX = 'partition:';
const MAX_PARTITION_ID = 40;

/** An opaque cursor naming the page's last partition. */
export function encodePartitionCursor(partitionId: string): string {
  return Buffer.from(`${CURSOR_PREFIX}${partitionId}`).toString('base64url');
}

/** The partition id a cursor names, or null when the text is no cursor this API gave out. */
export function decodePartitionCursor(cursor: string): string | null {
  const text = Buffer.from(cursor, 'base64url').toString();
  // base64url decoding skips what it cannot read, and UTF-8 decoding replaces what it cannot: the text is a
  // cursor only when it encodes back to itself
  if (Buffer.from(text).toString('base64url') !== cursor || !text.startsWith(CURSOR_PREFIX)) return null;
  const partitionId = text.slice(CURSOR_PREFIX.length);
  if (partitionId.length === 0 || partitionId.length > MAX_PARTITION_ID || partitionId.includes('\0')) return null;
  return partitionId;
}

const literalLike = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

function conditions(runId: string, filter: PartitionPageFilter): Prisma.Sql[] {
  return [
    Prisma.sql`run_id = ${runId}::uuid`,
    ...(filter.status ? [Prisma.sql`status = ${filter.status}`] : []),
    ...(filter.search ? [Prisma.sql`partition_id ILIKE ${literalLike(filter.search)}`] : []),
  ];
}

/**
 * One page of a run's partitions in partition order, after the cursor's partition: the page's ids in one
 * statement (a range scan of the primary key), then the partitions themselves. A purged run has none.
 */
export async function partitionPage(
  tx: Tx,
  runId: string,
  filter: PartitionPageFilter,
  first: number,
  after: string | null,
): Promise<PartitionPage> {
  const where = [...conditions(runId, filter), ...(after === null ? [] : [Prisma.sql`partition_id > ${after}`])];
  const ids = await tx.$queryRaw<Array<{ partition_id: string }>>`
    SELECT partition_id FROM nifi_ops.load_partition
     WHERE ${Prisma.join(where, ' AND ')}
     ORDER BY partition_id
     LIMIT ${first + 1}`;
  const page = ids.slice(0, first).map((row) => row.partition_id);
  // a partition deleted between the two statements (the run purged meanwhile) is left out
  const partitions = page.length ? await partitionsById(tx, runId, page) : [];
  return { partitions, hasNextPage: ids.length > first };
}

/** How many of the run's partitions the filter matches, on every page alike. */
export async function countPartitions(tx: Tx, runId: string, filter: PartitionPageFilter): Promise<number> {
  const [row] = await tx.$queryRaw<Array<{ n: number }>>`
    SELECT count(*)::int AS n FROM nifi_ops.load_partition WHERE ${Prisma.join(conditions(runId, filter), ' AND ')}`;
  return row?.n ?? 0;
}
