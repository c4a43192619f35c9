import type { Tx } from '../../db/client.js';
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
const partitionRecord = (p: LoadPartition): PartitionRecord => ({ ...p, status: parsePartitionStatus(p.status) });
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
  status?: string | null;
  activeOnly?: boolean | null;
}

export interface RunPage {
  runs: RunRecord[];
  hasNextPage: boolean;
}

export interface RunCursor {
  startedAt: Date;
  runId: string;
}

export function encodeRunCursor(run: Pick<RunRecord, 'startedAt' | 'runId'>): string {
  return Buffer.from(`${run.startedAt.toISOString()}|${run.runId}`).toString('base64url');
}

export function decodeRunCursor(cursor: string): RunCursor | null {
  const [time, runId] = Buffer.from(cursor, 'base64url').toString().split('|');
  const startedAt = new Date(time ?? '');
  if (!runId || Number.isNaN(startedAt.getTime()) || !/^[0-9a-f-]{36}$/.test(runId)) return null;
  return { startedAt, runId };
}

/** Runs newest first (started_at, then run_id, both descending), as a keyset page. */
export async function listRuns(tx: Tx, filter: RunFilter, first: number, after: RunCursor | null): Promise<RunPage> {
  const runs = await tx.loadRun.findMany({
    where: {
      ...(filter.jobKey ? { jobKey: filter.jobKey } : {}),
      ...(filter.businessKey ? { businessKey: filter.businessKey } : {}),
      ...(filter.status ? { status: filter.status } : {}),
      ...(filter.activeOnly ? { status: { in: [...ACTIVE_RUN_STATUSES] } } : {}),
      // startedAt <= the cursor's, implied by the OR, is what an index range scan can start from: without it
      // a page deep in the history read and dropped every newer run first (18,200 of them at half a year)
      ...(after
        ? {
            startedAt: { lte: after.startedAt },
            OR: [{ startedAt: { lt: after.startedAt } }, { startedAt: after.startedAt, runId: { lt: after.runId } }],
          }
        : {}),
    },
    orderBy: [{ startedAt: 'desc' }, { runId: 'desc' }],
    take: first + 1,
  });
  return { runs: runs.slice(0, first).map(runRecord), hasNextPage: runs.length > first };
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
