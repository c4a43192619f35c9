// A database of one's own per test file (or test): cloned from the migrated template that
// test/support/global-setup.ts prepared, so it starts with the schema and no rows.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { databaseUrl } from './url.js';

export interface TestDatabase {
  name: string;
  url: string;
  /** Terminates the database's connections and drops it. Safe to call twice. */
  drop(): Promise<void>;
}

export interface CreateTestDatabaseOptions {
  /** An empty database (from template0) instead of a migrated one: for testing migrations. */
  empty?: boolean;
}

const CLONE_ATTEMPTS = 8;

export async function createTestDatabase(options: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const adminUrl = inject('testAdminDatabaseUrl');
  const template = options.empty ? 'template0' : inject('testTemplateDatabase');
  const name = `lc_t_${randomBytes(6).toString('hex')}`;

  await withAdmin(adminUrl, async (admin) => {
    const sql = `CREATE DATABASE ${admin.escapeIdentifier(name)} TEMPLATE ${admin.escapeIdentifier(template)}`;
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(sql);
        return;
      } catch (error) {
        // 55006 "source database is being accessed by other users": a session in the template has
        // not finished exiting (postgres itself waits 5 s for it); try again a little later.
        if ((error as { code?: string }).code !== '55006' || attempt >= CLONE_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  });

  let dropped: Promise<void> | undefined;
  return {
    name,
    url: databaseUrl(adminUrl, name),
    drop: () =>
      (dropped ??= withAdmin(adminUrl, async (admin) => {
        // FORCE terminates the remaining sessions (e.g. a pool not yet closed) in the same step.
        await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`);
      })),
  };
}

/** Drops login roles, which belong to the server: once the databases holding their grants and objects are gone. */
export async function dropLoginRoles(names: Array<string | undefined>): Promise<void> {
  await withAdmin(inject('testAdminDatabaseUrl'), async (admin) => {
    for (const name of names) if (name) await admin.query(`DROP ROLE IF EXISTS ${admin.escapeIdentifier(name)}`);
  });
}

async function withAdmin<T>(adminUrl: string, work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl, application_name: 'vitest test-database' });
  admin.on('error', () => {});
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end().catch(() => {});
  }
}

/** A login role for a test to connect as; it has a password, which the embedded server asks for and a trust server ignores. */
export interface LoginRole {
  name: string;
  /** `url` with this role's name and password. */
  url(url: string): string;
}

export async function createLoginRole(admin: pg.ClientBase | pg.Pool, prefix: string): Promise<LoginRole> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await admin.query(`CREATE ROLE ${pg.escapeIdentifier(name)} LOGIN PASSWORD ${pg.escapeLiteral(password)}`);
  return {
    name,
    url(url) {
      const withRole = new URL(url);
      withRole.username = name;
      withRole.password = password;
      return withRole.toString();
    },
  };
}
