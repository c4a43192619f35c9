import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { MigrationChecksumError, MigrationFailedError, migrate, readMigrationFiles } from './migrate.js';

const databases: TestDatabase[] = [];
let dirs: string[] = [];

async function emptyDatabase(): Promise<string> {
  const database = await createTestDatabase({ empty: true });
  databases.push(database);
  return database.url;
}

async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-migrations-'));
  dirs.push(dir);
  await writeMigrations(dir, files);
  return dir;
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
      expect.arrayContaining([
        'lc_migration', 'load_dispatch', 'load_event', 'load_file', 'load_partition', 'load_run', 'load_validation',
      ]),
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
    const dir = await migrationsDir({ '0001_first': 'CREATE TABLE public.first (id int);' });
    await migrate(url, { migrationsDir: dir });
    await writeMigrations(dir, {
      '0001_first': 'CREATE TABLE public.first (id int, extra text);',
      '0002_second': 'CREATE TABLE public.second (id int);',
    });

    const error = await migrate(url, { migrationsDir: dir }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MigrationChecksumError);
    expect((error as MigrationChecksumError).migration).toBe('0001_first');
    expect((error as Error).message).toContain(join(dir, '0001_first', 'migration.sql'));
    expect(await recorded(url)).toEqual(['0001_first']);
    expect(await tableExists(url, 'public.second')).toBe(false);
  });

  it('rolls a failing file back entirely and does not record it', async () => {
    const dir = await migrationsDir({
      '0001_good': 'CREATE TABLE public.good (id int);',
      '0002_bad': [
        'CREATE TABLE public.half_done (id int);',
        'INSERT INTO public.good VALUES (1);',
        'SELECT no_such_function();',
      ].join('\n'),
    });

    const error = await migrate(url, { migrationsDir: dir }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MigrationFailedError);
    expect((error as MigrationFailedError).migration).toBe('0002_bad');
    expect((error as Error).message).toContain(join(dir, '0002_bad', 'migration.sql'));
    expect((error as Error).message).toContain('line 3');
    expect((error as Error).cause).toMatchObject({ code: '42883' });
    expect(await recorded(url)).toEqual(['0001_good']);
    expect(await tableExists(url, 'public.half_done')).toBe(false);
    expect(await query(url, 'SELECT * FROM public.good')).toEqual([]);

    // Fixed, it applies on the next run.
    await writeMigrations(dir, { '0002_bad': 'CREATE TABLE public.half_done (id int);' });
    expect((await migrate(url, { migrationsDir: dir })).applied).toEqual(['0002_bad']);
  });

  it('lets concurrent runs on a fresh database all succeed, applying each file once', async () => {
    const files = await readMigrationFiles();

    const results = await Promise.all([migrate(url), migrate(url), migrate(url)]);

    const applied = results.flatMap((result) => result.applied).sort();
    expect(applied).toEqual(files.map((file) => file.name));
    expect(await recorded(url)).toEqual(files.map((file) => file.name));
  });
});
