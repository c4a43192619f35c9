// Applies prisma/migrations/<NNNN_name>/migration.sql in name order; Prisma's schema engine is not
// used. Each file runs in one transaction and is recorded with its SHA-256 in nifi_ops.lc_migration.
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface MigrateOptions {
  /** Folder holding `NNNN_name/migration.sql`; defaults to the package's prisma/migrations. */
  migrationsDir?: string;
  log?: (message: string) => void;
}

export interface MigrateResult {
  /** Names (folder names) of the migrations this call applied, in order. */
  applied: string[];
}

export interface MigrationFile {
  name: string;
  path: string;
  sql: string;
  checksum: string;
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

export const defaultMigrationsDir = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

// Serialises migrate runs on one database (advisory locks are per database). 'LC_MIGRA' in ASCII.
const MIGRATE_LOCK_KEY = '5495340755868668481';

export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const log = options.log ?? (() => {});
  const files = await readMigrationFiles(options.migrationsDir ?? defaultMigrationsDir);
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'load-control migrate' });
  // A dropped connection surfaces through the failing query; without a listener it would crash the process.
  client.on('error', () => {});
  await client.connect();
  let locked = false;
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATE_LOCK_KEY]);
    locked = true;
    await client.query(`SET client_min_messages = warning`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS nifi_ops`);
    await client.query(`CREATE TABLE IF NOT EXISTS nifi_ops.lc_migration (
      name       text        PRIMARY KEY,
      checksum   char(64)    NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`);

    const { rows } = await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM nifi_ops.lc_migration');
    const appliedChecksums = new Map(rows.map((row) => [row.name, row.checksum]));
    // Every applied file is checked before anything runs, so a tampered history applies nothing.
    for (const file of files) {
      const appliedChecksum = appliedChecksums.get(file.name);
      if (appliedChecksum !== undefined && appliedChecksum !== file.checksum) {
        throw new MigrationChecksumError(file.name, file.path, appliedChecksum, file.checksum);
      }
    }
    const known = new Set(files.map((file) => file.name));
    for (const name of appliedChecksums.keys()) {
      if (!known.has(name)) log(`migration ${name} is recorded as applied but has no file`);
    }

    const applied: string[] = [];
    for (const file of files) {
      if (appliedChecksums.has(file.name)) continue;
      const started = performance.now();
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
      applied.push(file.name);
      log(`applied migration ${file.name} in ${Math.round(performance.now() - started)} ms`);
    }
    if (applied.length === 0) log(`database is up to date (${files.length} migrations)`);
    return { applied };
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATE_LOCK_KEY]).catch(() => {});
    await client.end().catch(() => {});
  }
}

/** The migration files in apply order, with their checksums. */
export async function readMigrationFiles(migrationsDir: string = defaultMigrationsDir): Promise<MigrationFile[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const files: MigrationFile[] = [];
  for (const name of names) {
    if (!/^\d{4}_[A-Za-z0-9_]+$/.test(name)) {
      throw new Error(`unexpected folder ${join(migrationsDir, name)}: migrations are named NNNN_name`);
    }
    const path = join(migrationsDir, name, 'migration.sql');
    const bytes = await readFile(path).catch((error: unknown) => {
      throw new Error(`migration ${name} has no readable migration.sql (${path})`, { cause: error });
    });
    files.push({ name, path, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') });
  }
  return files;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** pg reports a 1-based character offset into the query; turn it into line:column of the file. */
function errorLocation(sql: string, error: unknown): string | undefined {
  const position = Number((error as { position?: string } | undefined)?.position);
  if (!Number.isInteger(position) || position < 1) return undefined;
  const before = sql.slice(0, position - 1);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n') - 1;
  return `line ${line}, column ${column}`;
}
