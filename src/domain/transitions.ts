// The one door for every status change the TypeScript side makes (the hot paths claim_partition and
// report_chunk make theirs in prisma/functions/). Each move is one conditional UPDATE … WHERE status =
// ANY(from) … RETURNING: a row already moved by someone else is simply not returned ("someone else won").
import type pg from 'pg';
import type { Tx } from '../db/client.js';
import { Prisma } from '../generated/prisma/client.js';
import { recordApiEvent, type ApiEvent } from './events/events.js';
import {
  BACKFILL_DATE_TRANSITIONS,
  BACKFILL_TRANSITIONS,
  DISPATCH_TRANSITIONS,
  FILE_TRANSITIONS,
  PARTITION_TRANSITIONS,
  RUN_TRANSITIONS,
  TERMINAL_RUN_STATUSES,
  UNFINISHED_PARTITION_STATUSES,
  type BackfillDateStatus,
  type BackfillStatus,
  type DispatchStatus,
  type FileStatus,
  type PartitionStatus,
  type RunStatus,
} from './states.js';

/** A move the state machines of states.ts do not have: a bug in the caller, never an answer to a client. */
export class TransitionNotAllowedError extends Error {
  constructor(table: string, from: readonly string[], to: string) {
    super(`${table}: no transition ${from.join('|') || '(nothing)'} → ${to} in states.ts`);
    this.name = 'TransitionNotAllowedError';
  }
}

/**
 * What moves, and how. `set` and `returning` are SQL over the alias `t` (the row) and, for picked rows,
 * `picked` (the caller's sub-select); the door adds the status and the stamps of the move itself.
 */
export interface Move<S extends string, R> {
  from: readonly S[];
  to: S;
  /** More columns to set: the move's data (error code, counts, tokens). */
  set?: Prisma.Sql;
  /** The columns to return; the row's key when omitted. */
  returning?: Prisma.Sql;
  /** Written in the same transaction when a row moved: one event, or one per moved row. */
  event?: ApiEvent | ((row: R) => ApiEvent);
}

/** Rows the caller chose (and locked, in the lock order) in a sub-select that yields their key columns. */
interface PickedRows {
  picked: Prisma.Sql;
}

export type RunRows = { runId: string } | PickedRows;
export type PartitionRows = { runId: string; partitionId?: string } | PickedRows;
export type DispatchRows = { dispatchId: string } | { runId: string } | PickedRows;
export type FileRows = { runId: string; partitionId: string };
export type BackfillRows = { backfillId: string } | PickedRows;
export type BackfillDateRows = { backfillId: string; businessDate?: string } | PickedRows;

const now = Prisma.sql`clock_timestamp()`;

// The stamps of a move, by the status it enters: every run move beats the run's heartbeat and version.
function runStamps(to: RunStatus): Prisma.Sql[] {
  const stamps = [Prisma.sql`heartbeat_at = ${now}`, Prisma.sql`version_no = t.version_no + 1`];
  if (TERMINAL_RUN_STATUSES.includes(to)) stamps.push(Prisma.sql`completed_at = ${now}`);
  if (to === 'EXTRACTED_VALIDATED') stamps.push(Prisma.sql`extract_completed_at = ${now}`);
  if (to === 'PUBLISHING') stamps.push(Prisma.sql`publish_started_at = ${now}`);
  if (to === 'PUBLISHED') stamps.push(Prisma.sql`published_at = ${now}`);
  return stamps;
}

// A partition's heartbeat moves when its owner acts or it is reset for a new one; a partition ended with its
// run (ABANDONED, TIMED_OUT) keeps the last heartbeat it had.
const PARTITION_HEARTBEAT_STATUSES: readonly PartitionStatus[] = ['RUNNING', 'RETRY', 'SUCCESS', 'FAILED'];

function partitionStamps(to: PartitionStatus): Prisma.Sql[] {
  const stamps: Prisma.Sql[] = [];
  if (!UNFINISHED_PARTITION_STATUSES.includes(to)) stamps.push(Prisma.sql`completed_at = ${now}`);
  if (PARTITION_HEARTBEAT_STATUSES.includes(to)) stamps.push(Prisma.sql`heartbeat_at = ${now}`);
  return stamps;
}

