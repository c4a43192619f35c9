// Online compaction of the ledger's tables after a large purge (`load-control compact`). A purge frees the
// oldest rows, which sit at the start of each table; VACUUM records that space as free but can give back to
// the operating system only empty pages at the end, and VACUUM FULL rewrites the table under an exclusive
// lock. So, the way pgcompacttable does it: the rows of the last pages are updated to themselves, a few pages
// per short transaction, and each new row version goes where the free space map finds room — near the start;
// once the tail is empty, VACUUM truncates it. Indexes are then rebuilt with REINDEX CONCURRENTLY.
//
// Beside live traffic: a batch locks only the rows no one else holds (FOR UPDATE SKIP LOCKED), so it never
// waits for a row lock and can be in no deadlock; a writer that meets a row the batch holds waits for the
// batch's commit and re-checks its conditions on the new version (READ COMMITTED), which has the same values
// — every conditional update of the ledger names its rows by key, never by ctid. A row version that would not
// land before the batch's pages (no free space left nearer the start) rolls its batch back and ends the pass.
// Nothing is remembered between runs: a run interrupted anywhere is resumed by running it again.
import type pg from 'pg';

/** The tables `compact` works on, largest first. */
export const COMPACTED_TABLES = ['load_file', 'load_event', 'load_partition', 'load_validation', 'load_dispatch', 'load_run'] as const;
export type CompactedTable = (typeof COMPACTED_TABLES)[number];

export const isCompactedTable = (name: string): name is CompactedTable => (COMPACTED_TABLES as readonly string[]).includes(name);

/** Heap pages one batch empties: a few hundred rows of load_file, tens of milliseconds. */
const COMPACT_BATCH_PAGES = 16;
/** A batch that takes longer than this is cancelled by the server (and rolled back: nothing moves). */
const BATCH_TIMEOUT_MS = 5000;
/** A batch waits this long at most for its table lock (only DDL or VACUUM FULL would hold one against it). */
const BATCH_LOCK_TIMEOUT_MS = 1000;
/**
 * Updates of one batch before it gives up: a page with room keeps an updated row on the page (the last page of
 * a table, a page VACUUM left half empty); each update of the row fills more of it with the version it
 * leaves behind, and the row moves once the page is full — after at most 8 KB / the row's size updates.
 */
const UPDATES_PER_BATCH = 200;
/** Passes (VACUUM, then moving rows from the end) per table: a later pass uses the space an earlier one found. */
const PASSES = 3;

/** Two compactions at once would move each other's rows back and forth. */
const COMPACT_LOCK = "hashtext('load-control compact')";

export interface TableSizes {
  table: CompactedTable;
  heapBytes: number;
  indexBytes: number;
  rows: number;
}

export interface CompactBatch {
  table: CompactedTable;
  /** The batch's pages, [fromPage, toPage). */
  fromPage: number;
  toPage: number;
  moved: number;
  /** Rows another transaction held: left where they are (a later run moves them). */
  skipped: number;
  milliseconds: number;
}

export interface TableCompaction {
  before: TableSizes;
  after: TableSizes;
  moved: number;
  skipped: number;
  batches: number;
  seconds: number;
}

export interface CompactOptions {
  tables?: readonly CompactedTable[];
  batchPages?: number;
  afterBatch?: (batch: CompactBatch) => void | Promise<void>;
  /** Between the steps of a table: what it is about to do. */
  progress?: (line: string) => void;
}

/** Refused before anything changes: another compaction runs, or the connection's role does not own the tables. */
export class CompactionRefusedError extends Error {
  override name = 'CompactionRefusedError';
}

const qualified = (table: CompactedTable) => `nifi_ops.${table}`;

export async function tableSizes(client: pg.Client, table: CompactedTable): Promise<TableSizes> {
  const { rows } = await client.query<{ heap: string; indexes: string; rows: string }>(
    `SELECT pg_table_size(c.oid) AS heap, pg_indexes_size(c.oid) AS indexes, count_rows.n AS rows
       FROM pg_class c, LATERAL (SELECT count(*) AS n FROM ${qualified(table)}) count_rows
      WHERE c.oid = $1::regclass`,
    [qualified(table)],
  );
  const row = rows[0]!;
  return { table, heapBytes: Number(row.heap), indexBytes: Number(row.indexes), rows: Number(row.rows) };
}

/**
 * What a compaction could give back, estimated without changing anything: the table's rows at their average
 * size (from a 1% sample of its pages) against the heap's size. Indexes are rebuilt, so they shrink to what a
 * fresh build of the same rows takes, which this does not estimate.
 */
export async function estimateCompactHeap(client: pg.Client, table: CompactedTable): Promise<number> {
  const { rows } = await client.query<{ bytes: string | null }>(
    `SELECT ((SELECT avg(pg_column_size(t.*)) FROM ${qualified(table)} t TABLESAMPLE SYSTEM (1))
             + 4 /* line pointer */ + 8 /* alignment, on average */) * (SELECT count(*) FROM ${qualified(table)})
             / (current_setting('block_size')::int - 24) * current_setting('block_size')::int AS bytes`,
  );
  return Math.round(Number(rows[0]?.bytes ?? 0));
}

async function heapPages(client: pg.Client, table: CompactedTable): Promise<number> {
  const { rows } = await client.query<{ pages: string }>(
    `SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int AS pages`,
    [qualified(table)],
  );
  return Number(rows[0]!.pages);
}

/**
 * The column each batch sets to itself: run_id, which every compacted table has, no UPDATE OF trigger watches
 * and no foreign key re-checks when it keeps its value (a key may be an identity column, which cannot be set).
 */
const SET_COLUMN = 'run_id';

const blockOf = (ctid: string) => Number(ctid.slice(1, ctid.indexOf(',')));

