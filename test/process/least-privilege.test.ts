// serve and work under an application role that has only what `load-control grants` gives it: no DDL.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/auth/tokens.js';
import { readFunctionFiles, readMigrationFiles } from '../../src/db/migrate.js';
import { graphqlCaller, TOKENS } from '../support/api.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { createLoginRole, createTestDatabase, dropLoginRoles, type TestDatabase } from '../support/database.js';
import { JOB } from '../support/fixtures.js';
import { extractAll, publishRun, runState, startRun, succeed, validateStaging } from '../support/ledger-flow.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

let database: TestDatabase;
let admin: pg.Pool;
let receiver: Receiver;
let role: string;
let asRole: (url: string) => string;
const children: CliProcess[] = [];

const TOKENS_ENV = JSON.stringify([
  { name: 'nifi-cluster', sha256: hashToken(TOKENS.nifi), roles: ['nifi'] },
  { name: 'alice-operator', sha256: hashToken(TOKENS.operator), roles: ['operator'] },
  { name: 'victor-viewer', sha256: hashToken(TOKENS.viewer), roles: ['viewer'] },
]);

async function finished(child: CliProcess): Promise<{ code: number | null; output: string }> {
  return { code: await child.exited, output: child.output() };
}

beforeAll(async () => {
  database = await createTestDatabase();
  admin = new pg.Pool({ connectionString: database.url, max: 2 });
  const login = await createLoginRole(admin, 'lc_app');
  role = login.name;
  asRole = login.url;
  receiver = await startReceiver();
});

afterAll(async () => {
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((child) => child.exited));
  await receiver?.close();
  await admin?.end();
  await database?.drop();
  // the role owns nothing; its grants go with the database
  await dropLoginRoles([role]);
});

