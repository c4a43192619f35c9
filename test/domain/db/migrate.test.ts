import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import {
  MigrationChecksumError,
  MigrationFailedError,
  migrate,
  readFunctionFiles,
  readMigrationFiles,
  readSchemaStatus,
  splitStatements,
} from '../../../src/db/migrate.js';

const databases: TestDatabase[] = [];
let dirs: string[] = [];

async function emptyDatabase(): Promise<string> {
  const database = await createTestDatabase({ empty: true });
  databases.push(database);
  return database.url;
}

/** A schema of toy migrations in `dir` and toy function files in `dir`/functions (none until written). */
const toy = (dir: string, extra: Partial<Parameters<typeof migrate>[1]> = {}) => ({
  migrationsDir: join(dir, 'migrations'),
  functionsDir: join(dir, 'functions'),
  ...extra,
});

async function toyDir(migrations: Record<string, string>, functions: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-schema-'));
  dirs.push(dir);
  await mkdir(join(dir, 'migrations'));
  await writeMigrations(join(dir, 'migrations'), migrations);
  await writeFunctions(dir, functions);
  return dir;
}

async function writeFunctions(dir: string, files: Record<string, string>): Promise<void> {
  await mkdir(join(dir, 'functions'), { recursive: true });
  for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, 'functions', name), sql);
}

async function writeMigrations(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, sql] of Object.entries(files)) {
    await mkdir(join(dir, name), { recursive: true });
    await writeFile(join(dir, name, 'migration.sql'), sql);
  }
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const recorded = (url: string) =>
  query<{ name: string }>(url, 'SELECT name FROM nifi_ops.lc_migration ORDER BY name').then((rows) => rows.map((row) => row.name));
const tableExists = (url: string, qualifiedName: string) =>
  query<{ exists: boolean }>(url, 'SELECT to_regclass($1) IS NOT NULL AS exists', [qualifiedName]).then((rows) => rows[0]!.exists);

afterEach(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  dirs = [];
});
afterAll(async () => {
  await Promise.all(databases.map((database) => database.drop()));
});

