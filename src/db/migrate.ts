// Applies the schema in two parts, Prisma's schema engine not being used:
// - versioned migrations, prisma/migrations/<NNNN_name>/migration.sql, in name order, each once: tables,
//   indexes, constraints and data. Each runs in one transaction, or — when its first line is
//   `-- load-control: no-transaction` (CREATE INDEX CONCURRENTLY) — statement by statement in autocommit.
//   Recorded with their SHA-256 in nifi_ops.lc_migration; an applied file must never change.
// - repeatable function files, prisma/functions/<NN_area>.sql: the SQL functions and triggers, one file per
//   area, each written to be run again (CREATE OR REPLACE). Applied after the versioned migrations whenever
//   a file's checksum differs from the one recorded in nifi_ops.lc_function_file (Flyway's repeatable
//   migrations). A function that is no longer wanted is dropped by a versioned migration.
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface MigrateOptions {
  /** Folder holding `NNNN_name/migration.sql`; defaults to the package's prisma/migrations. */
  migrationsDir?: string;
  /** Folder holding `NN_area.sql`; defaults to the package's prisma/functions. */
  functionsDir?: string;
  /**
   * How long one statement may wait for a lock before the file is given up and tried again (so that a
   * migration queued behind a long transaction does not hold every other session up behind it).
   */
  lockTimeoutMs?: number;
  /** Tries per file when its locks could not be had within lockTimeoutMs. */
  lockAttempts?: number;
  log?: (message: string) => void;
}

export interface MigrateResult {
  /** Names (folder names) of the versioned migrations this call applied, in order. */
  applied: string[];
  /** Names (file names) of the function files this call (re)applied, in order. */
  functionsApplied: string[];
}

export interface SchemaFile {
  name: string;
  path: string;
  sql: string;
  checksum: string;
}

export interface MigrationFile extends SchemaFile {
  /** Runs statement by statement outside a transaction (first line `-- load-control: no-transaction`). */
  noTransaction: boolean;
}

/** What a database lacks for this release's code, and what it has that this code does not know. */
export interface SchemaStatus {
  pendingMigrations: string[];
  /** Function files never applied or applied with other content. */
  pendingFunctions: string[];
  /** Migrations recorded as applied that this code has no file for (a newer release migrated it). */
  unknownMigrations: string[];
}

/** An already applied migration's file has changed since. Nothing was applied. */
export class MigrationChecksumError extends Error {
  constructor(
    readonly migration: string,
    readonly file: string,
    readonly appliedChecksum: string,
    readonly fileChecksum: string,
  ) {
    super(
      `migration ${migration} was applied with checksum ${appliedChecksum} but ${file} now has ${fileChecksum}; ` +
        'applied migrations must not change: add a new migration instead',
    );
    this.name = 'MigrationChecksumError';
  }
}

/** A migration file failed; its transaction was rolled back. `cause` is the database error. */
export class MigrationFailedError extends Error {
  constructor(
    readonly migration: string,
    readonly file: string,
    cause: unknown,
    location?: string,
  ) {
    super(`migration ${migration} failed${location ? ` at ${location}` : ''} (${file}): ${errorMessage(cause)}`, { cause });
    this.name = 'MigrationFailedError';
  }
}

const defaultMigrationsDir = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));
const defaultFunctionsDir = fileURLToPath(new URL('../../prisma/functions', import.meta.url));

const NO_TRANSACTION_MARKER = '-- load-control: no-transaction';
const DEFAULT_LOCK_TIMEOUT_MS = 5_000;
const DEFAULT_LOCK_ATTEMPTS = 5;

// Serialises migrate runs on one database (advisory locks are per database). 'LC_MIGRA' in ASCII.
const MIGRATE_LOCK_KEY = '5495340755868668481';
const MIGRATE_LOCK_POLL_MS = 100;

