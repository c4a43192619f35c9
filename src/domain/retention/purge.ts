// Retention of the ledger (config retention.ledger): a run that ended long enough ago loses its details —
// files, partitions, validations, dispatches and events — and keeps its load_run row as its summary, stamped
// with purged_at. Attempt ordinals, run history and the business-date gate read load_run and the gate_*
// tables only, so they stay right; nothing here touches a gate_* table.
import type { Db, Tx } from '../../db/client.js';
import { inOneTransaction, perform } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { TERMINAL_RUN_STATUSES, type RunStatus } from '../states.js';
import type { PurgeArchive } from './purge-archive.js';

/** The tables purged for a run, children before their parents (the foreign keys are ON DELETE RESTRICT). */
export const PURGED_TABLES = ['load_file', 'load_partition', 'load_validation', 'load_dispatch', 'load_event'] as const;
type PurgedTable = (typeof PURGED_TABLES)[number];
export type RowCounts = Record<PurgedTable, number>;

/** Detail rows one batch (one transaction) deletes at most: well under a second and the statement timeout. */
export const PURGE_BATCH_ROWS = 5000;
/** What a sweeper cycle spends on purging: no batch starts after this (the one in flight finishes). */
export const SWEEPER_PURGE_BUDGET_MS = 250;

const SUCCESS: RunStatus = 'SUCCESS';

export const noRows = (): RowCounts => Object.fromEntries(PURGED_TABLES.map((table) => [table, 0])) as RowCounts;

/**
 * The "purge due" predicate on a load_run row aliased `r`: not purged yet, ended (completed_at, which every
 * terminal transition sets) before `before`, and terminal — a failed or cancelled run as it is, a SUCCESS run
 * only once its staging table and files were cleaned up (recordCleanup). Active runs, PUBLISH_UNKNOWN among
 * them, have no completed_at and never qualify. The partial index ix_load_run_purge serves it, oldest first.
 */
function purgeDue(before: Date): Prisma.Sql {
  return Prisma.sql`(${PURGE_INDEX_PREDICATE} AND r.completed_at < ${before}
      AND r.status = ANY(${TERMINAL_RUN_STATUSES}::text[]))`;
}

/**
 * ix_load_run_purge's predicate (0012), word for word: the planner uses a partial index only for a query that
 * implies its predicate, and a generic plan cannot prove that from a parameter — so 'SUCCESS' is written out.
 * SUCCESS runs nobody cleaned up stay out of the index, so the purge never walks past them.
 */
const PURGE_INDEX_PREDICATE = Prisma.raw(`r.purged_at IS NULL AND (r.cleaned_at IS NOT NULL OR r.status <> '${SUCCESS}')`);

/** The oldest due run no other purger holds, locked (bench/purge.ts shows its plan). */
export function nextDueRun(before: Date): Prisma.Sql {
  return Prisma.sql`
    SELECT r.run_id::text AS "runId", r.job_key AS "jobKey", r.business_key AS "businessKey", r.status,
           r.completed_at AS "completedAt"
      FROM nifi_ops.load_run r
     WHERE ${purgeDue(before)}
     ORDER BY r.completed_at, r.run_id
     LIMIT 1
       FOR NO KEY UPDATE OF r SKIP LOCKED`;
}

interface PurgeRun {
  runId: string;
  jobKey: string;
  businessKey: string;
  status: string;
  completedAt: Date;
}

export interface PurgeBatch {
  run: PurgeRun;
  /** Rows this batch deleted, per table. */
  deleted: RowCounts;
  /** Every detail of the run is gone and this batch stamped purged_at (exactly one batch per run does). */
  purged: boolean;
}

/**
 * One batch in the caller's transaction: the oldest due run nobody else is purging loses at most `batchRows`
 * detail rows, children first; when none are left, its row gets purged_at. Null when no due run is free.
 *
 * Two purgers (sweepers of several workers, the CLI) take the run row with FOR NO KEY UPDATE SKIP LOCKED: a
 * row lock rather than an advisory lock, because it re-checks "still due, not purged" atomically with taking
 * it, is released at commit, needs no key space shared with other advisory locks, and lets the second purger
 * move on to the next run instead of waiting. NO KEY does not conflict with the FOR KEY SHARE that foreign-key
 * checks of child inserts take. Each detail row is deleted by the one batch holding its run, so counts add up
 * exactly; purged_at is set only in the batch that found every table empty, so a purge interrupted between
 * batches (process killed, connection lost) simply goes on with the next batch.
 */
