import type pg from 'pg';
import type { ActingAs } from '../auth/principal.js';
import type { AfterCommit } from './after-commit.js';
import type { Db, Tx } from './client.js';
import { inStatement, inTransaction } from './transaction.js';

/**
 * A domain operation that writes, with the one way it reaches the database, declared where it is written:
 * - `transaction`: one interactive transaction (inTransaction), re-run on a deadlock or serialization failure;
 * - `statement`: the single-statement hot paths on the pool (inStatement), each statement its own implicit
 *   transaction — kept for the round trips an interactive transaction would add (claimPartition, reportChunk,
 *   the dispatcher's lease; see inStatement).
 * Callers (resolvers, the worker, the CLI) hand it to `perform` and never choose the mode.
 */
export type Operation<Input, Result> =
  | { mode: 'transaction'; run: (tx: Tx, input: Input, afterCommit: AfterCommit) => Promise<Result> }
  | { mode: 'statement'; run: (sql: pg.Pool, input: Input, afterCommit: AfterCommit) => Promise<Result> };

type TransactionRun<Input, Result> = Extract<Operation<Input, Result>, { mode: 'transaction' }>['run'];
type StatementRun<Input, Result> = Extract<Operation<Input, Result>, { mode: 'statement' }>['run'];

export const inOneTransaction = <Input, Result>(run: TransactionRun<Input, Result>): Operation<Input, Result> => ({
  mode: 'transaction',
  run,
});

export const asStatements = <Input, Result>(run: StatementRun<Input, Result>): Operation<Input, Result> => ({ mode: 'statement', run });

/**
 * Runs the operation in its declared mode: its afterCommit effects run once, after the commit. A transaction's
 * events record `actingAs`; a statement's hot path passes it in its own call (nifi_ops.acting_as).
 */
export function perform<Input, Result>(
  db: Db,
  operation: Operation<Input, Result>,
  input: Input,
  actingAs: ActingAs | null = null,
): Promise<Result> {
  return operation.mode === 'transaction'
    ? inTransaction(db, (tx, afterCommit) => operation.run(tx, input, afterCommit), undefined, actingAs)
    : inStatement(db, (sql, afterCommit) => operation.run(sql, input, afterCommit));
}