export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const log = options.log ?? (() => {});
  const files = await readMigrationFiles(options.migrationsDir ?? defaultMigrationsDir);
  const functionFiles = await readFunctionFiles(options.functionsDir ?? defaultFunctionsDir);
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const lockAttempts = options.lockAttempts ?? DEFAULT_LOCK_ATTEMPTS;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'load-control migrate' });
  // A dropped connection surfaces through the failing query; without a listener it would crash the process.
  client.on('error', () => {});
  await client.connect();
  let locked = false;
  try {
    // Polled, not waited for: CREATE INDEX CONCURRENTLY waits for every open transaction, and a session
    // blocked in pg_advisory_lock is one — the index build and the waiting migrate would deadlock.
    while (!(await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS held', [MIGRATE_LOCK_KEY])).rows[0]!.held) {
      await new Promise((resolve) => setTimeout(resolve, MIGRATE_LOCK_POLL_MS));
    }
    locked = true;
    // an index build may take hours on a year of history; a role's default statement_timeout must not end it
    await client.query(`SET statement_timeout = 0`);
    await client.query(`SET lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`);
    await client.query(`SET client_min_messages = warning`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS nifi_ops`);
    await client.query(`CREATE TABLE IF NOT EXISTS nifi_ops.lc_migration (
      name       text        PRIMARY KEY,
      checksum   char(64)    NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    await client.query(`CREATE TABLE IF NOT EXISTS nifi_ops.lc_function_file (
      name       text        PRIMARY KEY,
      checksum   char(64)    NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`);

    const recorded = await readRecorded(client);
    // Every applied file is checked before anything runs, so a tampered history applies nothing.
    for (const file of files) {
      const appliedChecksum = recorded.migrations.get(file.name);
      if (appliedChecksum !== undefined && appliedChecksum !== file.checksum) {
        throw new MigrationChecksumError(file.name, file.path, appliedChecksum, file.checksum);
      }
    }
    const known = new Set(files.map((file) => file.name));
    for (const name of recorded.migrations.keys()) {
      if (!known.has(name)) log(`migration ${name} is recorded as applied but has no file`);
    }

    const withLockRetries = async (label: string, work: () => Promise<void>): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await work();
        } catch (error) {
          const lockNotAvailable = (error as { cause?: { code?: string } }).cause?.code === '55P03';
          if (!lockNotAvailable || attempt >= lockAttempts) throw error;
          log(`${label}: a lock was not granted within ${lockTimeoutMs} ms (attempt ${attempt} of ${lockAttempts}); trying again`);
          await new Promise((resolve) => setTimeout(resolve, 1000 * attempt));
        }
      }
    };

    const applied: string[] = [];
    for (const file of files) {
      if (recorded.migrations.has(file.name)) continue;
      const started = performance.now();
      await withLockRetries(`migration ${file.name}`, () =>
        file.noTransaction ? applyOutsideTransaction(client, file) : applyInTransaction(client, file),
      );
      applied.push(file.name);
      log(`applied migration ${file.name} in ${Math.round(performance.now() - started)} ms`);
    }

    const changed = functionFiles.filter((file) => recorded.functions.get(file.name) !== file.checksum);
    if (changed.length > 0) {
      const started = performance.now();
      // one transaction for all changed files: callers never see one area's new functions beside another's old
      await withLockRetries('function files', () => applyFunctionFiles(client, changed));
      log(`applied function files ${changed.map((file) => file.name).join(', ')} in ${Math.round(performance.now() - started)} ms`);
    }
    if (applied.length === 0 && changed.length === 0) log(`database is up to date (${files.length} migrations)`);
    return { applied, functionsApplied: changed.map((file) => file.name) };
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATE_LOCK_KEY]).catch(() => {});
    await client.end().catch(() => {});
  }
}

/**
 * Compares a database's recorded schema with this release's files; reads only (SELECT on the two
 * bookkeeping tables), so an application role can run it. A database never migrated lacks everything.
 */