describe('migrate', () => {
  let url: string;
  beforeEach(async () => {
    url = await emptyDatabase();
  });

  it('creates the ledger tables and the partial unique indexes on a fresh database, and records each file', async () => {
    const files = await readMigrationFiles();
    const result = await migrate(url);

    expect(result.applied).toEqual(files.map((file) => file.name));
    const tables = await query<{ table_name: string }>(
      url,
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'nifi_ops' ORDER BY table_name`,
    );
    expect(tables.map((row) => row.table_name)).toEqual(
      expect.arrayContaining(['lc_migration', 'load_dispatch', 'load_event', 'load_file', 'load_partition', 'load_run', 'load_validation']),
    );
    const indexes = await query<{ indexname: string; indexdef: string }>(
      url,
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'nifi_ops' AND indexname = ANY($1) ORDER BY indexname`,
      [['uq_load_dispatch_validate', 'uq_load_run_active']],
    );
    expect(indexes.map((row) => row.indexname)).toEqual(['uq_load_dispatch_validate', 'uq_load_run_active']);
    for (const index of indexes) {
      expect(index.indexdef).toMatch(/^CREATE UNIQUE INDEX .* WHERE /);
    }
    const rows = await query<{ name: string; checksum: string }>(url, 'SELECT name, checksum FROM nifi_ops.lc_migration ORDER BY name');
    expect(rows).toEqual(files.map((file) => ({ name: file.name, checksum: file.checksum })));
  });

  it('applies nothing the second time', async () => {
    await migrate(url);
    const again = await migrate(url);

    expect(again.applied).toEqual([]);
    expect(await recorded(url)).toEqual((await readMigrationFiles()).map((file) => file.name));
  });

  it('refuses a changed, already applied file and applies nothing more', async () => {
    const dir = await toyDir({ '0001_first': 'CREATE TABLE public.first (id int);' });
    await migrate(url, toy(dir));
    await writeMigrations(join(dir, 'migrations'), {
      '0001_first': 'CREATE TABLE public.first (id int, extra text);',
      '0002_second': 'CREATE TABLE public.second (id int);',
    });

    const error = await migrate(url, toy(dir)).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MigrationChecksumError);
    expect((error as MigrationChecksumError).migration).toBe('0001_first');
    expect((error as Error).message).toContain(join(dir, 'migrations', '0001_first', 'migration.sql'));
    expect(await recorded(url)).toEqual(['0001_first']);
    expect(await tableExists(url, 'public.second')).toBe(false);
  });

  it('rolls a failing file back entirely and does not record it', async () => {
    const dir = await toyDir({
      '0001_good': 'CREATE TABLE public.good (id int);',
      '0002_bad': ['CREATE TABLE public.half_done (id int);', 'INSERT INTO public.good VALUES (1);', 'SELECT no_such_function();'].join(
        '\n',
      ),
    });

    const error = await migrate(url, toy(dir)).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as MigrationFailedError).migration).toBe('0002_bad');
    expect((error as Error).message).toContain(join(dir, 'migrations', '0002_bad', 'migration.sql'));
    expect((error as Error).message).toContain('line 3');
    expect((error as Error).cause).toMatchObject({ code: '42883' });
    expect(await recorded(url)).toEqual(['0001_good']);
    expect(await tableExists(url, 'public.half_done')).toBe(false);
    expect(await query(url, 'SELECT * FROM public.good')).toEqual([]);

    // Fixed, it applies on the next run.
    await writeMigrations(join(dir, 'migrations'), { '0002_bad': 'CREATE TABLE public.half_done (id int);' });
    expect((await migrate(url, toy(dir))).applied).toEqual(['0002_bad']);
  });

  it('lets concurrent runs on a fresh database all succeed, applying each file once', async () => {
    const files = await readMigrationFiles();

    const functionFiles = await readFunctionFiles();

    const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);

    const applied = results.flatMap((result) => result.applied).sort();
    expect(applied).toEqual(files.map((file) => file.name));
    expect(await recorded(url)).toEqual(files.map((file) => file.name));
    expect(results.flatMap((result) => result.functionsApplied).sort()).toEqual(functionFiles.map((file) => file.name));
  });
});

