// Bulk actions (README "Bulk actions"): one operator's action over the rows a filter selects — cancel runs, resend
// DEAD dispatches, reissue timed-out partitions. A dry run lists the targets and what would become of each; the
// apply selects them again (the ledger may have moved since the dry run) and changes each row in its own
// transaction through the single-row rule (cancel-run.ts, resend-dispatch.ts, reissue-partition.ts), whose event
// names the bulk action. Nothing here decides a status on its own: the per-row rules do, and their answers are
// the summary — changed, already so, refused with the rule's code.
import { randomUUID } from 'node:crypto';
import type { ActingAs } from '../../auth/principal.js';
import type { Db, Tx } from '../../db/client.js';
import { DomainError, invalidInput } from '../../contract/errors.js';
import { inOneTransaction, perform } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { recordApiEvent } from '../events/events.js';
import { silentPartition } from '../monitor/stalls.js';
import { reissuePartition } from '../partitions/reissue-partition.js';
import {
  ACTIVE_RUN_STATUSES,
  canTransitionRun,
  DISPATCH_WAITING_RUN_STATUS,
  parseDispatchStatus,
  parsePartitionStatus,
  parseRunStatus,
  REISSUE_WAITING_PARTITION_STATUS,
  RESENDABLE_DISPATCH_STATUSES,
  UNDELIVERED_DISPATCH_STATUSES,
  type DispatchStatus,
  type RunStatus,
} from '../states.js';
import { cancelRunOperation } from './cancel-run.js';
import { resendDispatchOperation } from './resend-dispatch.js';

export const BULK_ACTIONS = ['CANCEL_RUNS', 'RESEND_DISPATCHES', 'REISSUE_PARTITIONS'] as const;
type BulkActionKind = (typeof BULK_ACTIONS)[number];

/** What became (or, in a dry run, would become) of one target. */
export const BULK_OUTCOMES = ['CHANGED', 'ALREADY_SO', 'REFUSED'] as const;
type BulkOutcome = (typeof BULK_OUTCOMES)[number];

/**
 * How targets are chosen: the most rows one bulk action may touch (bulk.maxTargets; a filter that selects more is
 * refused with BULK_LIMIT_EXCEEDED, changing nothing) and how long a RUNNING partition's owner may be silent before
 * it counts as timed out (monitor.stallAfter).
 */
export interface BulkSettings {
  maxTargets: number;
  stallAfterMs: number;
}

/** The code a reissue target is refused with when its partition reported again since it was selected. */
const PARTITION_NOT_TIMED_OUT = 'PARTITION_NOT_TIMED_OUT';

/** Every field narrows; null: any. The business dates are those of runs whose business key is a calendar date. */
export interface BulkFilter {
  jobKey: string | null;
  status: RunStatus | null;
  businessDateFrom: string | null;
  businessDateTo: string | null;
  /** The run's error code. */
  errorCode: string | null;
}

export interface BulkActionCommand {
  action: BulkActionKind;
  filter: BulkFilter;
  dryRun: boolean;
  /** Required for an apply (the GraphQL input says so); a dry run records nothing. */
  reason: string | null;
  actor: string;
  /** Who the caller is, for each row's audit trail (null: not known, e.g. a test calling the domain). */
  actingAs?: ActingAs | null;
}

export interface BulkTarget {
  runId: string;
  jobKey: string;
  businessKey: string;
  runStatus: RunStatus;
  dispatchId: string | null;
  dispatchType: string | null;
  partitionId: string | null;
  outcome: BulkOutcome;
  /** For REFUSED: the rule's code (a contract error code, or PARTITION_NOT_TIMED_OUT). */
  code: string | null;
}

export interface BulkActionResult {
  /** The id the apply's events carry; null for a dry run. */
  bulkActionId: string | null;
  action: BulkActionKind;
  dryRun: boolean;
  limit: number;
  targets: BulkTarget[];
  changed: number;
  alreadySo: number;
  refused: number;
  refusals: Array<{ code: string; count: number }>;
}

