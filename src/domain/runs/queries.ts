import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { LoadDispatch, LoadPartition, LoadRun, LoadValidation } from '../../generated/prisma/client.js';
import { DomainError } from '../errors.js';
import {
  ACTIVE_RUN_STATUSES,
  parseDispatchStatus,
  parseDispatchType,
  parsePartitionStatus,
  parseRunStatus,
  type DispatchStatus,
  type DispatchType,
  type PartitionStatus,
  type RunStatus,
} from '../states.js';

// Prisma types the status columns as strings; the records carry them as the unions of states.ts.
export type RunRecord = Omit<LoadRun, 'status'> & { status: RunStatus };
export type PartitionRecord = Omit<LoadPartition, 'status'> & { status: PartitionStatus };
/** A run's dispatch: GATE_READY calls, which have no run, are the gate's (src/domain/gate/gate-dispatches.ts). */
export type DispatchRecord = Omit<LoadDispatch, 'status' | 'dispatchType' | 'runId'> & {
  runId: string;
  status: DispatchStatus;
  dispatchType: DispatchType;
};
export type MetricRecord = LoadValidation;

const runRecord = (run: LoadRun): RunRecord => ({ ...run, status: parseRunStatus(run.status) });
export const partitionRecord = (p: LoadPartition): PartitionRecord => ({ ...p, status: parsePartitionStatus(p.status) });
const dispatchRecord = (d: LoadDispatch & { runId: string }): DispatchRecord => ({
  ...d,
  status: parseDispatchStatus(d.status),
  dispatchType: parseDispatchType(d.dispatchType),
});

export async function getRun(tx: Tx, runId: string): Promise<RunRecord> {
  const run = await tx.loadRun.findUnique({ where: { runId } });
  if (!run) throw new DomainError('RUN_NOT_FOUND', { runId });
  return runRecord(run);
}

export interface RunFilter {
  jobKey?: string | null;
  businessKey?: string | null;
  /** Case-insensitive substrings (the console's search). */
  jobKeyContains?: string | null;
  businessKeyContains?: string | null;
  status?: string | null;
  activeOnly?: boolean | null;
  /** Started at or after; started before. */
  startedFrom?: Date | null;
  startedBefore?: Date | null;
}

export const RUN_ORDERS = ['NEWEST_FIRST', 'OLDEST_FIRST'] as const;
type RunOrder = (typeof RUN_ORDERS)[number];

export interface RunPage {
  runs: RunRecord[];
  hasNextPage: boolean;
}

/**
 * A page's cursor names its last run; the next page starts after that run's (started_at, run_id), read in
 * the database at full precision. (A cursor holding started_at as a JavaScript Date lost its microseconds:
 * runs started within the same millisecond were skipped or repeated.)
 */
export interface RunCursor {
  runId: string;
}

export function encodeRunCursor(run: Pick<RunRecord, 'runId'>): string {
  return Buffer.from(run.runId).toString('base64url');
}

export function decodeRunCursor(cursor: string): RunCursor | null {
  // cursors of earlier releases were `<started_at>|<run_id>`: the run is all that counts
  const runId = Buffer.from(cursor, 'base64url').toString().split('|').at(-1) ?? '';
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(runId) ? { runId } : null;
}

/** Prisma's `contains` and our ILIKE leave LIKE's wildcards to the text: a search is for the characters typed. */
const literalLike = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

/**
 * Runs by start (started_at, then run_id), newest first unless asked otherwise, as a keyset page: the page's
 * ids in one statement (row comparison against the cursor's run, which an index range scan starts from), then
 * the runs themselves.
 */
export async function listRuns(
  tx: Tx,
  filter: RunFilter,
  first: number,
  after: RunCursor | null,
  order: RunOrder = 'NEWEST_FIRST',
): Promise<RunPage> {
  const newestFirst = order === 'NEWEST_FIRST';
  const conditions: Prisma.Sql[] = [
    ...(filter.jobKey ? [Prisma.sql`job_key = ${filter.jobKey}`] : []),
    ...(filter.businessKey ? [Prisma.sql`business_key = ${filter.businessKey}`] : []),
    ...(filter.jobKeyContains ? [Prisma.sql`job_key ILIKE ${literalLike(filter.jobKeyContains)}`] : []),
    ...(filter.businessKeyContains ? [Prisma.sql`business_key ILIKE ${literalLike(filter.businessKeyContains)}`] : []),
    ...(filter.status ? [Prisma.sql`status = ${filter.status}`] : []),
    ...(filter.activeOnly ? [Prisma.sql`status = ANY(${ACTIVE_RUN_STATUSES}::text[])`] : []),
    ...(filter.startedFrom ? [Prisma.sql`started_at >= ${filter.startedFrom}`] : []),
    ...(filter.startedBefore ? [Prisma.sql`started_at < ${filter.startedBefore}`] : []),
    ...(after
      ? [
          newestFirst
            ? Prisma.sql`(started_at, run_id) < (SELECT started_at, run_id FROM nifi_ops.load_run WHERE run_id = ${after.runId}::uuid)`
            : Prisma.sql`(started_at, run_id) > (SELECT started_at, run_id FROM nifi_ops.load_run WHERE run_id = ${after.runId}::uuid)`,
        ]
      : []),
  ];
  const ids = await tx.$queryRaw<Array<{ run_id: string }>>`
    SELECT run_id FROM nifi_ops.load_run
     WHERE ${conditions.length ? Prisma.join(conditions, ' AND ') : Prisma.sql`true`}
     ORDER BY ${newestFirst ? Prisma.sql`started_at DESC, run_id DESC` : Prisma.sql`started_at, run_id`}
     LIMIT ${first + 1}`;
  const page = ids.slice(0, first).map((row) => row.run_id);
  const runs = await tx.loadRun.findMany({ where: { runId: { in: page } } });
  const byId = new Map(runs.map((run) => [run.runId, run]));
  return { runs: page.flatMap((id) => (byId.has(id) ? [runRecord(byId.get(id)!)] : [])), hasNextPage: ids.length > first };
}

