// An operator's hand on a backfill: pause (no new date starts; the loads under way finish), resume, cancel (the dates
// not started never will be; their undelivered START_LOAD calls are cancelled; loads under way finish) and, for a
// backfill started with pushReadiness false, the release of its held readiness decisions. Replays answer
// changed: false; a move the backfill's state machine does not have is BACKFILL_STATUS_MISMATCH.
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { inOneTransaction } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { recordNifiEvent } from '../events/events.js';
import { BACKFILL_TRANSITIONS, parseBackfillStatus, UNDELIVERED_DISPATCH_STATUSES, type BackfillStatus } from '../states.js';
import { transitionBackfill, transitionBackfillDate, transitionDispatch } from '../transitions.js';
import { advanceBackfill } from './advance-backfill.js';
import { getBackfill, type BackfillRecord } from './queries.js';

export interface BackfillControlCommand {
  backfillId: string;
  reason: string;
  actor: string;
}

export interface BackfillControlResult {
  backfill: BackfillRecord;
  changed: boolean;
}

interface Locked {
  job_key: string;
  status: BackfillStatus;
  push_readiness: boolean;
  readiness_released_at: Date | null;
}

async function lockBackfill(tx: Tx, backfillId: string): Promise<Locked> {
  const [row] = await tx.$queryRaw<Array<Omit<Locked, 'status'> & { status: string }>>`
    SELECT job_key, status, push_readiness, readiness_released_at FROM nifi_ops.load_backfill
     WHERE backfill_id = ${backfillId}::uuid FOR UPDATE`;
  if (!row) throw new DomainError('BACKFILL_NOT_FOUND', { backfillId });
  return { ...row, status: parseBackfillStatus(row.status) };
}

function refuse(backfillId: string, status: BackfillStatus, wanted: string): never {
  throw new DomainError('BACKFILL_STATUS_MISMATCH', { backfillId, backfillStatus: status, wanted });
}

async function recordControl(tx: Tx, name: string, locked: Locked, cmd: BackfillControlCommand, details: Record<string, unknown> = {}) {
  await recordNifiEvent(tx, {
    level: 'WARN',
    name,
    runId: null,
    jobKey: locked.job_key,
    processGroup: 'LOAD_CONTROL_API',
    message: cmd.reason,
    details: { backfillId: cmd.backfillId, from: locked.status, reason: cmd.reason, ...details },
    actor: cmd.actor,
  });
}

const result = async (tx: Tx, backfillId: string, changed: boolean): Promise<BackfillControlResult> => ({
  backfill: (await getBackfill(tx, backfillId))!,
  changed,
});

/** Moves the backfill from its status to `to`, or answers changed: false when it is there already. */
async function move(tx: Tx, cmd: BackfillControlCommand, to: BackfillStatus, event: string): Promise<Locked | null> {
  const locked = await lockBackfill(tx, cmd.backfillId);
  if (locked.status === to) return null;
  if (!BACKFILL_TRANSITIONS.some(([f, t]) => f === locked.status && t === to)) refuse(cmd.backfillId, locked.status, to);
  await transitionBackfill(tx, { backfillId: cmd.backfillId }, { from: [locked.status], to });
  await recordControl(tx, event, locked, cmd);
  return locked;
}

async function pauseBackfill(tx: Tx, cmd: BackfillControlCommand): Promise<BackfillControlResult> {
  const moved = await move(tx, cmd, 'PAUSED', 'BACKFILL_PAUSED');
  return result(tx, cmd.backfillId, moved !== null);
}

async function resumeBackfill(tx: Tx, cmd: BackfillControlCommand, afterCommit: AfterCommit): Promise<BackfillControlResult> {
  const moved = await move(tx, cmd, 'RUNNING', 'BACKFILL_RESUMED');
  if (moved) await advanceBackfill(tx, cmd.backfillId, cmd.actor, afterCommit);
  return result(tx, cmd.backfillId, moved !== null);
}

async function cancelBackfill(tx: Tx, cmd: BackfillControlCommand): Promise<BackfillControlResult> {
  const locked = await lockBackfill(tx, cmd.backfillId);
  if (locked.status === 'CANCELLED') return result(tx, cmd.backfillId, false);
  if (!BACKFILL_TRANSITIONS.some(([f, t]) => f === locked.status && t === 'CANCELLED')) refuse(cmd.backfillId, locked.status, 'CANCELLED');
  await transitionBackfill(tx, { backfillId: cmd.backfillId }, { from: [locked.status], to: 'CANCELLED' });
  const dates = await transitionBackfillDate<{ business_date: string }>(
    tx,
    { backfillId: cmd.backfillId },
    {
      from: ['QUEUED', 'STARTING'],
      to: 'CANCELLED',
      set: Prisma.sql`reason = 'BACKFILL_CANCELLED'`,
      returning: Prisma.sql`t.business_date::text`,
    },
  );
  const calls = await transitionDispatch(
    tx,
    {
      picked: Prisma.sql`SELECT d.dispatch_id FROM nifi_ops.load_dispatch d
        WHERE d.dispatch_type = 'START_LOAD' AND d.backfill_id = ${cmd.backfillId}::uuid
          AND d.status = ANY(${UNDELIVERED_DISPATCH_STATUSES}::text[])
        ORDER BY d.dispatch_id FOR UPDATE`,
    },
    { from: UNDELIVERED_DISPATCH_STATUSES, to: 'CANCELLED', set: Prisma.sql`last_error = 'backfill cancelled'` },
  );
  await recordControl(tx, 'BACKFILL_CANCELLED', locked, cmd, {
    cancelledDates: dates.map((d) => d.business_date),
    cancelledDispatches: calls.length,
  });
  return result(tx, cmd.backfillId, true);
}

/**
 * The held readiness decisions of a backfill started with pushReadiness false, pushed once: for each consumer and
 * business date it held, the current decision's GATE_READY call (when the gate has a receiver) and its readinessChanged
 * notice, by nifi_ops.release_backfill_readiness (which also wakes the dispatchers). From then on its runs' decisions are pushed as they are made.
 */
async function releaseBackfillReadiness(tx: Tx, cmd: BackfillControlCommand): Promise<BackfillControlResult> {
  const locked = await lockBackfill(tx, cmd.backfillId);
  if (locked.push_readiness) refuse(cmd.backfillId, locked.status, 'RELEASE_READINESS (it pushes its readiness itself)');
  if (locked.readiness_released_at !== null) return result(tx, cmd.backfillId, false);
  await tx.$executeRaw`
    UPDATE nifi_ops.load_backfill SET readiness_released_at = clock_timestamp(), readiness_released_by = ${cmd.actor}
     WHERE backfill_id = ${cmd.backfillId}::uuid`;
  const [released] = await tx.$queryRaw<Array<{ pushed: number }>>`
    SELECT nifi_ops.release_backfill_readiness(${cmd.backfillId}::uuid) AS pushed`;
  await recordControl(tx, 'BACKFILL_READINESS_RELEASED', locked, cmd, { pushedDecisions: released!.pushed });
  return result(tx, cmd.backfillId, true);
}

export const pauseBackfillOperation = inOneTransaction(pauseBackfill);
export const resumeBackfillOperation = inOneTransaction(resumeBackfill);
export const cancelBackfillOperation = inOneTransaction(cancelBackfill);
export const releaseBackfillReadinessOperation = inOneTransaction(releaseBackfillReadiness);
