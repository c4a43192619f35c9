import type { Tx } from '../../db/client.js';
import { selectList } from '../../db/select-list.js';
import { idDigits } from './run-id-prefix.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DomainError } from '../../contract/errors.js';
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

/** A row of nifi_ops.load_run as read here; the record carries its status as the union of states.ts. */
interface RunRow {
  runId: string;
  jobKey: string;
  businessKey: string;
  status: string;
  snapshotScn: Prisma.Decimal | null;
  sourceCount: bigint | null;
  sourceNullSplitCount: bigint | null;
  sourceMinSplit: Prisma.Decimal | null;
  sourceMaxSplit: Prisma.Decimal | null;
  expectedPartitionCount: number | null;
  successPartitionCount: number;
  failedPartitionCount: number;
  extractedCount: bigint;
  stagingCount: bigint | null;
  targetCount: bigint | null;
  hdfsRunPath: string | null;
  stageTableName: string | null;
  publishToken: string | null;
  publishQueryId: string | null;
  retryOfRunId: string | null;
  versionNo: number;
  parameters: Prisma.JsonValue;
  startedAt: Date;
  heartbeatAt: Date;
  extractCompletedAt: Date | null;
  publishStartedAt: Date | null;
  publishedAt: Date | null;
  completedAt: Date | null;
  errorStage: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  cleanedAt: Date | null;
  purgedAt: Date | null;
  idempotencyKey: string | null;
  requestDigest: string | null;
  createdBy: string | null;
  /** The backfill that started the run, if one did. */
  backfillId: string | null;
  /** key → value; null for runs from before tags existed. */
  tags: Prisma.JsonValue | null;
  flowRegistry: string | null;
  flowBucket: string | null;
  flowId: string | null;
  flowVersion: string | null;
}

const RUN_COLUMNS = selectList<RunRow>({
  runId: true,
  jobKey: true,
  businessKey: true,
  status: true,
  snapshotScn: true,
  sourceCount: true,
  sourceNullSplitCount: true,
  sourceMinSplit: true,
  sourceMaxSplit: true,
  expectedPartitionCount: true,
  successPartitionCount: true,
  failedPartitionCount: true,
  extractedCount: true,
  stagingCount: true,
  targetCount: true,
  hdfsRunPath: true,
  stageTableName: true,
  publishToken: true,
  publishQueryId: true,
  retryOfRunId: true,
  versionNo: true,
  parameters: true,
  startedAt: true,
  heartbeatAt: true,
  extractCompletedAt: true,
  publishStartedAt: true,
  publishedAt: true,
  completedAt: true,
  errorStage: true,
  errorCode: true,
  errorMessage: true,
  cleanedAt: true,
  purgedAt: true,
  idempotencyKey: true,
  requestDigest: true,
  createdBy: true,
  backfillId: true,
  tags: true,
  flowRegistry: true,
  flowBucket: true,
  flowId: true,
  flowVersion: true,
});

/** A row of nifi_ops.load_partition as read here. */
interface PartitionRow {
  runId: string;
  partitionId: string;
  lowerBound: Prisma.Decimal | null;
  upperBound: Prisma.Decimal | null;
  upperInclusive: boolean;
  isNullPartition: boolean;
  status: string;
  expectedRowCount: bigint;
  actualRowCount: bigint | null;
  fragmentCount: number | null;
  fileCount: number | null;
  byteCount: bigint | null;
  attemptCount: number;
  claimToken: string | null;
  workerNode: string | null;
  claimedBy: string | null;
  startedAt: Date | null;
  heartbeatAt: Date | null;
  completedAt: Date | null;
  errorCode: string | null;
  errorMessage: string | null;
  receivedChunks: number;
  receivedRows: bigint;
  receivedBytes: bigint;
  reportedChunkCount: number | null;
  chunkCountMismatches: number;
  createdAt: Date;
  /** A resumed run's partition carried over SUCCESS: the run whose extraction wrote its files. */
  carriedFromRunId: string | null;
}