function dispatchStamps(to: DispatchStatus): Prisma.Sql[] {
  switch (to) {
    case 'PENDING':
      // due at once, no longer dead
      return [Prisma.sql`next_attempt_at = ${now}`, Prisma.sql`dead_at = NULL`];
    case 'SENT':
      return [Prisma.sql`sent_at = ${now}`];
    case 'ACKED':
      return [Prisma.sql`acked_at = ${now}`];
    case 'DEAD':
      return [Prisma.sql`dead_at = ${now}`];
    case 'CANCELLED':
      return [Prisma.sql`cancelled_at = ${now}`];
  }
}

function backfillStamps(to: BackfillStatus): Prisma.Sql[] {
  switch (to) {
    case 'PAUSED':
      return [Prisma.sql`paused_at = ${now}`];
    case 'RUNNING':
      return [Prisma.sql`paused_at = NULL`];
    case 'COMPLETED':
    case 'CANCELLED':
      return [Prisma.sql`ended_at = ${now}`];
  }
}

const backfillDateStamps = (): Prisma.Sql[] => [Prisma.sql`updated_at = ${now}`];

function refuseUnknownMove<S extends string>(table: string, transitions: ReadonlyArray<readonly [S, S]>, from: readonly S[], to: S): void {
  const allowed = from.length > 0 && from.every((f) => transitions.some(([tf, tt]) => tf === f && tt === to));
  if (!allowed) throw new TransitionNotAllowedError(table, from, to);
}

interface Table {
  name: string;
  /** The row's key: what a picked sub-select yields and a move returns by default. */
  key: string[];
}

const RUN_TABLE: Table = { name: 'load_run', key: ['run_id'] };
const PARTITION_TABLE: Table = { name: 'load_partition', key: ['run_id', 'partition_id'] };
const DISPATCH_TABLE: Table = { name: 'load_dispatch', key: ['dispatch_id'] };
const FILE_TABLE: Table = { name: 'load_file', key: ['run_id', 'partition_id', 'chunk_index'] };
const BACKFILL_TABLE: Table = { name: 'load_backfill', key: ['backfill_id'] };
const BACKFILL_DATE_TABLE: Table = { name: 'load_backfill_date', key: ['backfill_id', 'business_date'] };

// the columns a keyed move may name, and how their parameters are typed
const KEY_COLUMNS = [
  { field: 'runId', column: 'run_id', cast: '::uuid' },
  { field: 'partitionId', column: 'partition_id', cast: '' },
  { field: 'dispatchId', column: 'dispatch_id', cast: '::uuid' },
  { field: 'backfillId', column: 'backfill_id', cast: '::uuid' },
  { field: 'businessDate', column: 'business_date', cast: '::date' },
] as const;

function updateStatement<S extends string, R>(table: Table, rows: object, move: Move<S, R>, stamps: Prisma.Sql[]): Prisma.Sql {
  const assignments = Prisma.join([Prisma.sql`status = ${move.to}`, ...stamps, ...(move.set ? [move.set] : [])], ', ');
  const returning = move.returning ?? Prisma.raw(table.key.map((k) => `t.${k}::text`).join(', '));
  const target = Prisma.raw(`nifi_ops.${table.name}`);
  const status = Prisma.sql`t.status = ANY(${[...move.from]}::text[])`;
  if ('picked' in rows) {
    const join = Prisma.raw(table.key.map((k) => `t.${k} = picked.${k}`).join(' AND '));
    return Prisma.sql`UPDATE ${target} AS t SET ${assignments}
      FROM (${(rows as PickedRows).picked}) AS picked
     WHERE ${join} AND ${status}
    RETURNING ${returning}`;
  }
  const keyed = rows as Record<string, string | undefined>;
  const conditions = KEY_COLUMNS.filter((k) => keyed[k.field] !== undefined).map(
    (k) => Prisma.sql`t.${Prisma.raw(k.column)} = ${keyed[k.field]}${Prisma.raw(k.cast)}`,
  );
  return Prisma.sql`UPDATE ${target} AS t SET ${assignments}
     WHERE ${Prisma.join(conditions, ' AND ')} AND ${status}
    RETURNING ${returning}`;
}