interface TargetRow {
  runId: string;
  jobKey: string;
  businessKey: string;
  runStatus: string;
  dispatchId: string | null;
  dispatchType: string | null;
  dispatchStatus: string | null;
  partitionId: string | null;
}

/** Over alias `r` (load_run): the filter's conditions. */
function runMatches(filter: BulkFilter): Prisma.Sql {
  const conditions = [Prisma.sql`true`];
  if (filter.jobKey !== null) conditions.push(Prisma.sql`r.job_key = ${filter.jobKey}`);
  if (filter.status !== null) conditions.push(Prisma.sql`r.status = ${filter.status}`);
  if (filter.businessDateFrom !== null)
    conditions.push(Prisma.sql`nifi_ops.calendar_date(r.business_key) >= ${filter.businessDateFrom}::date`);
  if (filter.businessDateTo !== null) conditions.push(Prisma.sql`nifi_ops.calendar_date(r.business_key) <= ${filter.businessDateTo}::date`);
  if (filter.errorCode !== null) conditions.push(Prisma.sql`r.error_code = ${filter.errorCode}`);
  return Prisma.join(conditions, ' AND ');
}

/**
 * The targets of each action among the filter's runs:
 * - CANCEL_RUNS: the active runs (a run already ended is nobody's target);
 * - RESEND_DISPATCHES: the DEAD dispatches of the runs (calls with no run — GATE_READY, ALERT_WEBHOOK — are not selected);
 * - REISSUE_PARTITIONS: the timed-out partitions, i.e. RUNNING partitions of EXTRACTING runs whose owner has not
 *   reported for monitor.stallAfter — the lc_stalled_partitions the console flags, reissued before the sweeper acts at
 *   recovery.stale (a partition whose run timed out is TIMED_OUT and ended with it: it cannot be reissued).
 */
function targetsOf(action: BulkActionKind, filter: BulkFilter, stallAfterMs: number): Prisma.Sql {
  const run = Prisma.sql`r.run_id::text AS "runId", r.job_key AS "jobKey", r.business_key AS "businessKey", r.status AS "runStatus"`;
  switch (action) {
    case 'CANCEL_RUNS':
      return Prisma.sql`
        SELECT ${run}, NULL AS "dispatchId", NULL AS "dispatchType", NULL AS "dispatchStatus", NULL AS "partitionId"
          FROM nifi_ops.load_run r
         WHERE ${runMatches(filter)} AND r.status = ANY(${ACTIVE_RUN_STATUSES}::text[])
         ORDER BY r.started_at, r.run_id`;
    case 'RESEND_DISPATCHES':
      return Prisma.sql`
        SELECT ${run}, d.dispatch_id::text AS "dispatchId", d.dispatch_type AS "dispatchType", d.status AS "dispatchStatus",
               d.partition_id AS "partitionId"
          FROM nifi_ops.load_dispatch d JOIN nifi_ops.load_run r ON r.run_id = d.run_id
         WHERE ${runMatches(filter)} AND d.status = 'DEAD'
         ORDER BY d.created_at, d.dispatch_id`;
    case 'REISSUE_PARTITIONS':
      return Prisma.sql`
        SELECT ${run}, NULL AS "dispatchId", NULL AS "dispatchType", NULL AS "dispatchStatus", p.partition_id AS "partitionId"
          FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r ON r.run_id = p.run_id
         WHERE ${runMatches(filter)} AND r.status = ${DISPATCH_WAITING_RUN_STATUS.REISSUE_PARTITION} AND ${silentPartition(stallAfterMs)}
         ORDER BY r.started_at, r.run_id, p.partition_id`;
  }
}