const PARTITION_COLUMNS = selectList<PartitionRow>({
  runId: true,
  partitionId: true,
  lowerBound: true,
  upperBound: true,
  upperInclusive: true,
  isNullPartition: true,
  status: true,
  expectedRowCount: true,
  actualRowCount: true,
  fragmentCount: true,
  fileCount: true,
  byteCount: true,
  attemptCount: true,
  claimToken: true,
  workerNode: true,
  claimedBy: true,
  startedAt: true,
  heartbeatAt: true,
  completedAt: true,
  errorCode: true,
  errorMessage: true,
  receivedChunks: true,
  receivedRows: true,
  receivedBytes: true,
  reportedChunkCount: true,
  chunkCountMismatches: true,
  createdAt: true,
  carriedFromRunId: true,
});

/** A row of nifi_ops.load_dispatch as read here. */
interface DispatchRow {
  dispatchId: string;
  runId: string | null;
  dispatchType: string;
  partitionId: string | null;
  status: string;
  attemptCount: number;
  nextAttemptAt: Date;
  lastHttpStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  sentAt: Date | null;
  ackedAt: Date | null;
  deadAt: Date | null;
  cancelledAt: Date | null;
  consumer: string | null;
  businessDate: Date | null;
  readinessVersion: number | null;
  receiver: string | null;
  alertDedupKey: string | null;
}

const DISPATCH_COLUMNS = selectList<DispatchRow>({
  dispatchId: true,
  runId: true,
  dispatchType: true,
  partitionId: true,
  status: true,
  attemptCount: true,
  nextAttemptAt: true,
  lastHttpStatus: true,
  lastError: true,
  createdAt: true,
  sentAt: true,
  ackedAt: true,
  deadAt: true,
  cancelledAt: true,
  consumer: true,
  businessDate: true,
  readinessVersion: true,
  receiver: true,
  alertDedupKey: true,
});

/** A row of nifi_ops.load_validation: one measured metric. */
export interface MetricRecord {
  validationId: bigint;
  runId: string;
  stage: string;
  metricName: string;
  expectedValue: string | null;
  actualValue: string | null;
  tolerance: string | null;
  result: string;
  queryVersion: string;
  details: Prisma.JsonValue;
  measuredAt: Date;
}

const METRIC_COLUMNS = selectList<MetricRecord>({
  validationId: true,
  runId: true,
  stage: true,
  metricName: true,
  expectedValue: true,
  actualValue: true,
  tolerance: true,
  result: true,
  queryVersion: true,
  details: true,
  measuredAt: true,
});

export type RunRecord = Omit<RunRow, 'status'> & { status: RunStatus };
export type PartitionRecord = Omit<PartitionRow, 'status'> & { status: PartitionStatus };
/** A run's dispatch: GATE_READY calls, which have no run, are the gate's (src/domain/gate/gate-dispatches.ts). */
export type DispatchRecord = Omit<DispatchRow, 'status' | 'dispatchType' | 'runId'> & {
  runId: string;
  status: DispatchStatus;
  dispatchType: DispatchType;
};

const runRecord = (run: RunRow): RunRecord => ({ ...run, status: parseRunStatus(run.status) });
const partitionRecord = (p: PartitionRow): PartitionRecord => ({ ...p, status: parsePartitionStatus(p.status) });
const dispatchRecord = (d: DispatchRow & { runId: string }): DispatchRecord => ({
  ...d,
  status: parseDispatchStatus(d.status),
  dispatchType: parseDispatchType(d.dispatchType),
});

/** Runs by id, in no particular order. */
export function runsById(tx: Tx, runIds: readonly string[]): Promise<RunRecord[]> {
  return tx.$queryRaw<RunRow[]>`
    SELECT ${RUN_COLUMNS} FROM nifi_ops.load_run WHERE run_id = ANY(${runIds}::uuid[])`.then((rows) => rows.map(runRecord));
}

/** A resumed run's partitions carried over SUCCESS from the run whose extraction wrote their files. */
export interface CarriedPartitions {
  fromRunId: string;
  partitionIds: string[];
}

/** A resumed run's carried partitions, by the run they come from (the oldest first), in partition order. */
export async function carriedPartitions(tx: Tx, runId: string): Promise<CarriedPartitions[]> {
  return tx.$queryRaw<CarriedPartitions[]>`
    SELECT p.carried_from_run_id::text AS "fromRunId", array_agg(p.partition_id ORDER BY p.partition_id) AS "partitionIds"
      FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r ON r.run_id = p.carried_from_run_id
     WHERE p.run_id = ${runId}::uuid AND p.carried_from_run_id IS NOT NULL
     GROUP BY p.carried_from_run_id, r.started_at
     ORDER BY r.started_at`;
}