function isPool(db: Tx | pg.Pool): db is pg.Pool {
  return !('$queryRaw' in db);
}

async function perform<S extends string, R>(db: Tx | pg.Pool, statement: Prisma.Sql, move: Move<S, R>): Promise<R[]> {
  if (isPool(db)) {
    // the pool serves the single-statement hot paths, which have no event to write in the same transaction
    if (move.event) throw new Error('a move with an event needs a transaction');
    const { rows } = await db.query<R & pg.QueryResultRow>(statement.text, statement.values);
    return rows;
  }
  const rows = await db.$queryRaw<R[]>(statement);
  if (move.event && rows.length > 0) {
    const event = move.event;
    if (typeof event === 'function') for (const row of rows) await recordApiEvent(db, event(row));
    else await recordApiEvent(db, event);
  }
  return rows;
}

/** Moves runs from one of `from` to `to`; returns the rows that moved. */
export async function transitionRun<R = { run_id: string }>(db: Tx | pg.Pool, rows: RunRows, move: Move<RunStatus, R>): Promise<R[]> {
  refuseUnknownMove(RUN_TABLE.name, RUN_TRANSITIONS, move.from, move.to);
  return perform(db, updateStatement(RUN_TABLE, rows, move, runStamps(move.to)), move);
}

/** Moves partitions — one, every partition of a run in `from`, or picked ones; returns the rows that moved. */
export async function transitionPartition<R = { run_id: string; partition_id: string }>(
  db: Tx | pg.Pool,
  rows: PartitionRows,
  move: Move<PartitionStatus, R>,
): Promise<R[]> {
  refuseUnknownMove(PARTITION_TABLE.name, PARTITION_TRANSITIONS, move.from, move.to);
  return perform(db, updateStatement(PARTITION_TABLE, rows, move, partitionStamps(move.to)), move);
}

/** Moves dispatches — one, every dispatch of a run in `from`, or picked ones; returns the rows that moved. */
export async function transitionDispatch<R = { dispatch_id: string }>(
  db: Tx | pg.Pool,
  rows: DispatchRows,
  move: Move<DispatchStatus, R>,
): Promise<R[]> {
  refuseUnknownMove(DISPATCH_TABLE.name, DISPATCH_TRANSITIONS, move.from, move.to);
  return perform(db, updateStatement(DISPATCH_TABLE, rows, move, dispatchStamps(move.to)), move);
}

/** Moves the chunk files of a partition; returns the rows that moved. */
export async function transitionFiles<R = { run_id: string; partition_id: string; chunk_index: string }>(
  db: Tx,
  rows: FileRows,
  move: Move<FileStatus, R>,
): Promise<R[]> {
  refuseUnknownMove(FILE_TABLE.name, FILE_TRANSITIONS, move.from, move.to);
  return perform(db, updateStatement(FILE_TABLE, rows, move, [Prisma.sql`updated_at = ${now}`]), move);
}

/** Moves a backfill, or picked ones; returns the rows that moved. */
export async function transitionBackfill<R = { backfill_id: string }>(
  db: Tx,
  rows: BackfillRows,
  move: Move<BackfillStatus, R>,
): Promise<R[]> {
  refuseUnknownMove(BACKFILL_TABLE.name, BACKFILL_TRANSITIONS, move.from, move.to);
  return perform(db, updateStatement(BACKFILL_TABLE, rows, move, backfillStamps(move.to)), move);
}

/** Moves dates of a backfill — one, every date of it in `from`, or picked ones; returns the rows that moved. */
export async function transitionBackfillDate<R = { backfill_id: string; business_date: string }>(
  db: Tx,
  rows: BackfillDateRows,
  move: Move<BackfillDateStatus, R>,
): Promise<R[]> {
  refuseUnknownMove(BACKFILL_DATE_TABLE.name, BACKFILL_DATE_TRANSITIONS, move.from, move.to);
  return perform(db, updateStatement(BACKFILL_DATE_TABLE, rows, move, backfillDateStamps()), move);
}
