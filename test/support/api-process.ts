// The API as a child process (`load-control serve` from the sources) on a test database: for tests whose
// requests may hold the API's event loop for good, which an API inside the test process would take the test
// runner down with. A hung API is killed and started again on the same database.
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { freePort, spawnCli, waitUntilReady } from '../../bench/support.js';
import { createDb } from '../../src/db/client.js';
import { graphqlCaller, testConfig, type TestApi } from './api.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface TestApiProcess extends TestApi {
  /** The current API process's pid. */
  pid(): number;
  /**
   * Stops the API process (SIGKILL unless another signal is given: SIGTERM waits for its graceful exit), waits
   * `downMs`, and starts a new one on the same database and port; resolves once /readyz answers 200, with when.
   */
  restart(options?: { signal?: NodeJS.Signals; downMs?: number }): Promise<{ readyAt: number }>;
}

export interface ApiProcessOptions {
  /** Serve this database instead of a fresh clone of the migrated template (the caller drops it). */
  database?: TestDatabase;
  /** More of the process's environment (LC_AUTH__OIDC, say). */
  env?: Record<string, string>;
  /** Its port, when the test must know it first (a redirect URI registered at a provider); else a free one. */
  port?: number;
}

export async function startTestApiProcess(options: ApiProcessOptions = {}): Promise<TestApiProcess> {
  const database = options.database ?? (await createTestDatabase());
  const config = testConfig({ database: { url: database.url } });
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: database.url,
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
    LC_LOGGING__LEVEL: 'fatal',
    LC_AUTH__TOKENS: JSON.stringify(config.auth.tokens),
    ...options.env,
  };
  const start = async (): Promise<ChildProcess> => {
    const child = spawnCli('serve', env, { fromSource: true });
    await waitUntilReady(url, child);
    return child;
  };
  const kill = (process: ChildProcess, signal: NodeJS.Signals = 'SIGKILL') =>
    new Promise<void>((resolve) => {
      if (process.exitCode !== null || process.signalCode !== null) return resolve();
      process.once('exit', () => resolve());
      process.kill(signal);
    });
  let child = await start();
  const db = createDb(database.url, { poolSize: 2 });
  const sql = new pg.Pool({ connectionString: database.url, max: 4 });
  // a connection still closing when the test database is dropped must not fail the run
  sql.on('error', () => undefined);
  return {
    url,
    config,
    database,
    db,
    sql,
    realtime: undefined,
    gql: graphqlCaller(url),
    pid: () => child.pid!,
    async restart({ signal, downMs = 0 } = {}) {
      await kill(child, signal);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      child = await start();
      return { readyAt: Date.now() };
    },
    async close() {
      await kill(child);
      await sql.end();
      await db.close();
      if (!options.database) await database.drop();
    },
  };
}

/**
 * `count` API processes serving one database, for races decided in PostgreSQL between processes. Fault points
 * (prisma/functions/00_fault_points.sql, e.g. `{ count_run_successes: 0.05 }`) are set on the database before the
 * processes connect, so every session of every process sleeps at them.
 */
export async function startTestApiProcesses(
  count: number,
  faultPoints: Record<string, number> = {},
): Promise<{ apis: TestApiProcess[]; database: TestDatabase; close(): Promise<void> }> {
  const database = await createTestDatabase();
  const setting = Object.entries(faultPoints)
    .map(([name, seconds]) => `${name}=${seconds}`)
    .join(',');
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  try {
    await admin.query(
      `ALTER DATABASE ${admin.escapeIdentifier(database.name)} SET load_control.fault_points = ${admin.escapeLiteral(setting)}`,
    );
  } finally {
    await admin.end();
  }
  // one after another: the first compiles the sources (tsx caches them on disk) and the others start from its cache
  const apis: TestApiProcess[] = [];
  for (let i = 0; i < count; i++) apis.push(await startTestApiProcess({ database }));
  return {
    apis,
    database,
    async close() {
      await Promise.all(apis.map((api) => api.close()));
      await database.drop();
    },
  };
}
