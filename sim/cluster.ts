// The Load Control processes under test: API processes (`load-control serve`) and workers (`load-control work`),
// children of the simulator, each on a fixed port so that a process killed with SIGKILL comes back where its
// clients expect it. Also the database-side fault: terminating the processes' connections.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, spawnCli, waitUntilReady } from '../bench/support.js';
import { hashToken } from '../src/auth/tokens.js';
import { SIM_TOKENS, type Log } from './client.js';

/** The simulator's own connections carry this name and are never terminated by the pg-terminate fault. */
export const SIM_APPLICATION_NAME = 'lc-simulator';

export interface ClusterOptions {
  databaseUrl: string;
  receiverUrl: string;
  apis: number;
  workers: number;
  fromSource: boolean;
  logDir: string;
  log: Log;
}

/** recovery.stale: a worker paused longer than this loses its partition to a new owner. */
export const STALE_MS = 3_000;
/** nifi.timeoutSeconds: how long the worker waits for the receiver's answer. */
const RECEIVER_WAIT_SECONDS = 1;
/** A receiver that answers after this long has made the worker give up on the call. */
export const RECEIVER_TIMEOUT_MS = RECEIVER_WAIT_SECONDS * 1000 + 600;

/**
 * Short timings so that recovery happens within seconds (README "Configuration"): REISSUE mode, partitions
 * stale after 3 s, unacknowledged calls re-sent after 4 s, backfills advanced twice a second, publishing unknown after 5 s, a sweep twice a
 * second, ended runs due for cleanup after 1 s; the worker gives the receiver 1 s. Every process gets the same
 * settings.
 */
const SIM_SETTINGS: Record<string, string> = {
  LC_RECOVERY__MODE: 'REISSUE',
  LC_RECOVERY__STALE: String(STALE_MS / 1000),
  LC_MONITOR__STALL_AFTER: String(STALE_MS / 2000),
  LC_RECOVERY__EXTRACT_QUERY_TIMEOUT: '2',
  LC_RECOVERY__MAX_ATTEMPTS: '5',
  LC_RECOVERY__RUN_TIMEOUT: '900',
  LC_RECOVERY__VALIDATION_STALE: '6',
  LC_RECOVERY__PUBLISH_STALE: '5',
  LC_RECOVERY__SWEEPER_INTERVAL: '0.5',
  LC_DISPATCH__ACK_TIMEOUT: '4',
  LC_DISPATCH__LEASE: '3',
  LC_DISPATCH__POLL_INTERVAL: '0.5',
  LC_DISPATCH__BACKOFF_MIN: '0.2',
  LC_DISPATCH__BACKOFF_MAX: '1',
  LC_NIFI__TIMEOUT_SECONDS: String(RECEIVER_WAIT_SECONDS),
  // a backfill's next dates start half a second after their predecessors ended
  LC_BACKFILL__PUMP_INTERVAL: '0.5',
  // PG-70 cleans up a run a second after it ended
  LC_CLEANUP__SUCCESS_RETENTION: '1',
  LC_CLEANUP__FAILED_RETENTION: '1',
};

class ManagedProcess {
  child: ChildProcess | undefined;
  kills = 0;

  constructor(
    readonly name: string,
    private readonly command: 'serve' | 'work',
    readonly port: number,
    private readonly env: Record<string, string>,
    private readonly options: ClusterOptions,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = this.command === 'work' ? ['--metrics-port', String(this.port)] : [];
    this.child = spawnCli(
      this.command,
      { ...this.env, PGAPPNAME: `lc-sim-${this.name}` },
      {
        fromSource: this.options.fromSource,
        args,
        logFile: join(this.options.logDir, `${this.name}.log`),
      },
    );
    await waitUntilReady(this.url, this.child, 90_000);
  }

  /** SIGKILL: no shutdown hook runs, in-flight transactions die with their connections. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.kills++;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

export class Cluster {
  readonly apis: ManagedProcess[] = [];
  readonly workers: ManagedProcess[] = [];
  terminatedConnections = 0;
  private readonly admin: pg.Pool;

  private constructor(private readonly options: ClusterOptions) {
    this.admin = new pg.Pool({ connectionString: options.databaseUrl, max: 2, application_name: SIM_APPLICATION_NAME });
    this.admin.on('error', () => undefined);
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    const cluster = new Cluster(options);
    const env = {
      DATABASE_URL: options.databaseUrl,
      LC_SERVER__HOST: '127.0.0.1',
      LC_LOGGING__LEVEL: 'warn',
      LC_NIFI__RECEIVER_URL: options.receiverUrl,
      LC_AUTH__TOKENS: JSON.stringify(
        Object.entries(SIM_TOKENS).map(([role, t]) => ({ name: t.name, sha256: hashToken(t.token), roles: [role] })),
      ),
      ...SIM_SETTINGS,
    };
    for (let i = 1; i <= options.apis; i++) {
      const port = await freePort();
      cluster.apis.push(new ManagedProcess(`api-${i}`, 'serve', port, { ...env, PORT: String(port) }, options));
    }
    for (let i = 1; i <= options.workers; i++) {
      cluster.workers.push(new ManagedProcess(`worker-${i}`, 'work', await freePort(), env, options));
    }
    // the first API migrates the database; the others start once it has
    await cluster.apis[0]!.start();
    await Promise.all([...cluster.apis.slice(1), ...cluster.workers].map((p) => p.start()));
    return cluster;
  }

  endpoints = (): readonly string[] => this.apis.map((a) => a.url);

  async restart(process: ManagedProcess, downMs: number): Promise<void> {
    await process.kill();
    this.options.log(`fault kill ${process.name}; restarting in ${downMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, downMs));
    await process.start();
    this.options.log(`${process.name} is back`);
  }

  /** pg_terminate_backend on every connection to the database but the simulator's own: API pools, LISTENs, workers. */
  async terminateConnections(): Promise<number> {
    const { rows } = await this.admin.query<{ n: number }>(
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND application_name IS DISTINCT FROM $1`,
      [SIM_APPLICATION_NAME],
    );
    this.terminatedConnections += rows[0]!.n;
    this.options.log(`fault pg-terminate: ${rows[0]!.n} connections`);
    return rows[0]!.n;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.apis, ...this.workers].map((p) => p.stop()));
    await this.admin.end();
  }

  /** Synchronous last resort when the simulator itself dies: no child may outlive it. */
  killAll(): void {
    for (const p of [...this.apis, ...this.workers]) {
      if (p.child && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    }
  }
}

export type { ManagedProcess };
