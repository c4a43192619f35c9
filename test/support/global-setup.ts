// Vitest globalSetup: one PostgreSQL server and one migrated template database per run; each test
// file clones the template (test/support/database.ts), which costs a file copy, not a migration.
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, readdir, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/db/embedded.js';
import { migrate, readFunctionFiles, readMigrationFiles } from '../../src/db/migrate.js';
import { databaseUrl, describeUrl } from './url.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database on the test server to connect to for CREATE/DROP DATABASE. */
    testAdminDatabaseUrl: string;
    /** The migrated template that test databases are cloned from. */
    testTemplateDatabase: string;
  }
}

// Advisory locks (two-int form, taken in the admin database): class + 0 serialises template
// preparation across concurrent vitest runs on one server; class + hash is held shared for the
// whole run by each run using that template, so another run drops only templates nobody uses.
const LOCK_CLASS = 0x4c435450; // 'LCTP'
const EMBEDDED_DIR_PREFIX = 'lc-test-pg-';
const FAST_UNSAFE_FLAGS = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];

interface PreparedServer {
  adminUrl: string;
  template: string;
  teardown: () => Promise<void>;
}

/**
 * Every tier that needs a database names this file as its global setup, and `npm test` runs the tiers in one
 * vitest process: they share one server and one template, counted here, and the last tier's teardown stops it.
 */
interface SharedServer {
  prepared: Promise<PreparedServer>;
  users: number;
}
const SHARED = Symbol.for('load-control.test-server');
const shared = globalThis as { [SHARED]?: SharedServer };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared[SHARED] ??= { prepared: prepareServer(), users: 0 };
  const server = shared[SHARED];
  server.users++;
  const release = async () => {
    if (--server.users > 0) return;
    delete shared[SHARED];
    await (await server.prepared.catch(() => undefined))?.teardown();
  };
  try {
    const { adminUrl, template } = await server.prepared;
    project.provide('testAdminDatabaseUrl', adminUrl);
    project.provide('testTemplateDatabase', template);
    return release;
  } catch (error) {
    await release();
    throw error;
  }
}

async function prepareServer(): Promise<PreparedServer> {
  const started = performance.now();
  let embedded: EmbeddedPostgresHandle | undefined;
  let embeddedDir: string | undefined;
  let holder: pg.Client | undefined;

  const teardown = async () => {
    await holder?.end().catch(() => {});
    await embedded?.stop();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  };

  try {
    let adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
    if (!adminUrl) {
      await removeOrphanedEmbeddedServers();
      embeddedDir = await mkdtemp(join(tmpdir(), EMBEDDED_DIR_PREFIX));
      // The server runs as the `postgres` OS user when we are root: it must be able to enter the dir.
      await chmod(embeddedDir, 0o755);
      await writeFile(join(embeddedDir, 'owner.pid'), `${process.pid}\n`);
      embedded = await startEmbeddedPostgres({ dataDir: join(embeddedDir, 'data'), postgresFlags: FAST_UNSAFE_FLAGS });
      adminUrl = embedded.url;
    }
    const serverReady = performance.now();

    holder = new pg.Client({ connectionString: adminUrl, application_name: 'vitest global-setup' });
    holder.on('error', () => {});
    await holder.connect();
    const { template, reused } = await prepareTemplate(holder, adminUrl);

    console.log(
      `[global-setup] ${embedded ? 'embedded PostgreSQL' : 'server'} ${describeUrl(adminUrl)}` +
        `${embedded ? ` started in ${ms(serverReady - started)}` : ''}; template ${template} ` +
        `${reused ? 'reused' : 'created'} in ${ms(performance.now() - serverReady)}`,
    );
    return { adminUrl, template, teardown };
  } catch (error) {
    await teardown().catch(() => {});
    throw error;
  }
}

async function prepareTemplate(admin: pg.Client, adminUrl: string): Promise<{ template: string; reused: boolean }> {
  const files = [...(await readMigrationFiles()), ...(await readFunctionFiles())];
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.name}\0${file.checksum}\0`);
  const hex = hash.digest('hex').slice(0, 8);
  const template = `lc_template_${hex}`;

  await admin.query('SELECT pg_advisory_lock($1, 0)', [LOCK_CLASS]);
  try {
    await admin.query('SELECT pg_advisory_lock_shared($1, $2)', [LOCK_CLASS, lockKey(hex)]);

    const { rows } = await admin.query<{ datname: string; datistemplate: boolean }>(
      `SELECT datname, datistemplate FROM pg_database WHERE datname LIKE 'lc\\_template\\_%'`,
    );
    for (const row of rows) {
      if (row.datname !== template) await dropUnusedTemplate(admin, row.datname);
    }

    const current = rows.find((row) => row.datname === template);
    // datistemplate is set only after every migration committed: it marks a complete template.
    if (current?.datistemplate) return { template, reused: true };
    const name = admin.escapeIdentifier(template);
    if (current) await admin.query(`DROP DATABASE ${name} WITH (FORCE)`); // left half-built by a killed run
    await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
    await migrate(databaseUrl(adminUrl, template));
    // No connections: a connected template cannot be cloned ("being accessed by other users").
    await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
    return { template, reused: false };
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1, 0)', [LOCK_CLASS]);
  }
}

async function dropUnusedTemplate(admin: pg.Client, datname: string): Promise<void> {
  const hex = /^lc_template_([0-9a-f]{8})$/.exec(datname)?.[1];
  if (!hex) return;
  const { rows } = await admin.query<{ free: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS free', [LOCK_CLASS, lockKey(hex)]);
  if (!rows[0]?.free) return; // a running vitest process uses it
  try {
    const name = admin.escapeIdentifier(datname);
    await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE false`);
    await admin.query(`DROP DATABASE ${name}`).catch(async (error: { code?: string }) => {
      if (error.code !== '55006') throw error; // someone is connected: leave it for a later run
      await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true`);
    });
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, lockKey(hex)]);
  }
}

function lockKey(hex: string): number {
  return Number.parseInt(hex, 16) | 0; // int4
}

/**
 * A vitest process killed with SIGKILL cannot stop its embedded server, which then lives on as an
 * orphan. Each run records its pid beside the data directory; a later run stops servers whose owner
 * is gone (only servers whose working directory is that data directory) and removes the directory.
 */
async function removeOrphanedEmbeddedServers(): Promise<void> {
  const entries = await readdir(tmpdir(), { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(EMBEDDED_DIR_PREFIX)) continue;
    const dir = join(tmpdir(), entry.name);
    const owner = Number.parseInt(await readFile(join(dir, 'owner.pid'), 'utf8').catch(() => ''), 10);
    if (!Number.isInteger(owner) || isAlive(owner)) continue; // no marker yet (being created) or still running
    const dataDir = join(dir, 'data');
    const postmaster = Number.parseInt((await readFile(join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0] ?? '', 10);
    if (Number.isInteger(postmaster) && isAlive(postmaster)) {
      const cwd = await readlink(`/proc/${postmaster}/cwd`).catch(() => undefined);
      if (cwd === undefined || cwd !== (await realpath(dataDir).catch(() => dataDir))) continue;
      process.kill(postmaster, 'SIGQUIT'); // immediate shutdown: the data is thrown away anyway
      for (let i = 0; i < 50 && isAlive(postmaster); i++) await sleep(100);
      if (isAlive(postmaster)) continue;
    }
    await rm(dir, { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

function ms(milliseconds: number): string {
  return `${Math.round(milliseconds)} ms`;
}