/** The newest later run of the run's job and business key (started after it, or resuming it), or null. */
export async function newerAttempt(tx: Tx, runId: string): Promise<{ runId: string; status: RunStatus } | null> {
  const [row] = await tx.$queryRaw<Array<{ runId: string; status: string }>>`
    SELECT later.run_id::text AS "runId", later.status
      FROM nifi_ops.load_run later, nifi_ops.load_run r
     WHERE r.run_id = ${runId}::uuid AND later.job_key = r.job_key AND later.business_key = r.business_key
       AND later.run_id <> r.run_id
       AND ((later.started_at, later.run_id) > (r.started_at, r.run_id) OR later.retry_of_run_id = r.run_id)
     ORDER BY later.started_at DESC, later.run_id DESC LIMIT 1`;
  return row ? { runId: row.runId, status: parseRunStatus(row.status) } : null;
}

/** The attempt that resumed a run (resumeRun), or null. */
export async function resumedAs(tx: Tx, runId: string): Promise<string | null> {
  const [row] = await tx.$queryRaw<Array<{ run_id: string }>>`
    SELECT run_id::text FROM nifi_ops.load_run WHERE retry_of_run_id = ${runId}::uuid ORDER BY started_at LIMIT 1`;
  return row?.run_id ?? null;
}

/** Partitions of a run, by id, in partition order (src/realtime/run-progress.ts: the ones that changed). */
export async function partitionsById(tx: Tx, runId: string, partitionIds: readonly string[]): Promise<PartitionRecord[]> {
  const rows = await tx.$queryRaw<PartitionRow[]>`
    SELECT ${PARTITION_COLUMNS} FROM nifi_ops.load_partition
     WHERE run_id = ${runId}::uuid AND partition_id = ANY(${partitionIds}::text[])
     ORDER BY partition_id`;
  return rows.map(partitionRecord);
}

export async function getRun(tx: Tx, runId: string): Promise<RunRecord> {
  const [run] = await tx.$queryRaw<RunRow[]>`SELECT ${RUN_COLUMNS} FROM nifi_ops.load_run WHERE run_id = ${runId}::uuid`;
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
  /** The run ids that begin with these hexadecimal digits (hyphens ignored): the short ids the console shows. */
  runIdPrefix?: string | null;
  /** Runs carrying every one of these tags (key → value). */
  tags?: Record<string, string> | null;
}

/** The run ids that begin with `prefix`'s hexadecimal digits, as a range between the first and the last: the primary key scans it. */
function runIdWithin(prefix: string): Prisma.Sql {
  const digits = idDigits(prefix);
  const uuid = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return Prisma.sql`run_id BETWEEN ${uuid(digits.padEnd(32, '0'))}::uuid AND ${uuid(digits.padEnd(32, 'f'))}::uuid`;
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
export const literalLike = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;

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
    ...(filter.runIdPrefix ? [runIdWithin(filter.runIdPrefix)] : []),
    // containment, which the GIN index ix_load_run_tags answers
    ...(filter.tags && Object.keys(filter.tags).length ? [Prisma.sql`tags @> ${JSON.stringify(filter.tags)}::jsonb`] : []),
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
  const runs = page.length ? await runsById(tx, page) : [];
  const byId = new Map(runs.map((run) => [run.runId, run]));
  return { runs: page.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : [])), hasNextPage: ids.length > first };
}

/**
 * The runs, of these jobs (null: of every job), that are active or moved (heartbeat, completion, cleanup) since
 * `since`, newest first: what a subscriber may have missed while the notifications were lost.
 */
export async function runsMovedSince(tx: Tx, jobKeys: string[] | null, since: Date, limit: number): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ run_id: string }>>`
    SELECT run_id FROM nifi_ops.load_run
     WHERE ${jobKeys ? Prisma.sql`job_key = ANY(${jobKeys}::text[])` : Prisma.sql`true`}
       AND (status = ANY(${ACTIVE_RUN_STATUSES}::text[])
            OR heartbeat_at >= ${since} OR completed_at >= ${since} OR cleaned_at >= ${since})
     ORDER BY started_at DESC, run_id DESC
     LIMIT ${limit}`;
  return rows.map((row) => row.run_id);
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
    const page = await tx.$queryRaw<PartitionRow[]>`
      SELECT ${PARTITION_COLUMNS} FROM nifi_ops.load_partition
       WHERE run_id = ${runId}::uuid
         ${status ? Prisma.sql`AND status = ${status}` : Prisma.empty}
         ${last !== undefined ? Prisma.sql`AND partition_id > ${last}` : Prisma.empty}
       ORDER BY partition_id
       LIMIT ${PARTITION_PAGE}`;
    partitions.push(...page.map(partitionRecord));
    if (page.length < PARTITION_PAGE) return partitions;
  }
}