async function selectTargets(tx: Tx, cmd: BulkActionCommand, { maxTargets, stallAfterMs }: BulkSettings): Promise<TargetRow[]> {
  const rows = await tx.$queryRaw<TargetRow[]>`${targetsOf(cmd.action, cmd.filter, stallAfterMs)} LIMIT ${maxTargets + 1}`;
  if (rows.length > maxTargets) {
    throw new DomainError(
      'BULK_LIMIT_EXCEEDED',
      { limit: maxTargets },
      `the filter selects more than ${maxTargets} targets: narrow it (job, status, business dates, error code)`,
    );
  }
  return rows;
}

/** What the per-row rule would answer now: a run's status decides a cancel; resend and reissue targets were selected changeable. */
function predicted(action: BulkActionKind, row: TargetRow): Pick<BulkTarget, 'outcome' | 'code'> {
  if (action === 'CANCEL_RUNS' && !canTransitionRun(parseRunStatus(row.runStatus), 'CANCELLED')) {
    return { outcome: 'REFUSED', code: 'RUN_STATUS_MISMATCH' };
  }
  return { outcome: 'CHANGED', code: null };
}

/** A dispatch already back in the outbox is already so; one delivered or cancelled is refused. */
function resendOutcome(status: DispatchStatus): Pick<BulkTarget, 'outcome' | 'code'> {
  if (RESENDABLE_DISPATCH_STATUSES.includes(status)) return { outcome: 'CHANGED', code: null };
  if (UNDELIVERED_DISPATCH_STATUSES.includes(status)) return { outcome: 'ALREADY_SO', code: null };
  return { outcome: 'REFUSED', code: 'DISPATCH_STATUS_MISMATCH' };
}

interface ReissueTimedOutCommand {
  runId: string;
  partitionId: string;
  stallAfterMs: number;
  reason: string;
  actor: string;
  bulkActionId: string;
}

/**
 * One reissue target in its own transaction: still timed out under the partition's lock (its owner may have
 * reported since the selection; someone may have reissued it: already so), then reissuePartition. Lock order as reissuePartition's: the partition row first.
 */
const reissueTimedOutOperation = inOneTransaction(async (tx: Tx, cmd: ReissueTimedOutCommand, afterCommit) => {
  const [partition] = await tx.$queryRaw<Array<{ status: string; silent: boolean }>>`
    SELECT p.status, ${silentPartition(cmd.stallAfterMs)} AS silent FROM nifi_ops.load_partition p
     WHERE p.run_id = ${cmd.runId}::uuid AND p.partition_id = ${cmd.partitionId} FOR UPDATE`;
  const status = parsePartitionStatus(partition!.status);
  if (status === REISSUE_WAITING_PARTITION_STATUS) return { outcome: 'ALREADY_SO' as const, code: null };
  if (status !== 'RUNNING') return { outcome: 'REFUSED' as const, code: 'PARTITION_STATUS_MISMATCH' };
  if (!partition!.silent) return { outcome: 'REFUSED' as const, code: PARTITION_NOT_TIMED_OUT };
  await reissuePartition(
    tx,
    {
      runId: cmd.runId,
      partitionId: cmd.partitionId,
      errorCode: 'OPERATOR_BULK_REISSUE',
      reason: cmd.reason,
      actor: cmd.actor,
      bulkActionId: cmd.bulkActionId,
    },
    afterCommit,
  );
  return { outcome: 'CHANGED' as const, code: null };
});

