import pg from 'pg';
// The wiring every database command shares, written once: configuration, logger, signals and shutdown, the
// database (embedded for `start`), the schema check, and what `start`, `serve` and `work` run beside their work.
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { ConfigError, loadConfig, type Config } from '../config/config.js';
import { behindTransactionPooler, createDb, type Db } from '../db/client.js';
import { EmbeddedPostgresMissingError, startEmbeddedPostgres } from '../db/embedded.js';
import type { Listener } from '../db/listener.js';
import { migrate, readSchemaStatus } from '../db/migrate.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { startTracing } from '../tracing/tracing.js';
import type { ProcessRole } from '../domain/processes/processes.js';
import { startHeartbeat } from '../worker/heartbeat.js';
import { startWorker, type Worker } from '../worker/worker.js';
import { createShutdown, type Shutdown } from './shutdown.js';

/** The options `load-control` parses for every command; each command reads those it knows. */
interface CliOptions {
  config?: string;
  'metrics-port'?: string;
  apply?: boolean;
  before?: string;
  'dry-run'?: boolean;
  table?: string[];
  export?: string;
  schema?: string;
}

export interface Invocation {
  /** The command's name, also the logger's service and the heartbeat's role. */
  name: string;
  /** The positional arguments after the command's name. */
  args: string[];
  options: CliOptions;
}

export interface Command {
  /** Its lines under `commands:` in the usage. */
  usage: string;
  run(invocation: Invocation): Promise<void>;
}

export interface CommandContext extends Invocation {
  config: Config;
  log: Logger;
  shutdown: Shutdown;
}

/** What a command's body answers: `done` stops the process (exit 0), `running` leaves it serving until a signal. */
type Outcome = 'done' | 'running';

export const DATA_DIR = '.data';

class SchemaBehindError extends Error {
  override name = 'SchemaBehindError';
}

/**
 * Runs a command as a process: loads the configuration, logs as the command, stops on SIGTERM and SIGINT.
 * A ConfigError exits 2 (its message on stderr), a database behind this release's schema 3, anything else 1.
 */
export async function asProcess(invocation: Invocation, body: (context: CommandContext) => Promise<Outcome>): Promise<void> {
  const config = loadConfig({ configPath: invocation.options.config });
  const log = createLogger(config.logging, invocation.name);
  const shutdown = createShutdown({ log, timeoutMs: config.server.shutdownTimeout });
  shutdown.handleSignals();
  try {
    if ((await body({ ...invocation, config, log, shutdown })) === 'done') await shutdown.stop(0);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      await shutdown.stop(2);
    }
    if (error instanceof SchemaBehindError) {
      console.error(error.message);
      log.error({ err: error }, 'schema_behind');
      await shutdown.stop(3);
    }
    log.error({ err: error }, 'startup_failed');
    await shutdown.stop(1);
  }
}

/** A command-line value the command refuses: exit 2 with the message, as for the configuration. */
export function checkedOption<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
}

export async function openDatabase(
  { config, log, shutdown }: CommandContext,
  allowEmbedded: boolean,
): Promise<{ url: string; embedded: boolean }> {
  if (config.database.url) return { url: config.database.url, embedded: false };
  if (!allowEmbedded) throw new ConfigError(['config: database.url: required (set DATABASE_URL or LC_DATABASE__URL)']);
  const embedded = await startEmbeddedPostgres({
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
export async function migrationUrl(context: CommandContext): Promise<string> {
  const { database } = context.config;
  return database.migrationUrl ?? database.directUrl ?? (await openDatabase(context, false)).url;
}

/**
 * A session as database.migrationUrl for a command that rewrites the ledger in bulk (compact, import-archive): the
 * schema checked first, the connection closed by the shutdown.
 */
export async function openMigrationSession(context: CommandContext, command: string): Promise<pg.Client> {
  const url = await migrationUrl(context);
  await requireCurrentSchema(context, url);
  const client = new pg.Client({
    connectionString: url,
    application_name: `load-control ${command}`,
    connectionTimeoutMillis: context.config.database.connectTimeout,
  });
  await client.connect();
  context.shutdown.close('database', () => client.end());
  return client;
}

/**
 * Where what needs a session of its own connects — LISTEN, session advisory locks, `work`'s loops, the schema
 * check: database.directUrl when database.url leads to a transaction pooler, else database.url.
 */
export function sessionUrl(config: Config, url: string): string {
  return config.database.directUrl ?? url;
}

/** The application runs no DDL: a database that lacks this release's schema is refused, naming what is missing. */
export async function requireCurrentSchema({ config, log }: CommandContext, url: string): Promise<void> {
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
 * The database of a long-running process (`start`, `serve`, `work`), after its tracing: tracing starts before
 * anything that makes spans and exports its last spans once everything else closed (a close registered first
 * runs last). `start` may run an embedded PostgreSQL and migrates; the others check the schema.
 */
export async function openServiceDatabase(
  context: CommandContext,
  { start, sessions }: { start: boolean; sessions: boolean },
): Promise<{ db: Db; url: string; directUrl: string; embedded: boolean }> {
  const { config, log, shutdown } = context;
  const tracing = await startTracing(config.tracing, { role: context.name, log });
  if (tracing) shutdown.close('tracing', () => tracing.shutdown());
  const opened = await openDatabase(context, start);
  const directUrl = sessionUrl(config, opened.url);
  // the worker's loops hold sessions (LISTEN, leases, long sweeps): never through a transaction pooler
  const url = sessions ? directUrl : opened.url;
  if (start) await migrate(opened.embedded ? url : (config.database.migrationUrl ?? directUrl), { log: (m) => log.info(m) });
  else await requireCurrentSchema(context, directUrl);
  // a wake-up or progress NOTIFY that failed after its commit: the answer stands, the next poll catches up
  const onNotifyError = (error: unknown) => log.debug({ err: error }, 'notify_failed');
  const db = createDb(url, {
    poolSize: config.database.poolSize,
    timeouts: config.database,
    onNotifyError,
    transactionPooler: !sessions && behindTransactionPooler(config),
  });
  shutdown.close('database', () => db.close());
  return { db, url, directUrl, embedded: opened.embedded };
}

/** The dispatcher and sweeper of `start` and `work`: drained on shutdown, their NiFi certificates re-read on SIGHUP. */
export function startWorkerLoops(
  { log, shutdown }: CommandContext,
  options: { config: Config; db: Db; registry: Registry; listener?: Listener },
): Worker {
  const worker = startWorker({ ...options, log });
  shutdown.drain(
    'worker',
    () => worker.stop(),
    () => worker.open(),
  );
  if (options.config.nifi.tls) process.on('SIGHUP', () => worker.reloadTls());
  return worker;
}

/** This process's row in the processes list, with what it runs; stopped (and its row marked) on shutdown. */
export function startProcessHeartbeat(
  { log, shutdown }: CommandContext,
  options: { role: ProcessRole; db: Db; registry: Registry; worker: Worker | null },
): void {
  const { role, db, registry, worker } = options;
  const heartbeat = startHeartbeat({
    db,
    log,
    role,
    dispatcher: worker?.dispatching ?? false,
    sweeper: worker !== null,
    registry,
    lastSweepAt: worker?.lastSweepAt,
  });
  shutdown.close('heartbeat', () => heartbeat.stop());
}