/** One run by equality, which the subscriptions' shared reader (src/realtime/shared-reader.ts) can share. */
const ofRuns = (runIds: readonly string[]): Prisma.Sql =>
  runIds.length === 1 ? Prisma.sql`run_id = ${runIds[0]}::uuid` : Prisma.sql`run_id = ANY(${runIds}::uuid[])`;

/**
 * Each run's partitions by status (statuses present only, in name order), in the order of runIds: one
 * statement for a page of runs. One run is filtered by equality, which the subscriptions' shared reader
 * (src/realtime/shared-reader.ts) can give all of a run's subscribers at once.
 */
export async function partitionCounts(
  tx: Tx,
  runIds: readonly string[],
): Promise<Array<Array<{ status: PartitionStatus; count: number }>>> {
  const groups = await tx.$queryRaw<Array<{ runId: string; status: string; count: number }>>`
    SELECT run_id AS "runId", status, count(*)::int AS count FROM nifi_ops.load_partition
     WHERE ${ofRuns(runIds)}
     GROUP BY run_id, status
     ORDER BY run_id, status`;
  const byRun = new Map<string, Array<{ status: PartitionStatus; count: number }>>(runIds.map((id) => [id, []]));
  for (const g of groups) byRun.get(g.runId)?.push({ status: parsePartitionStatus(g.status), count: g.count });
  return runIds.map((id) => byRun.get(id)!);
}

/** The rows each run's partitions have received in chunks so far, finished or not (0 without partitions). */
export async function receivedRows(tx: Tx, runIds: readonly string[]): Promise<bigint[]> {
  const sums = await tx.$queryRaw<Array<{ runId: string; receivedRows: bigint }>>`
    SELECT run_id AS "runId", sum(received_rows)::bigint AS "receivedRows" FROM nifi_ops.load_partition
     WHERE ${ofRuns(runIds)}
     GROUP BY run_id`;
  const byRun = new Map(sums.map((s) => [s.runId, s.receivedRows]));
  return runIds.map((id) => byRun.get(id) ?? 0n);
}

export async function listDispatches(tx: Tx, runId: string): Promise<DispatchRecord[]> {
  const dispatches = await tx.$queryRaw<DispatchRow[]>`
    SELECT ${DISPATCH_COLUMNS} FROM nifi_ops.load_dispatch WHERE run_id = ${runId}::uuid ORDER BY created_at, dispatch_id`;
  return dispatches.map((d) => dispatchRecord({ ...d, runId }));
}

const STAGE_ORDER = ['SOURCE', 'STAGING', 'TARGET'];

/** Metrics ordered SOURCE, STAGING, TARGET, others, then by name (ref §3.20). */
export async function listMetrics(tx: Tx, runId: string): Promise<MetricRecord[]> {
  const rows = await tx.$queryRaw<MetricRecord[]>`
    SELECT ${METRIC_COLUMNS} FROM nifi_ops.load_validation WHERE run_id = ${runId}::uuid ORDER BY metric_name, query_version`;
  const rank = (stage: string) => (STAGE_ORDER.includes(stage) ? STAGE_ORDER.indexOf(stage) : STAGE_ORDER.length);
  return rows.sort((a, b) => rank(a.stage) - rank(b.stage));
}

/** A run's RUNNING partitions, the longest silent (oldest heartbeat) first. */
export async function quietestRunningPartitions(tx: Tx, runId: string, limit: number): Promise<PartitionRecord[]> {
  const rows = await tx.$queryRaw<PartitionRow[]>`
    SELECT ${PARTITION_COLUMNS} FROM nifi_ops.load_partition
     WHERE run_id = ${runId}::uuid AND status = 'RUNNING'
     ORDER BY heartbeat_at, partition_id
     LIMIT ${limit}::integer`;
  return rows.map(partitionRecord);
}
