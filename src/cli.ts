import './production-mode.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Registry } from 'prom-client';
import { formatTokenEntry, generateToken, tokenConfigEntry } from './auth/tokens.js';
import { ConfigError, describeConfig, loadConfig, type Config, type Role } from './config/config.js';
import { behindTransactionPooler, createDb, type Db } from './db/client.js';
import { PROCESS_LISTENER_NAME, startListener, type Listener } from './db/listener.js';
import { EmbeddedPostgresMissingError, startEmbeddedPostgres, type EmbeddedPostgresHandle } from './db/embedded.js';
import { checkDatabase } from './db/health.js';
import { applicationGrants } from './db/grants.js';
import { migrate, readSchemaStatus } from './db/migrate.js';
import { startRealtime } from './realtime/realtime.js';
import { startTracing } from './tracing/tracing.js';
import { createApiServer } from './server/app.js';
import { startExecutionLane } from './server/execution-lane.js';
import { createLogger, type Logger } from './server/logger.js';
import { collectProcessMetrics, createApiMetrics, observeRunLockWaits, type ApiMetrics } from './server/metrics.js';
import { createShutdown, type Shutdown } from './server/shutdown.js';
import { isOperatorCommand, OPERATOR_USAGE, runOperatorCommand } from './operator-commands.js';
import { parseBefore, runPurgeCommand } from './purge-command.js';
import { compactedTables, runCompactCommand } from './compact-command.js';
import { CompactionRefusedError } from './domain/retention/compact.js';
import { serveWorkerHealth } from './worker/health-server.js';
import { startHeartbeat } from './worker/heartbeat.js';
import { startWorker } from './worker/worker.js';

const USAGE = `usage: load-control <command> [--config PATH]

commands:
  start                 migrate, then run the API, the worker and the console in one process
                        (no DATABASE_URL: an embedded PostgreSQL under .data/ with development tokens)
  serve                 the API and the console
  work                  the worker: dispatcher and sweeper (needs nifi.receiverUrl);
                        --metrics-port PORT also serves /healthz, /readyz and /metrics
  migrate               apply prisma/migrations and prisma/functions (as database.migrationUrl,
                        default database.url); serve and work refuse a database that lacks them
  grants <role> [--apply]
                        print (or apply, as database.migrationUrl) the grants an application
                        role needs for serve and work: DML and EXECUTE, no DDL
  token <name> <roles…> print a new token and the auth.tokens entry holding its digest
                        (roles: nifi, operator, viewer)
  purge [--before DATE] [--dry-run]
                        delete the details of runs that ended before DATE (default: now − retention.ledger),
                        keeping each run's summary; --dry-run prints what would go and changes nothing
  compact [--table T]… [--dry-run]
                        after a large purge, give the ledger tables' free space back online (as
                        database.migrationUrl: VACUUM and REINDEX need the tables' owner); prints the
                        sizes before and after; --dry-run prints the sizes and an estimate only

${OPERATOR_USAGE}`;

const DATA_DIR = '.data';
const DEV_TOKENS_FILE = join(DATA_DIR, 'dev-tokens.json');
const DEV_TOKEN_ROLES: Array<{ name: string; roles: Role[] }> = [
  { name: 'dev-nifi', roles: ['nifi'] },
  { name: 'dev-operator', roles: ['operator', 'nifi'] },
  { name: 'dev-viewer', roles: ['viewer'] },
];

/** Development tokens for the embedded database: made on first start, kept under .data/, printed each start. */
function developmentTokens(): Array<{ name: string; roles: Role[]; token: string }> {
  if (existsSync(DEV_TOKENS_FILE)) return JSON.parse(readFileSync(DEV_TOKENS_FILE, 'utf8'));
  const tokens = DEV_TOKEN_ROLES.map((t) => ({ ...t, token: generateToken() }));
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(DEV_TOKENS_FILE, JSON.stringify(tokens, null, 2), { mode: 0o600 });
  return tokens;
}

/** A wake-up or progress NOTIFY that failed after its commit: the answer stands, the next poll catches up. */
const notifyFailed = (log: Logger) => (error: unknown) => log.debug({ err: error }, 'notify_failed');