/** The per-row rule's answer as an outcome: its soft refusal (changed: false) is "already so", its error a refusal. */
async function applyOne(db: Db, cmd: BulkActionCommand & { reason: string }, row: TargetRow, bulkActionId: string, stallAfterMs: number) {
  try {
    switch (cmd.action) {
      case 'CANCEL_RUNS': {
        const result = await perform(
          db,
          cancelRunOperation,
          { runId: row.runId, reason: cmd.reason, actor: cmd.actor, bulkActionId },
          cmd.actingAs,
        );
        return { outcome: result.changed ? 'CHANGED' : 'ALREADY_SO', code: null } as const;
      }
      case 'RESEND_DISPATCHES':
        await perform(
          db,
          resendDispatchOperation,
          {
            runId: row.runId,
            dispatchId: row.dispatchId!,
            reason: cmd.reason,
            actor: cmd.actor,
            bulkActionId,
          },
          cmd.actingAs,
        );
        return { outcome: 'CHANGED', code: null } as const;
      case 'REISSUE_PARTITIONS':
        return await perform(
          db,
          reissueTimedOutOperation,
          {
            runId: row.runId,
            partitionId: row.partitionId!,
            stallAfterMs,
            reason: cmd.reason,
            actor: cmd.actor,
            bulkActionId,
          },
          cmd.actingAs,
        );
    }
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    // a dispatch resent by someone else since the selection is back in the outbox: already so
    if (error.code === 'DISPATCH_STATUS_MISMATCH') return resendOutcome(parseDispatchStatus(String(error.details?.status)));
    return { outcome: 'REFUSED', code: error.code } as const;
  }
}

function summarise(result: Omit<BulkActionResult, 'changed' | 'alreadySo' | 'refused' | 'refusals'>): BulkActionResult {
  const count = (outcome: BulkOutcome) => result.targets.filter((t) => t.outcome === outcome).length;
  const codes = new Map<string, number>();
  for (const t of result.targets) if (t.outcome === 'REFUSED') codes.set(t.code!, (codes.get(t.code!) ?? 0) + 1);
  return {
    ...result,
    changed: count('CHANGED'),
    alreadySo: count('ALREADY_SO'),
    refused: count('REFUSED'),
    refusals: [...codes].sort(([a], [b]) => a.localeCompare(b)).map(([code, n]) => ({ code, count: n })),
  };
}

/**
 * A bulk action: the dry run answers the targets with their predicted outcomes and changes nothing; the apply
 * changes each target in its own transaction and records one BULK_ACTION_APPLIED event with the summary.
 */
export async function bulkAction(db: Db, cmd: BulkActionCommand, settings: BulkSettings): Promise<BulkActionResult> {
  const rows = await selectTargets(db.prisma, cmd, settings);
  const toTarget = (row: TargetRow, outcome: Pick<BulkTarget, 'outcome' | 'code'>): BulkTarget => ({
    runId: row.runId,
    jobKey: row.jobKey,
    businessKey: row.businessKey,
    runStatus: parseRunStatus(row.runStatus),
    dispatchId: row.dispatchId,
    dispatchType: row.dispatchType,
    partitionId: row.partitionId,
    ...outcome,
  });
  const base = { action: cmd.action, dryRun: cmd.dryRun, limit: settings.maxTargets };
  if (cmd.dryRun) return summarise({ ...base, bulkActionId: null, targets: rows.map((row) => toTarget(row, predicted(cmd.action, row))) });

  const { reason } = cmd;
  if (reason === null) throw invalidInput('reason', 'is required unless dryRun');
  const bulkActionId = randomUUID();
  const targets: BulkTarget[] = [];
  for (const row of rows) targets.push(toTarget(row, await applyOne(db, { ...cmd, reason }, row, bulkActionId, settings.stallAfterMs)));
  const result = summarise({ ...base, bulkActionId, targets });
  await perform(db, recordBulkActionOperation, { cmd, result }, cmd.actingAs);
  return result;
}

const recordBulkActionOperation = inOneTransaction(
  async (tx: Tx, { cmd, result }: { cmd: BulkActionCommand; result: BulkActionResult }) => {
    await recordApiEvent(tx, {
      level: 'WARN',
      name: 'BULK_ACTION_APPLIED',
      runId: null,
      actor: cmd.actor,
      message: cmd.reason,
      details: {
        bulkActionId: result.bulkActionId,
        action: cmd.action,
        filter: cmd.filter,
        reason: cmd.reason,
        targets: result.targets.length,
        changed: result.changed,
        alreadySo: result.alreadySo,
        refused: result.refused,
        refusals: result.refusals,
      },
    });
  },
);