export async function readSchemaStatus(
  databaseUrl: string,
  options: Pick<MigrateOptions, 'migrationsDir' | 'functionsDir'> & { connectTimeoutMs?: number } = {},
): Promise<SchemaStatus> {
  const files = await readMigrationFiles(options.migrationsDir ?? defaultMigrationsDir);
  const functionFiles = await readFunctionFiles(options.functionsDir ?? defaultFunctionsDir);
  const client = new pg.Client({
    connectionString: databaseUrl,
    application_name: 'load-control schema check',
    connectionTimeoutMillis: options.connectTimeoutMs,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query<{ migrations: boolean; functions: boolean }>(
      `SELECT to_regclass('nifi_ops.lc_migration') IS NOT NULL AS migrations,
              to_regclass('nifi_ops.lc_function_file') IS NOT NULL AS functions`,
    );
    const recorded = await readRecorded(client, rows[0]!);
    const known = new Set(files.map((file) => file.name));
    return {
      pendingMigrations: files.filter((file) => !recorded.migrations.has(file.name)).map((file) => file.name),
      pendingFunctions: functionFiles.filter((file) => recorded.functions.get(file.name) !== file.checksum).map((file) => file.name),
      unknownMigrations: [...recorded.migrations.keys()].filter((name) => !known.has(name)).sort(),
    };
  } finally {
    await client.end().catch(() => {});
  }
}

/** The migration files in apply order, with their checksums. */
export async function readMigrationFiles(migrationsDir: string = defaultMigrationsDir): Promise<MigrationFile[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort(byCodePoint);
  const files: MigrationFile[] = [];
  for (const name of names) {
    if (!/^\d{4}_[A-Za-z0-9_]+$/.test(name)) {
      throw new Error(`unexpected folder ${join(migrationsDir, name)}: migrations are named NNNN_name`);
    }
    const file = await readSchemaFile(name, join(migrationsDir, name, 'migration.sql'), `migration ${name} has no readable migration.sql`);
    const noTransaction = file.sql.split('\n', 1)[0]!.trim() === NO_TRANSACTION_MARKER;
    if (noTransaction && /\$[A-Za-z_]*\$/.test(file.sql)) {
      throw new Error(`${file.path}: a no-transaction migration is split at each line ending in ';' and may not use dollar quoting`);
    }
    files.push({ ...file, noTransaction });
  }
  return files;
}

/** The function files in apply order (NN_area.sql), with their checksums. A missing folder holds none. */
export async function readFunctionFiles(functionsDir: string = defaultFunctionsDir): Promise<SchemaFile[]> {
  const entries = await readdir(functionsDir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  const names = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.sql'))
    .map((entry) => entry.name)
    .sort(byCodePoint);
  const files: SchemaFile[] = [];
  for (const name of names) {
    if (!/^\d{2}_[A-Za-z0-9_]+\.sql$/.test(name)) {
      throw new Error(`unexpected file ${join(functionsDir, name)}: function files are named NN_area.sql`);
    }
    files.push(await readSchemaFile(name, join(functionsDir, name), `function file ${name} is not readable`));
  }
  return files;
}

/** The statements of a no-transaction migration: each ends with ';' at the end of a line. */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  for (const line of sql.split('\n')) {
    current.push(line);
    if (/;\s*$/.test(line.replace(/--.*$/, ''))) {
      statements.push(current.join('\n'));
      current = [];
    }
  }
  const rest = current.join('\n');
  if (rest.replace(/--.*$/gm, '').trim() !== '') statements.push(rest);
  return statements.filter((statement) => statement.replace(/--.*$/gm, '').trim() !== '');
}

async function applyInTransaction(client: pg.Client, file: MigrationFile): Promise<void> {
  await client.query('BEGIN');
  try {
    // No parameters → simple query protocol, which accepts the whole multi-statement file.
    await client.query(file.sql);
    await client.query('INSERT INTO nifi_ops.lc_migration (name, checksum) VALUES ($1, $2)', [file.name, file.checksum]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw new MigrationFailedError(file.name, file.path, error, errorLocation(file.sql, error));
  }
}

// Statements that committed stay committed when a later one fails: such files are written to be run
// again from the top (DROP INDEX CONCURRENTLY IF EXISTS before each CREATE INDEX CONCURRENTLY).
async function applyOutsideTransaction(client: pg.Client, file: MigrationFile): Promise<void> {
  let offset = 0;
  for (const statement of splitStatements(file.sql)) {
    const start = file.sql.indexOf(statement, offset);
    offset = start + statement.length;
    try {
      await client.query(statement);
    } catch (error) {
      throw new MigrationFailedError(file.name, file.path, error, errorLocation(file.sql, error, start));
    }
  }
  await client.query('INSERT INTO nifi_ops.lc_migration (name, checksum) VALUES ($1, $2)', [file.name, file.checksum]);
}

async function applyFunctionFiles(client: pg.Client, files: SchemaFile[]): Promise<void> {
  await client.query('BEGIN');
  let current: SchemaFile | undefined;
  try {
    for (const file of files) {
      current = file;
      await client.query(file.sql);
      await client.query(
        `INSERT INTO nifi_ops.lc_function_file (name, checksum) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = clock_timestamp()`,
        [file.name, file.checksum],
      );
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    const failed = current!;
    throw new MigrationFailedError(failed.name, failed.path, error, errorLocation(failed.sql, error));
  }
}

async function readRecorded(
  client: pg.Client,
  exists: { migrations: boolean; functions: boolean } = { migrations: true, functions: true },
): Promise<{ migrations: Map<string, string>; functions: Map<string, string> }> {
  const read = async (table: string, present: boolean) => {
    if (!present) return new Map<string, string>();
    const { rows } = await client.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM nifi_ops.${table}`);
    return new Map(rows.map((row) => [row.name, row.checksum]));
  };
  return { migrations: await read('lc_migration', exists.migrations), functions: await read('lc_function_file', exists.functions) };
}

async function readSchemaFile(name: string, path: string, unreadable: string): Promise<SchemaFile> {
  const bytes = await readFile(path).catch((error: unknown) => {
    throw new Error(`${unreadable} (${path})`, { cause: error });
  });
  return { name, path, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') };
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** pg reports a 1-based character offset into the query; turn it into line:column of the file. */
function errorLocation(sql: string, error: unknown, statementOffset = 0): string | undefined {
  const position = Number((error as { position?: string } | undefined)?.position);
  if (!Number.isInteger(position) || position < 1) return undefined;
  const before = sql.slice(0, statementOffset + position - 1);
  const line = before.split('\n').length;
  const column = statementOffset + position - before.lastIndexOf('\n') - 1;
  return `line ${line}, column ${column}`;
}