async function openDatabase(
  config: Config,
  log: Logger,
  allowEmbedded: boolean,
  shutdown: Shutdown,
): Promise<{ url: string; embedded: boolean }> {
  if (config.database.url) return { url: config.database.url, embedded: false };
  if (!allowEmbedded) throw new ConfigError(['config: database.url: required (set DATABASE_URL or LC_DATABASE__URL)']);
  const embedded: EmbeddedPostgresHandle = await startEmbeddedPostgres({
    dataDir: join(DATA_DIR, 'postgres'),
    log: (message) => log.debug({ component: 'embedded-postgres' }, message),
  }).catch((error: unknown) => {
    if (!(error instanceof EmbeddedPostgresMissingError)) throw error;
    throw new ConfigError([`config: database.url: required (set DATABASE_URL or LC_DATABASE__URL): ${error.message}`]);
  });
  shutdown.close('embedded-postgres', () => embedded.stop());
  log.info({ dataDir: join(DATA_DIR, 'postgres') }, 'embedded_postgres_started');
  return { url: embedded.url, embedded: true };
}

/**
 * Where schema changes connect: database.migrationUrl, else database.directUrl, else database.url (migrate and
 * grants need only one).
 */
async function migrationUrl(config: Config, log: Logger, shutdown: Shutdown): Promise<string> {
  return config.database.migrationUrl ?? config.database.directUrl ?? (await openDatabase(config, log, false, shutdown)).url;
}

/**
 * Where what needs a session of its own connects — LISTEN, session advisory locks, `work`'s loops, the schema
 * check: database.directUrl when database.url leads to a transaction pooler, else database.url.
 */
function sessionUrl(config: Config, url: string): string {
  return config.database.directUrl ?? url;
}

/** The application runs no DDL: a database that lacks this release's schema is refused, naming what is missing. */
async function requireCurrentSchema(url: string, config: Config, log: Logger): Promise<void> {
  const status = await readSchemaStatus(url, { connectTimeoutMs: config.database.connectTimeout });
  const pending = [...status.pendingMigrations, ...status.pendingFunctions];
  if (status.unknownMigrations.length > 0) {
    // a newer release migrated this database; expand-only migrations keep it usable by this one
    log.warn({ unknownMigrations: status.unknownMigrations }, 'schema_newer_than_release');
    if (status.pendingMigrations.length === 0) return;
  }
  if (pending.length > 0) {
    throw new SchemaBehindError(
      `the database lacks this release's schema: pending ${pending.join(', ')}; ` +
        'run `load-control migrate` (it connects as database.migrationUrl, default database.url)',
    );
  }
}

/**
 * Tracing for a serve, start or work process, when tracing.endpoint is set: started before anything that makes
 * spans, its last spans exported once everything else closed (a close registered first runs last).
 */
async function traceProcess(config: Config, log: Logger, role: string, shutdown: Shutdown): Promise<void> {
  const tracing = await startTracing(config.tracing, { role, log });
  if (tracing) shutdown.close('tracing', () => tracing.shutdown());
}

class SchemaBehindError extends Error {
  override name = 'SchemaBehindError';
}

async function runServe(
  config: Config,
  log: Logger,
  db: Db,
  url: string,
  shutdown: Shutdown,
  listener: Listener,
  metrics: ApiMetrics = createApiMetrics(),
  readinessChecks: Array<() => boolean> = [],
): Promise<string> {
  // subscriptions are fed by the process's LISTEN connection; its health is part of /readyz
  const realtime = startRealtime({ url, config, log, listener });
  shutdown.close('realtime', () => realtime.close());
  shutdown.drain('subscriptions', async () => realtime.endSubscriptions());
  const lane =
    config.server.executionThreads > 0
      ? startExecutionLane({ threads: config.server.executionThreads, config, databaseUrl: url, log })
      : undefined;
  if (lane) shutdown.close('execution threads', () => lane.close());
  const api = createApiServer({ config, db, log, metrics, realtime, readinessChecks, lane });
  const { port } = await api.listen(config.server.port, config.server.host);
  shutdown.drain(
    'api',
    () => api.drain(),
    () => ({ requests: api.open() }),
  );
  if (config.server.tls) process.on('SIGHUP', () => api.reloadTls());
  const host = config.server.host === '0.0.0.0' ? '127.0.0.1' : config.server.host;
  const base = `${api.protocol}://${host}:${port}`;
  log.info({ url: base, graphql: `${base}/graphql` }, 'api_started');
  return base;
}