describe('function files', () => {
  let url: string;
  beforeEach(async () => {
    url = await emptyDatabase();
  });

  const recordedFunctions = (target: string) =>
    query<{ name: string; checksum: string }>(target, 'SELECT name, checksum FROM nifi_ops.lc_function_file ORDER BY name');
  const answer = (target: string, fn: string) =>
    query<{ answer: number }>(target, `SELECT public.${fn}() AS answer`).then((rows) => rows[0]!.answer);

  it('are applied after the migrations, in name order, recorded with their checksums, and not again while unchanged', async () => {
    const dir = await toyDir(
      { '0001_table': 'CREATE TABLE public.answers (n int); INSERT INTO public.answers VALUES (41);' },
      {
        // 02 reads the table 0001 made: files run after every migration; 01 calls 02, resolved when called
        '01_first.sql':
          'CREATE OR REPLACE FUNCTION public.first() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN public.second() + 1; END $$;',
        '02_second.sql': 'CREATE OR REPLACE FUNCTION public.second() RETURNS int LANGUAGE sql AS $$ SELECT n FROM public.answers $$;',
      },
    );

    const first = await migrate(url, toy(dir));
    expect(first).toEqual({ applied: ['0001_table'], functionsApplied: ['01_first.sql', '02_second.sql'] });
    expect(await answer(url, 'first')).toBe(42);
    expect(await recordedFunctions(url)).toEqual(
      (await readFunctionFiles(join(dir, 'functions'))).map((file) => ({ name: file.name, checksum: file.checksum })),
    );
    expect(await migrate(url, toy(dir))).toEqual({ applied: [], functionsApplied: [] });
  });

  it('reapplies only a file whose content changed', async () => {
    const dir = await toyDir(
      {},
      {
        '01_one.sql': 'CREATE OR REPLACE FUNCTION public.one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;',
        '02_two.sql': 'CREATE OR REPLACE FUNCTION public.two() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;',
      },
    );
    await migrate(url, toy(dir));
    // a body changed by hand is not what the runner compares: it compares the file with what it applied
    await query(url, 'CREATE OR REPLACE FUNCTION public.one() RETURNS int LANGUAGE sql AS $$ SELECT -1 $$');
    await writeFunctions(dir, { '02_two.sql': 'CREATE OR REPLACE FUNCTION public.two() RETURNS int LANGUAGE sql AS $$ SELECT 22 $$;' });

    expect((await migrate(url, toy(dir))).functionsApplied).toEqual(['02_two.sql']);
    expect(await answer(url, 'two')).toBe(22);
    expect(await answer(url, 'one')).toBe(-1);
  });

  it('applies the changed files in one transaction: one failing file leaves every function as it was and records nothing', async () => {
    const dir = await toyDir(
      {},
      {
        '01_one.sql': 'CREATE OR REPLACE FUNCTION public.one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;',
        '02_two.sql': 'CREATE OR REPLACE FUNCTION public.two() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;',
      },
    );
    await migrate(url, toy(dir));
    const before = await recordedFunctions(url);
    await writeFunctions(dir, {
      '01_one.sql': 'CREATE OR REPLACE FUNCTION public.one() RETURNS int LANGUAGE sql AS $$ SELECT 11 $$;',
      '02_two.sql': 'CREATE OR REPLACE FUNCTION public.two() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;\nSELECT no_such_function();',
    });

    const error = await migrate(url, toy(dir)).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as MigrationFailedError).migration).toBe('02_two.sql');
    expect((error as Error).message).toContain('line 2');
    expect(await answer(url, 'one')).toBe(1);
    expect(await recordedFunctions(url)).toEqual(before);
  });

  it('refuses a file not named NN_area.sql', async () => {
    const dir = await toyDir({}, { 'report.sql': 'SELECT 1;' });
    await expect(migrate(url, toy(dir))).rejects.toThrow(/function files are named NN_area\.sql/);
  });
});

describe('no-transaction migrations', () => {
  let url: string;
  beforeEach(async () => {
    url = await emptyDatabase();
  });

  const indexes = (target: string) =>
    query<{ indexname: string; valid: boolean }>(
      target,
      `SELECT c.relname AS indexname, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'public.items'::regclass ORDER BY 1`,
    );

  it('run statement by statement outside a transaction, so CREATE INDEX CONCURRENTLY works, and are recorded once', async () => {
    const dir = await toyDir({
      '0001_table':
        'CREATE TABLE public.items (id int, name text); INSERT INTO public.items SELECT g, g::text FROM generate_series(1, 1000) g;',
      '0002_indexes': [
        '-- load-control: no-transaction',
        'DROP INDEX CONCURRENTLY IF EXISTS public.ix_items_id;',
        '-- a comment; between statements',
        'CREATE INDEX CONCURRENTLY ix_items_id',
        '    ON public.items (id);',
        'CREATE INDEX CONCURRENTLY ix_items_name ON public.items (name);',
      ].join('\n'),
    });

    expect((await migrate(url, toy(dir))).applied).toEqual(['0001_table', '0002_indexes']);
    expect(await indexes(url)).toEqual([
      { indexname: 'ix_items_id', valid: true },
      { indexname: 'ix_items_name', valid: true },
    ]);
    expect(await recorded(url)).toEqual(['0001_table', '0002_indexes']);
  });

  it('are not recorded when a statement fails, and run from the top again once fixed', async () => {
    const dir = await toyDir({
      '0001_table': 'CREATE TABLE public.items (id int); INSERT INTO public.items VALUES (1), (1);',
      '0002_unique': [
        '-- load-control: no-transaction',
        'DROP INDEX CONCURRENTLY IF EXISTS public.uq_items_id;',
        'CREATE UNIQUE INDEX CONCURRENTLY uq_items_id ON public.items (id);',
      ].join('\n'),
    });

    const error = await migrate(url, toy(dir)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as Error).message).toContain('0002_unique');
    expect((error as Error).cause).toMatchObject({ code: '23505' });
    // the interrupted build leaves an invalid index behind, as PostgreSQL does
    expect(await indexes(url)).toEqual([{ indexname: 'uq_items_id', valid: false }]);
    expect(await recorded(url)).toEqual(['0001_table']);

    await query(url, 'DELETE FROM public.items WHERE ctid = (SELECT max(ctid) FROM public.items)');
    expect((await migrate(url, toy(dir))).applied).toEqual(['0002_unique']);
    expect(await indexes(url)).toEqual([{ indexname: 'uq_items_id', valid: true }]);
  });

  it('may not use dollar quoting, since they are split at each line ending in a semicolon', async () => {
    const dir = await toyDir({
      '0001_fn': '-- load-control: no-transaction\nCREATE FUNCTION public.f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;',
    });
    await expect(migrate(url, toy(dir))).rejects.toThrow(/may not use dollar quoting/);
    expect(await tableExists(url, 'nifi_ops.lc_migration')).toBe(false);
  });

  it('splits at semicolons that end a line, ignoring comments', () => {
    expect(splitStatements('-- load-control: no-transaction\nSELECT 1; -- one\nSELECT\n  2;\n-- trailing; comment\n')).toEqual([
      '-- load-control: no-transaction\nSELECT 1; -- one',
      'SELECT\n  2;',
    ]);
  });
});