/** Rows per read of a run's partitions. */
const PARTITION_PAGE = 250;

/**
 * A run's partitions in partition order, read in keyset pages: Prisma maps a result in one synchronous
 * pass, and 10,000 rows at once held the event loop for ~60 ms (pages of 1,000: four console pages of the
 * largest run at once kept /healthz waiting 160–200 ms at p99; of 250: 70–98 ms, for ~20% more CPU). Each
 * page is its own statement, so a partition changed between pages is seen in whichever state its page read
 * — never twice, never missed.
 */
export async function listPartitions(tx: Tx, runId: string, status: string | null): Promise<PartitionRecord[]> {
  const partitions: PartitionRecord[] = [];
  for (;;) {
    const last = partitions.at(-1)?.partitionId;
    const page = await tx.loadPartition.findMany({
      where: { runId, ...(status ? { status } : {}), ...(last !== undefined ? { partitionId: { gt: last } } : {}) },
      orderBy: { partitionId: 'asc' },
      take: PARTITION_PAGE,
    });
    partitions.push(...page.map(partitionRecord));
    if (page.length < PARTITION_PAGE) return partitions;
  }
}

/**
 * Each run's partitions by status (statuses present only, in name order), in the order of runIds: one
 * statement for a page of runs. One run is filtered by equality, which the subscriptions' shared reader
 * (src/realtime/shared-reader.ts) can give all of a run's subscribers at once.
 */
export async function partitionCounts(
  tx: Tx,
  runIds: readonly string[],
): Promise<Array<Array<{ status: PartitionStatus; count: number }>>> {
  const groups = await tx.loadPartition.groupBy({
    by: ['runId', 'status'],
    where: { runId: runIds.length === 1 ? runIds[0]! : { in: [...runIds] } },
    _count: { _all: true },
    orderBy: [{ runId: 'asc' }, { status: 'asc' }],
  });
  const byRun = new Map<string, Array<{ status: PartitionStatus; count: number }>>(runIds.map((id) => [id, []]));
  for (const g of groups) byRun.get(g.runId)?.push({ status: parsePartitionStatus(g.status), count: g._count._all });
  return runIds.map((id) => byRun.get(id)!);
}

/** The rows each run's partitions have received in chunks so far, finished or not (0 without partitions). */
export async function receivedRows(tx: Tx, runIds: readonly string[]): Promise<bigint[]> {
  const sums = await tx.loadPartition.groupBy({
    by: ['runId'],
    where: { runId: runIds.length === 1 ? runIds[0]! : { in: [...runIds] } },
    _sum: { receivedRows: true },
  });
  const byRun = new Map(sums.map((s) => [s.runId, s._sum.receivedRows ?? 0n]));
  return runIds.map((id) => byRun.get(id) ?? 0n);
}

export async function listDispatches(tx: Tx, runId: string): Promise<DispatchRecord[]> {
  const dispatches = await tx.loadDispatch.findMany({ where: { runId }, orderBy: [{ createdAt: 'asc' }, { dispatchId: 'asc' }] });
  return dispatches.map((d) => dispatchRecord({ ...d, runId }));
}

const STAGE_ORDER = ['SOURCE', 'STAGING', 'TARGET'];

/** Metrics ordered SOURCE, STAGING, TARGET, others, then by name (ref §3.20). */
export async function listMetrics(tx: Tx, runId: string): Promise<MetricRecord[]> {
  const rows = await tx.loadValidation.findMany({ where: { runId }, orderBy: [{ metricName: 'asc' }, { queryVersion: 'asc' }] });
  const rank = (stage: string) => (STAGE_ORDER.includes(stage) ? STAGE_ORDER.indexOf(stage) : STAGE_ORDER.length);
  return rows.sort((a, b) => rank(a.stage) - rank(b.stage));
}