async function main(argv: string[]): Promise<void> {
  // the operator's commands talk to the API, not the database: no configuration file, no connection
  if (isOperatorCommand(argv[0])) {
    process.exitCode = await runOperatorCommand(argv, { out: console.log, err: console.error, env: process.env });
    return;
  }
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      'metrics-port': { type: 'string' },
      apply: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      before: { type: 'string' },
      'dry-run': { type: 'boolean' },
      table: { type: 'string', multiple: true },
    },
    allowPositionals: true,
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return;
  }

  if (command === 'token') {
    const [name, ...roles] = rest;
    if (!name || roles.length === 0) throw new Error('usage: load-control token <name> <roles…>');
    const token = generateToken();
    const entry = tokenConfigEntry(name, roles, token);
    console.log(`token: ${token}\n\nadd under auth.tokens in the configuration:\n${formatTokenEntry(entry)}`);
    return;
  }

  const config = loadConfig({ configPath: values.config });
  const log = createLogger(config.logging, command);
  const shutdown = createShutdown({ log, timeoutMs: config.server.shutdownTimeout });
  shutdown.handleSignals();
  const stop = shutdown.stop;

  try {
    switch (command) {
      case 'migrate': {
        const { applied } = await migrate(await migrationUrl(config, log, shutdown), { log: (m) => log.info(m) });
        log.info({ applied }, 'migrated');
        await stop(0);
        return;
      }
      case 'grants': {
        const [role] = rest;
        if (!role) throw new ConfigError(['usage: load-control grants <role> [--apply]']);
        const client = new pg.Client({
          connectionString: await migrationUrl(config, log, shutdown),
          application_name: 'load-control grants',
        });
        await client.connect();
        try {
          const statements = await applicationGrants(client, role);
          if (values.apply) {
            await client.query(`BEGIN; ${statements.join('\n')} COMMIT;`);
            log.info({ role, statements: statements.length }, 'grants_applied');
          }
          console.log(statements.join('\n'));
        } finally {
          await client.end();
        }
        await stop(0);
        return;
      }
      case 'serve':
      case 'start': {
        await traceProcess(config, log, command, shutdown);
        const { url, embedded } = await openDatabase(config, log, command === 'start', shutdown);
        const direct = sessionUrl(config, url);
        if (command === 'start') await migrate(embedded ? url : (config.database.migrationUrl ?? direct), { log: (m) => log.info(m) });
        else await requireCurrentSchema(direct, config, log);
        let effective = config;
        let devTokens: ReturnType<typeof developmentTokens> = [];
        if (embedded && config.auth.tokens.length === 0) {
          devTokens = developmentTokens();
          effective = { ...config, auth: { tokens: devTokens.map((t) => tokenConfigEntry(t.name, t.roles, t.token)) } };
        }
        const db = createDb(url, {
          poolSize: effective.database.poolSize,
          timeouts: effective.database,
          onNotifyError: notifyFailed(log),
          transactionPooler: behindTransactionPooler(effective),
        });
        shutdown.close('database', () => db.close());
        log.info({ config: describeConfig(effective) }, 'config');
        const metrics = createApiMetrics();
        const readinessChecks: Array<() => boolean> = [];
        // one LISTEN connection for the whole process: realtime's channels and, with `start`, the dispatcher's
        const listener = startListener({ url: direct, log, applicationName: PROCESS_LISTENER_NAME, timeouts: effective.database });
        shutdown.close('listen', () => listener.close());
        const worker = command === 'start' ? startWorker({ config: effective, db, log, registry: metrics.registry, listener }) : null;
        if (worker) {
          shutdown.drain(
            'worker',
            () => worker.stop(),
            () => worker.open(),
          );
          if (config.nifi.tls) process.on('SIGHUP', () => worker.reloadTls());
          readinessChecks.push(worker.listening);
        }
        const heartbeat = startHeartbeat({
          db,
          log,
          role: command,
          dispatcher: worker?.dispatching ?? false,
          sweeper: worker !== null,
          registry: metrics.registry,
          lastSweepAt: worker?.lastSweepAt,
        });
        shutdown.close('heartbeat', () => heartbeat.stop());
        const base = await runServe(effective, log, db, url, shutdown, listener, metrics, readinessChecks);
        console.log(`\nLoad Control is up.\n  GraphQL + GraphiQL: ${base}/graphql\n  console:            ${base}/`);
        for (const t of devTokens) console.log(`  token ${t.name.padEnd(13)} (${t.roles.join(', ')}): ${t.token}`);
        console.log('  Ctrl-C stops everything.\n');
        return;
      }
      case 'work': {
        if (!config.nifi.receiverUrl) {
          throw new ConfigError([
            "config: nifi.receiverUrl: required by the worker (set LC_NIFI__RECEIVER_URL to the URL of NiFi's control receiver)",
          ]);
        }
        const metricsPort = values['metrics-port'] === undefined ? undefined : Number(values['metrics-port']);
        if (metricsPort !== undefined && !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort <= 65535)) {
          throw new ConfigError(['--metrics-port: must be a port number (0 picks a free one)']);
        }
        await traceProcess(config, log, command, shutdown);
        // the worker's loops hold sessions (LISTEN, leases, long sweeps): never through a transaction pooler
        const url = sessionUrl(config, (await openDatabase(config, log, false, shutdown)).url);
        await requireCurrentSchema(url, config, log);
        const db = createDb(url, { poolSize: config.database.poolSize, timeouts: config.database, onNotifyError: notifyFailed(log) });
        shutdown.close('database', () => db.close());
        const registry = new Registry();
        collectProcessMetrics(registry);
        observeRunLockWaits(registry);
        const worker = startWorker({ config, db, log, registry });
        const heartbeat = startHeartbeat({
          db,
          log,
          role: 'work',
          dispatcher: worker.dispatching,
          sweeper: true,
          registry,
          lastSweepAt: worker.lastSweepAt,
        });
        shutdown.close('heartbeat', () => heartbeat.stop());
        shutdown.drain(
          'worker',
          () => worker.stop(),
          () => worker.open(),
        );
        if (config.nifi.tls) process.on('SIGHUP', () => worker.reloadTls());
        if (metricsPort !== undefined) {
          // it keeps serving while the worker drains: /readyz answers 503, /metrics still answer
          const ready = async () => !shutdown.stopping() && worker.listening() && (await checkDatabase(db.pool)).ok;
          const health = await serveWorkerHealth({ registry, ready, port: metricsPort, host: config.server.host });
          shutdown.close('health-server', () => health.close());
          log.info({ port: health.port }, 'worker_metrics_listening');
        }
        return;
      }
      case 'purge': {
        const now = new Date();
        let before = new Date(now.getTime() - config.retention.ledger);
        try {
          if (values.before !== undefined) before = parseBefore(values.before, now);
        } catch (error) {
          throw new ConfigError([(error as Error).message]);
        }
        const url = sessionUrl(config, (await openDatabase(config, log, false, shutdown)).url);
        await requireCurrentSchema(url, config, log);
        const db = createDb(url, { poolSize: 1, timeouts: config.database });
        shutdown.close('database', () => db.close());
        await runPurgeCommand({ db, before, dryRun: values['dry-run'] ?? false, print: (line) => console.log(line) });
        await stop(0);
        return;
      }
      case 'compact': {
        let tables: ReturnType<typeof compactedTables>;
        try {
          tables = compactedTables(values.table ?? []);
        } catch (error) {
          throw new ConfigError([(error as Error).message]);
        }
        const url = await migrationUrl(config, log, shutdown);
        await requireCurrentSchema(url, config, log);
        const client = new pg.Client({
          connectionString: url,
          application_name: 'load-control compact',
          connectionTimeoutMillis: config.database.connectTimeout,
        });
        await client.connect();
        shutdown.close('database', () => client.end());
        try {
          await runCompactCommand({ client, tables, dryRun: values['dry-run'] ?? false, print: (line) => console.log(line) });
        } catch (error) {
          if (error instanceof CompactionRefusedError) throw new ConfigError([error.message]);
          throw error;
        }
        await stop(0);
        return;
      }
      default:
        console.error(USAGE);
        process.exitCode = 2;
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      await stop(2);
    }
    if (error instanceof SchemaBehindError) {
      console.error(error.message);
      log.error({ err: error }, 'schema_behind');
      await stop(3);
    }
    log.error({ err: error }, 'startup_failed');
    await stop(1);
  }
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