describe('an application role with the grants of `load-control grants`', () => {
  it('prints the grants without --apply and changes nothing', async () => {
    const printed = await finished(runCli(['grants', role], { DATABASE_URL: database.url }));
    expect(printed.code).toBe(0);
    expect(printed.output).toContain(`GRANT USAGE ON SCHEMA nifi_ops TO "${role}";`);
    expect(printed.output).toContain(`GRANT SELECT, INSERT, UPDATE, DELETE ON nifi_ops."load_run" TO "${role}";`);
    expect(printed.output).toContain(`GRANT SELECT ON nifi_ops."lc_migration" TO "${role}";`);
    expect(printed.output).toMatch(new RegExp(`GRANT EXECUTE ON FUNCTION nifi_ops.report_chunks\\(.*\\) TO "${role}";`));
    const { rows } = await admin.query(`SELECT has_schema_privilege($1, 'nifi_ops', 'USAGE') AS usage`, [role]);
    expect(rows[0].usage).toBe(false);
  });

  it('names a role that does not exist (exit 1, nothing granted)', async () => {
    const missing = await finished(runCli(['grants', 'no_such_role_here', '--apply'], { DATABASE_URL: database.url }));
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('role no_such_role_here does not exist');
  });

  it('runs no DDL, and runs serve and work through a whole run', async () => {
    const applied = await finished(runCli(['grants', role, '--apply'], { DATABASE_URL: database.url }));
    expect(applied.code).toBe(0);
    expect(applied.output).toContain('"grants_applied"');

    const app = new pg.Client({ connectionString: asRole(database.url) });
    await app.connect();
    try {
      for (const ddl of [
        'CREATE TABLE nifi_ops.intruder (id int)',
        'ALTER TABLE nifi_ops.load_run ADD COLUMN intruder text',
        'CREATE INDEX ix_intruder ON nifi_ops.load_run (job_key)',
        `CREATE OR REPLACE FUNCTION nifi_ops.notify_alert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
        "INSERT INTO nifi_ops.lc_migration (name, checksum) VALUES ('9999_x', repeat('0', 64))",
      ]) {
        await expect(app.query(ddl), ddl).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      await app.end();
    }

    const port = await freePort();
    const appUrl = asRole(database.url);
    const serve = runCli(['serve'], {
      DATABASE_URL: appUrl,
      PORT: String(port),
      LC_SERVER__HOST: '127.0.0.1',
      LC_AUTH__TOKENS: TOKENS_ENV,
    });
    const work = runCli(['work'], { DATABASE_URL: appUrl, LC_NIFI__RECEIVER_URL: receiver.url, LC_AUTH__TOKENS: TOKENS_ENV });
    children.push(serve, work);
    const url = `http://127.0.0.1:${port}`;
    await until('serve to be ready', async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200, 30_000);
    const gql = graphqlCaller(url);

    const run = await startRun(gql, JOB, `BK_${role}`, [3, 4]);
    await extractAll(gql, run, [3, 4]);
    // the worker, as the application role, delivers the VALIDATE_RUN call
    const [call] = await receiver.waitForCalls(1, 30_000);
    await validateStaging(gql, run.runId, String(call!.headers['x-dispatch-id']), 7);
    expect(await publishRun(gql, run.runId, 'PUBLISHED')).toBe('PUBLISHED');
    expect(await succeed(gql, run.runId, 7)).toBe('SUCCESS');
    expect(await runState(gql, run.runId)).toMatchObject({ status: 'SUCCESS', targetCount: 7 });
    await until(
      'the dispatch to be ACKED',
      async () =>
        (await admin.query(`SELECT status FROM nifi_ops.load_dispatch WHERE run_id = $1`, [run.runId])).rows[0]?.status === 'ACKED',
    );

    expect(serve.output()).not.toContain('"level":50');
    expect(work.output()).not.toContain('"level":50');
  }, 120_000);
});

describe("serve and work on a database that lacks this release's schema", () => {
  it('refuse to start, naming what is pending (exit 3); migrate connects as database.migrationUrl; then serve starts', async () => {
    const empty = await createTestDatabase({ empty: true });
    try {
      const files = await readMigrationFiles();
      const functionFiles = await readFunctionFiles();
      const pending = `pending ${[...files, ...functionFiles].map((file) => file.name).join(', ')}`;
      const port = await freePort();
      const serveEnv = { DATABASE_URL: asRole(empty.url), PORT: String(port), LC_SERVER__HOST: '127.0.0.1', LC_AUTH__TOKENS: TOKENS_ENV };
      const refused = await finished(runCli(['serve'], serveEnv));
      expect(refused.code).toBe(3);
      expect(refused.output).toContain(pending);
      expect(refused.output).toContain('run `load-control migrate`');
      const work = await finished(runCli(['work'], { DATABASE_URL: asRole(empty.url), LC_NIFI__RECEIVER_URL: receiver.url }));
      expect(work.code).toBe(3);
      expect(work.output).toContain(pending);
      const probe = new pg.Client({ connectionString: empty.url });
      await probe.connect();
      const { rows } = await probe.query(`SELECT to_regclass('nifi_ops.load_run') AS table`);
      await probe.end();
      expect(rows[0].table).toBeNull();

      // DATABASE_URL is the application role, which may not create the schema: migrate uses migrationUrl
      const migrated = await finished(runCli(['migrate'], { DATABASE_URL: asRole(empty.url), LC_DATABASE__MIGRATION_URL: empty.url }));
      expect(migrated.code).toBe(0);
      expect(migrated.output).toContain(`applied function files ${functionFiles.map((file) => file.name).join(', ')}`);
      // migrationUrl alone is enough for the commands that change the schema
      const granted = await finished(runCli(['grants', role, '--apply'], { LC_DATABASE__MIGRATION_URL: empty.url }));
      expect(granted.code).toBe(0);

      const serve = runCli(['serve'], serveEnv);
      children.push(serve);
      const url = `http://127.0.0.1:${port}`;
      await until('serve to be ready', async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200);
      serve.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    } finally {
      await empty.drop();
    }
  }, 120_000);
});