interface BatchResult {
  moved: number;
  skipped: number;
  /** False when a row version found no room before the batch's pages: the batch was rolled back. */
  fitted: boolean;
}

/** Moves the rows of pages [from, to) nearer the start, in one transaction; all of them or none. */
async function moveBatch(client: pg.Client, table: CompactedTable, from: number, to: number): Promise<BatchResult> {
  const inRange = `ctid >= '(${from},0)'::tid AND ctid < '(${to},0)'::tid`;
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL statement_timeout = ${BATCH_TIMEOUT_MS}; SET LOCAL lock_timeout = ${BATCH_LOCK_TIMEOUT_MS}`);
    const moved = new Set<string>();
    for (let attempt = 0; attempt < UPDATES_PER_BATCH; attempt++) {
      const { rows } = await client.query<{ ctid: string }>(
        `UPDATE ${qualified(table)} SET ${SET_COLUMN} = ${SET_COLUMN}
          WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${qualified(table)} WHERE ${inRange} FOR UPDATE SKIP LOCKED))
          RETURNING ctid::text`,
      );
      let stayed = 0;
      for (const { ctid } of rows) {
        const block = blockOf(ctid);
        if (block >= to) {
          // past the batch: the table grew, or the row went to a page an earlier batch emptied
          await client.query('ROLLBACK');
          return { moved: 0, skipped: 0, fitted: false };
        }
        if (block >= from) stayed++;
        else moved.add(ctid);
      }
      if (stayed === 0) {
        const { rows: left } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${qualified(table)} WHERE ${inRange}`);
        await client.query('COMMIT');
        return { moved: moved.size, skipped: Number(left[0]!.n), fitted: true };
      }
    }
    await client.query('ROLLBACK');
    return { moved: 0, skipped: 0, fitted: false };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** Indexes an interrupted REINDEX CONCURRENTLY left behind (invalid, named *_ccnew or *_ccold): dropped. */
async function dropLeftoverIndexes(client: pg.Client, table: CompactedTable): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE i.indrelid = $1::regclass AND NOT i.indisvalid AND c.relname ~ '_cc(new|old)[0-9]*$'`,
    [qualified(table)],
  );
  for (const { name } of rows) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}

async function indexNames(client: pg.Client, table: CompactedTable): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE i.indrelid = $1::regclass ORDER BY c.relname`,
    [qualified(table)],
  );
  return rows.map((r) => r.name);
}

async function compactTable(client: pg.Client, table: CompactedTable, options: CompactOptions): Promise<TableCompaction> {
  const started = performance.now();
  const progress = options.progress ?? (() => undefined);
  const batchPages = options.batchPages ?? COMPACT_BATCH_PAGES;
  const before = await tableSizes(client, table);
  let moved = 0;
  let skipped = 0;
  let batches = 0;
  for (let pass = 0; pass < PASSES; pass++) {
    progress(`${table}: VACUUM (pass ${pass + 1})`);
    // dead rows out, their space into the free space map (where the moved rows go), an empty tail truncated
    await client.query(`VACUUM ${qualified(table)}`);
    let to = await heapPages(client, table);
    let movedThisPass = 0;
    while (to > 0) {
      const from = Math.max(0, to - batchPages);
      const batchStarted = performance.now();
      const result = await moveBatch(client, table, from, to);
      if (!result.fitted) break;
      batches++;
      moved += result.moved;
      movedThisPass += result.moved;
      skipped += result.skipped;
      await options.afterBatch?.({
        table,
        fromPage: from,
        toPage: to,
        moved: result.moved,
        skipped: result.skipped,
        milliseconds: performance.now() - batchStarted,
      });
      to = from;
    }
    if (movedThisPass === 0) break;
  }
  progress(`${table}: VACUUM (truncating the empty end)`);
  await client.query(`VACUUM ${qualified(table)}`);
  await dropLeftoverIndexes(client, table);
  for (const index of await indexNames(client, table)) {
    progress(`${table}: REINDEX INDEX CONCURRENTLY ${index}`);
    await client.query(`REINDEX INDEX CONCURRENTLY ${index}`);
  }
  await client.query(`ANALYZE ${qualified(table)}`);
  const after = await tableSizes(client, table);
  return { before, after, moved, skipped, batches, seconds: (performance.now() - started) / 1000 };
}

/**
 * Compacts the tables one after the other on a connection of its own (the migration role's: VACUUM and
 * REINDEX need the tables' owner). One compaction at a time: a second one is refused with CompactionRefusedError.
 */
export async function compactLedger(client: pg.Client, options: CompactOptions = {}): Promise<TableCompaction[]> {
  const tables = options.tables ?? COMPACTED_TABLES;
  // without ownership VACUUM only warns and skips the table: the rows would move and the space stay
  const { rows: notOwned } = await client.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c
      WHERE c.oid = ANY($1::regclass[]) AND NOT pg_has_role(current_user, c.relowner, 'USAGE') ORDER BY c.relname`,
    [tables.map(qualified)],
  );
  if (notOwned.length) {
    throw new CompactionRefusedError(
      `compact needs the owner of ${notOwned.map((r) => r.table).join(', ')} (VACUUM and REINDEX): connect as database.migrationUrl`,
    );
  }
  await client.query('SET statement_timeout = 0');
  const { rows } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(${COMPACT_LOCK}) AS locked`);
  if (!rows[0]!.locked) throw new CompactionRefusedError('another `load-control compact` is running on this database');
  try {
    const results: TableCompaction[] = [];
    for (const table of tables) results.push(await compactTable(client, table, options));
    return results;
  } finally {
    await client.query(`SELECT pg_advisory_unlock(${COMPACT_LOCK})`);
  }
}