describe('lock timeout', () => {
  it('gives a migration up when another session holds its lock past lock_timeout, retries, and applies once the lock is free', async () => {
    const url = await emptyDatabase();
    const dir = await toyDir({ '0001_table': 'CREATE TABLE public.busy (id int);' });
    await migrate(url, toy(dir));
    await writeMigrations(join(dir, 'migrations'), { '0002_column': 'ALTER TABLE public.busy ADD COLUMN note text;' });

    // a long transaction that has read the table: ALTER TABLE needs ACCESS EXCLUSIVE and would queue behind it,
    // and every later reader of the table behind the ALTER
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM public.busy');
      const messages: string[] = [];
      const error = await migrate(url, toy(dir, { lockTimeoutMs: 100, lockAttempts: 2, log: (m) => messages.push(m) })).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(MigrationFailedError);
      expect((error as Error).cause).toMatchObject({ code: '55P03' });
      expect(messages.filter((m) => m.includes('was not granted'))).toHaveLength(1);
      expect(await recorded(url)).toEqual(['0001_table']);

      // released during the second attempt's wait: that attempt applies it
      const migrating = migrate(url, toy(dir, { lockTimeoutMs: 100, lockAttempts: 3 }));
      setTimeout(() => void holder.query('COMMIT'), 300);
      expect((await migrating).applied).toEqual(['0002_column']);
    } finally {
      await holder.end();
    }
  });
});

describe('readSchemaStatus', () => {
  it('names what a database lacks for this release and what it has that this release does not know', async () => {
    const url = await emptyDatabase();
    const files = await readMigrationFiles();
    const functionFiles = await readFunctionFiles();

    expect(await readSchemaStatus(url)).toEqual({
      pendingMigrations: files.map((file) => file.name),
      pendingFunctions: functionFiles.map((file) => file.name),
      unknownMigrations: [],
    });

    await migrate(url);
    expect(await readSchemaStatus(url)).toEqual({ pendingMigrations: [], pendingFunctions: [], unknownMigrations: [] });

    const last = files.at(-1)!.name;
    await query(url, 'DELETE FROM nifi_ops.lc_migration WHERE name = $1', [last]);
    await query(url, `UPDATE nifi_ops.lc_function_file SET checksum = repeat('0', 64) WHERE name = $1`, [functionFiles[0]!.name]);
    await query(url, `INSERT INTO nifi_ops.lc_migration (name, checksum) VALUES ('9999_from_a_newer_release', repeat('0', 64))`);
    expect(await readSchemaStatus(url)).toEqual({
      pendingMigrations: [last],
      pendingFunctions: [functionFiles[0]!.name],
      unknownMigrations: ['9999_from_a_newer_release'],
    });
  });
});