async function purgeNextBatch(
  tx: Tx,
  options: { before: Date; batchRows: number; archive?: PurgeArchive; batch?: number },
): Promise<PurgeBatch | null> {
  const [run] = await tx.$queryRaw<PurgeRun[]>(nextDueRun(options.before));
  if (!run) return null;

  const deleted = noRows();
  const deletedRows = Object.fromEntries(PURGED_TABLES.map((table) => [table, [] as string[]])) as Record<PurgedTable, string[]>;
  let left = options.batchRows;
  let purged = true;
  for (const table of PURGED_TABLES) {
    // ctid: the one row address every table has, so one statement shape serves all five; a Tid scan then
    // deletes exactly the rows the index scan on run_id picked
    const target = Prisma.raw(`nifi_ops.${table}`);
    const picked = Prisma.sql`ctid = ANY(ARRAY(SELECT ctid FROM ${target} WHERE run_id = ${run.runId}::uuid LIMIT ${left}))`;
    if (options.archive) {
      // exported: the rows exactly as this statement deleted them
      const rows = await tx.$queryRaw<Array<{ row: string }>>`DELETE FROM ${target} t WHERE ${picked} RETURNING to_jsonb(t)::text AS row`;
      deletedRows[table] = rows.map((r) => r.row);
      deleted[table] = rows.length;
    } else {
      deleted[table] = await tx.$executeRaw`DELETE FROM ${target} WHERE ${picked}`;
    }
    left -= deleted[table];
    if (left === 0) {
      purged = false;
      break;
    }
  }
  // every table returned fewer rows than it was allowed: nothing of the run is left
  if (purged) {
    await tx.$executeRaw`
      UPDATE nifi_ops.load_run SET purged_at = clock_timestamp() WHERE run_id = ${run.runId}::uuid AND purged_at IS NULL`;
  }
  if (options.archive) {
    // durable before the delete commits: killed after this, the rows are archived whether or not it committed
    await options.archive.exportBatch(tx, { batch: options.batch!, runId: run.runId, deleted: deletedRows });
    await tx.$executeRaw`SELECT nifi_ops.fault_point('purge_export_before_commit')`;
  }
  return { run, deleted, purged };
}

export interface PurgeOptions {
  /** Runs that ended before this instant are purged. */
  before: Date;
  /** Detail rows per batch (one transaction). */
  batchRows: number;
  /** No batch starts once this many milliseconds have passed (the batch in flight finishes). */
  budgetMs?: number;
  /** Called after each committed batch. */
  afterBatch?: (batch: PurgeBatch) => void | Promise<void>;
  /** Where each batch is exported before its delete commits (purge-archive.ts); none: no export. */
  archive?: PurgeArchive;
}

export interface PurgeSummary {
  /** Runs whose purge this call completed, oldest first. */
  purgedRuns: PurgeRun[];
  /** Rows this call deleted, per table (including runs it has not finished yet). */
  deleted: RowCounts;
  batches: number;
  /** No due run was left (false: the budget ran out first, or other purgers held the remaining runs). */
  complete: boolean;
}

const purgeNextBatchOperation = inOneTransaction(purgeNextBatch);

/** Purges batch after batch, each in its own transaction, until no due run is free or the budget is spent. */
export async function purgeLedger(db: Db, options: PurgeOptions): Promise<PurgeSummary> {
  const started = performance.now();
  const summary: PurgeSummary = { purgedRuns: [], deleted: noRows(), batches: 0, complete: false };
  while (options.budgetMs === undefined || performance.now() - started < options.budgetMs) {
    const batch = await perform(db, purgeNextBatchOperation, { ...options, batch: summary.batches + 1 });
    if (!batch) {
      summary.complete = true;
      break;
    }
    summary.batches++;
    for (const table of PURGED_TABLES) summary.deleted[table] += batch.deleted[table];
    if (batch.purged) summary.purgedRuns.push(batch.run);
    await options.afterBatch?.(batch);
  }
  return summary;
}

export interface PurgePreviewRun extends PurgeRun {
  rows: RowCounts;
}

/** What a purge before `before` would delete, run by run, oldest first; changes nothing. */
export async function previewPurge(tx: Tx, before: Date): Promise<PurgePreviewRun[]> {
  const counts = PURGED_TABLES.map(
    (table) =>
      Prisma.sql`(SELECT count(*)::int FROM ${Prisma.raw(`nifi_ops.${table}`)} t WHERE t.run_id = r.run_id) AS ${Prisma.raw(`"${table}"`)}`,
  );
  const rows = await tx.$queryRaw<Array<PurgeRun & RowCounts>>`
    SELECT r.run_id::text AS "runId", r.job_key AS "jobKey", r.business_key AS "businessKey", r.status,
           r.completed_at AS "completedAt", ${Prisma.join(counts)}
      FROM nifi_ops.load_run r
     WHERE ${purgeDue(before)}
     ORDER BY r.completed_at, r.run_id`;
  return rows.map(({ runId, jobKey, businessKey, status, completedAt, ...rows }) => ({
    runId,
    jobKey,
    businessKey,
    status,
    completedAt,
    rows: Object.fromEntries(PURGED_TABLES.map((table) => [table, rows[table]])) as RowCounts,
  }));
}

export const previewPurgeOperation = inOneTransaction(previewPurge);
