// A real API server on loopback, on a fresh database cloned from the migrated template.
import pg from 'pg';
import { type Document, documentText } from '../../schema/documents/graphql.js';
import { hashToken } from '../../src/auth/tokens.js';
import { loadConfig, type Config } from '../../src/config/config.js';
import { createDb, type Db } from '../../src/db/client.js';
import { startRealtime, type Realtime } from '../../src/realtime/realtime.js';
import { type ApiServer, createApiServer } from '../../src/server/app.js';
import type { EventStreamLimits } from '../../src/server/event-streams.js';
import { type ExecutionLane, type LaneOptions, startExecutionLane } from '../../src/server/execution-lane.js';
import { createLogger } from '../../src/logging/logger.js';
import { createApiMetrics } from '../../src/server/metrics.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export const TOKENS = {
  nifi: 'test-nifi-token',
  operator: 'test-operator-token',
  viewer: 'test-viewer-token',
} as const;
export type TokenName = keyof typeof TOKENS;

interface GqlResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: { data?: T | null; errors?: Array<{ message: string; path?: string[]; extensions?: Record<string, unknown> }> };
  /** The first error's extensions.code, if any. */
  code: string | undefined;
  details: Record<string, unknown> | undefined;
}

interface GqlOptions {
  token?: TokenName | null;
  headers?: Record<string, string>;
}

export interface TestApi {
  url: string;
  config: Config;
  database: TestDatabase;
  db: Db;
  /** Direct SQL for assertions and for ageing timestamps; fixtures otherwise go through the API. */
  sql: pg.Pool;
  /** The LISTEN connection and feeds behind subscriptions, when started with `{ realtime: true }`. */
  realtime: Realtime | undefined;
  gql<T = Record<string, any>>(
    query: string | Document,
    variables?: Record<string, unknown>,
    options?: GqlOptions,
  ): Promise<GqlResponse<T>>;
  /** The execution threads, when the API was started with some. */
  lane?: ExecutionLane;
  /** The HTTP server itself (its event streams, its drain); not for an API in a child process. */
  server?: ApiServer;
  close(): Promise<void>;
}

export type ConfigOverrides = { [S in keyof Config]?: Partial<Config[S]> };

export function testConfig(overrides: ConfigOverrides = {}): Config {
  const base = loadConfig({ env: {} });
  const config = { ...base } as Config;
  for (const [section, values] of Object.entries(overrides)) {
    (config as Record<string, unknown>)[section] = { ...(base as Record<string, object>)[section], ...values };
  }
  config.auth = {
    ...config.auth,
    tokens: [
      { name: 'nifi-cluster', sha256: hashToken(TOKENS.nifi), roles: ['nifi'] },
      { name: 'alice-operator', sha256: hashToken(TOKENS.operator), roles: ['operator'] },
      { name: 'victor-viewer', sha256: hashToken(TOKENS.viewer), roles: ['viewer'] },
      ...(overrides.auth?.tokens ?? []),
    ],
  };
  config.logging = { ...config.logging, level: 'fatal' };
  return config;
}

export interface TestApiOptions {
  /** Run the realtime LISTEN connection (subscriptions; part of /readyz). */
  realtime?: boolean;
  /** Serve the console from this directory instead of web/dist. */
  consoleDir?: string;
  /**
   * The API (and its realtime) reach the database through this loopback port — a test/support/tcp-proxy.ts
   * in front of the server — while `sql` stays direct.
   */
  databasePort?: number;
  /** Serve this database (dropped by close) instead of a fresh clone of the migrated template. */
  database?: TestDatabase;
  /** Run queries and large bodies on execution threads, as `serve` does (without: all in the test's thread). */
  lane?: Pick<LaneOptions, 'threads' | 'tasksPerThread' | 'maxQueue'>;
  /** Bounds of /graphql/stream's reservations. */
  eventStreamLimits?: EventStreamLimits;
  /** Answer /auth/session as `start` on its embedded database does: the development tokens are in this file. */
  devTokensFile?: string;
}

export async function startTestApi(overrides: ConfigOverrides = {}, options: TestApiOptions = {}): Promise<TestApi> {
  const database = options.database ?? (await createTestDatabase());
  const apiUrl = new URL(database.url);
  if (options.databasePort !== undefined) apiUrl.port = String(options.databasePort);
  const config = testConfig({ ...overrides, database: { ...overrides.database, url: apiUrl.toString() } });
  const db = createDb(config.database.url!, { poolSize: 20, timeouts: config.database });
  const sql = new pg.Pool({ connectionString: database.url, max: 4 });
  // a connection still closing when the test database is dropped must not fail the run
  sql.on('error', () => undefined);
  const log = createLogger(config.logging, 'test');
  const realtime = options.realtime
    ? startRealtime({ url: config.database.url!, config, log, monitor: { coalesceMs: 100, refreshMs: 1000 } })
    : undefined;
  const lane = options.lane && startExecutionLane({ ...options.lane, config, databaseUrl: config.database.url!, log });
  const api = createApiServer({
    config,
    db,
    log,
    metrics: createApiMetrics(),
    realtime,
    consoleDir: options.consoleDir,
    lane,
    eventStreamLimits: options.eventStreamLimits,
    devTokensFile: options.devTokensFile ?? null,
  });
  const { port } = await api.listen(0, '127.0.0.1');
  const url = `${api.protocol}://127.0.0.1:${port}`;
  if (realtime) {
    for (let i = 0; i < 200 && !realtime.listening(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    if (!realtime.listening()) throw new Error('the realtime LISTEN connection did not come up');
  }

  return {
    url,
    config,
    database,
    db,
    sql,
    realtime,
    gql: graphqlCaller(url),
    lane,
    server: api,
    async close() {
      await api.close();
      await lane?.close();
      await realtime?.close();
      await sql.end();
      await db.close();
      await database.drop();
    },
  };
}

/** TestApi.gql for the API at `url`: a POST /graphql with the named token (nifi unless told). */
export function graphqlCaller(url: string): TestApi['gql'] {
  return async (query: string | Document, variables: Record<string, unknown> = {}, options: GqlOptions = {}) => {
    const token = options.token === undefined ? 'nifi' : options.token;
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        ...(token ? { Authorization: `Bearer ${TOKENS[token]}` } : {}),
        ...options.headers,
      },
      body: JSON.stringify({ query: documentText(query), variables }),
    });
    // what answers without the API's envelope (a load balancer's own error page) is kept as an error's message
    const body = (
      response.headers.get('content-type')?.includes('json') ? await response.json() : { errors: [{ message: await response.text() }] }
    ) as GqlResponse['body'];
    const first = body.errors?.[0]?.extensions;
    return {
      status: response.status,
      headers: response.headers,
      body,
      code: first?.code as string | undefined,
      details: first?.details as Record<string, unknown> | undefined,
    } as GqlResponse<never>;
  };
}
