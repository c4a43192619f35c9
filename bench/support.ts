// Shared by the benchmarks: a database (DATABASE_URL or an embedded PostgreSQL), a served API as a child
// process, and an HTTP/1.1 keep-alive GraphQL client with latency recording.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import { type Document, documentText } from '../schema/documents/graphql.js';
import { NIFI_REQUESTS } from '../schema/documents/nifi.js';
import { hashToken } from '../src/auth/tokens.js';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { migrate } from '../src/db/migrate.js';

export const BENCH_TOKEN = 'bench-nifi-token';

/** The NiFi calls the benchmarks make, as the kit sends them. */
export const {
  'PG-10/createRun': CREATE_RUN,
  'PG-10/registerManifest': REGISTER_MANIFEST,
  'PG-20/claimPartition': CLAIM_PARTITION,
  'PG-20/reportChunk': REPORT_CHUNK,
} = NIFI_REQUESTS;

const ROOT = new URL('..', import.meta.url).pathname;

export interface BenchDatabase {
  url: string;
  close(): Promise<void>;
}

/** A fresh, migrated database on DATABASE_URL's server, or on an embedded PostgreSQL in a temp dir. */
export async function benchDatabase(): Promise<BenchDatabase> {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let dataDir: string | undefined;
  if (!adminUrl) {
    dataDir = mkdtempSync(join(tmpdir(), 'lc-bench-pg-'));
    const embedded = await startEmbeddedPostgres({ dataDir });
    adminUrl = embedded.url;
    stopEmbedded = embedded.stop;
  }
  const name = `lc_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  return {
    url: url.toString(),
    async close() {
      const drop = new pg.Client({ connectionString: adminUrl });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
      await stopEmbedded?.();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** e.g. BENCH_API_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the API under a benchmark's load */
function apiNodeArgs(): string[] {
  return process.env.BENCH_API_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
}

export interface ServedApi {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** `load-control <command>` from the build, as a separate process, like production. */
export async function startCli(
  command: 'serve' | 'work' | 'start',
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<ServedApi> {
  const port = await freePort();
  const child = spawn(process.execPath, [...apiNodeArgs(), join(ROOT, 'dist/cli.js'), command], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      LC_SERVER__HOST: '127.0.0.1',
      LC_LOGGING__LEVEL: 'warn',
      LC_AUTH__TOKENS: JSON.stringify([{ name: 'bench', sha256: hashToken(BENCH_TOKEN), roles: ['nifi', 'operator'] }]),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  if (command !== 'work') {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${url}/readyz`)).ok) break;
      } catch {
        // not listening yet
      }
      if (i > 300) throw new Error(`${command} did not become ready`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    process: child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

// undici, not node:http: per request it costs the load generator half the CPU (44–64 µs against 95–120 at 32
// clients on this machine) and sends each request in one write, which the API then reads in one go. The load
// generator shares the two cores with the API and PostgreSQL, so its cost shows in every throughput figure.
const pools = new Map<string, Pool>();

function poolFor(url: string): Pool {
  const { origin } = new URL(url);
  let pool = pools.get(origin);
  if (!pool) {
    pool = new Pool(origin, { connections: 256 });
    pools.set(origin, pool);
  }
  return pool;
}

export interface GqlResult {
  status: number;
  body: any;
}

export function gql(url: string, query: string | Document, variables: unknown): Promise<GqlResult> {
  return gqlRequest(url, query, variables);
}

export interface Measured {
  count: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Runs `count` operations with `concurrency` clients; latency in ms per operation. */
export async function measure(count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<Measured> {
  const latencies = new Float64Array(count);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) {
        const t0 = performance.now();
        await op(i);
        latencies[i] = performance.now() - t0;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort();
  return {
    count,
    seconds,
    perSecond: count / seconds,
    p50: latencies[Math.floor(count * 0.5)]!,
    p99: latencies[Math.min(count - 1, Math.floor(count * 0.99))]!,
  };
}

/** wrk, from Debian's package (apt-get install -y wrk): the load generator of the reportChunk benchmark when present. */
export function wrkInstalled(): boolean {
  return spawnSync('wrk', ['--version']).error === undefined;
}

export interface ReportLoad {
  runId: string;
  hdfsRunPath: string;
  chunkCount: number;
  /** Reports to send: report n is chunk floor(n / partitions) of partition n % partitions. */
  count: number;
  /** One claim token per partition, partition n being String(n).padStart(4, '0'). */
  tokens: string[];
}

export interface ReportLoadResult extends Measured {
  validationScheduled: number;
  /** CPU microseconds the load generator used per report. */
  loadGeneratorCpuUs: number;
}

/**
 * Sends the reports with wrk (bench/report-chunk.lua), `clients` connections with one request in flight each.
 * wrk is C: per request it costs the two cores a fraction of what a Node client does, which the API and
 * PostgreSQL then have. The script says when the last report was answered; the time is taken then.
 */
export async function wrkReports(url: string, load: ReportLoad, clients: number): Promise<ReportLoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'lc-bench-wrk-'));
  const params = join(dir, 'params');
  writeFileSync(params, `${[load.runId, load.hdfsRunPath, load.chunkCount, load.count, ...load.tokens].join('\n')}\n`);
  const started = performance.now();
  const child = spawn('wrk', ['-t1', `-c${clients}`, '-d3600s', '--timeout', '30s', '-s', join(ROOT, 'bench/report-chunk.lua'), url], {
    env: { ...process.env, LC_BENCH_WRK_PARAMS: params, LC_BENCH_TOKEN: BENCH_TOKEN },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let seconds: number | undefined;
  let cpuSeconds = 0;
  child.stdout.on('data', (data: Buffer) => {
    out += data.toString();
    if (seconds === undefined && out.includes('answered all\n')) {
      seconds = (performance.now() - started) / 1000;
      cpuSeconds = processCpuSeconds(child.pid!);
      child.kill('SIGINT'); // wrk then prints its summary and calls the script's done()
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
  const line = out.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line || seconds === undefined) throw new Error(`wrk ended (exit ${code}) before every report was answered:\n${out}`);
  const result = JSON.parse(line.slice('RESULT '.length)) as {
    failed: number;
    scheduled: number;
    p50us: number;
    p99us: number;
    firstFailure: string;
  };
  if (result.failed > 0) throw new Error(`${result.failed} reports failed; the first answer: ${result.firstFailure}`);
  return {
    count: load.count,
    seconds,
    perSecond: load.count / seconds,
    p50: result.p50us / 1000,
    p99: result.p99us / 1000,
    validationScheduled: result.scheduled,
    loadGeneratorCpuUs: (cpuSeconds / load.count) * 1e6,
  };
}

export function printTable(title: string, rows: Array<Record<string, string | number>>): void {
  console.log(`\n${title}`);
  console.table(rows);
}

export const fmt = (n: number, digits = 1) => Number(n.toFixed(digits));

/** The middle value (the upper one of an even count): rounds of a benchmark are compared by their medians. */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks of 1/100 s
}

/**
 * CPU seconds used by all PostgreSQL server processes on this machine, those that have ended included: a
 * postmaster's children's time (cutime + cstime) holds what its reaped backends and autovacuum workers used.
 */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (!comm.startsWith('postgres')) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const parentComm = readFileSync(`/proc/${fields[1]}/comm`, 'utf8').trim();
      const ended = parentComm.startsWith('postgres') ? 0 : Number(fields[13]) + Number(fields[14]);
      total += (Number(fields[11]) + Number(fields[12]) + ended) / 100;
    } catch {
      // the process ended while we looked
    }
  }
  return total;
}

export interface CliProcessOptions {
  /** Run src/cli.ts through tsx (the code in the tree) instead of dist/cli.js (the build). */
  fromSource?: boolean;
  /** Arguments after the command (e.g. --metrics-port 0). */
  args?: string[];
  /** Appends the child's stdout and stderr to this file; otherwise stderr is inherited. */
  logFile?: string;
}

/** Our environment without load-control's own settings, which the caller gives explicitly. */
function inheritedEnv(): Record<string, string> {
  const own = (name: string) => name.startsWith('LC_') || ['DATABASE_URL', 'PORT', 'PGAPPNAME'].includes(name);
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !own(e[0])));
}

/**
 * `load-control <command>` as a child process with the environment given (and none of our own LC_ settings), for
 * callers that manage ports, tokens and restarts themselves (the simulator). Returns at once.
 */
export function spawnCli(command: 'serve' | 'work' | 'start', env: Record<string, string>, options: CliProcessOptions = {}): ChildProcess {
  const entry = [...apiNodeArgs(), ...(options.fromSource ? ['--import', 'tsx', join(ROOT, 'src/cli.ts')] : [join(ROOT, 'dist/cli.js')])];
  const out = options.logFile ? openSync(options.logFile, 'a') : 'ignore';
  const child = spawn(process.execPath, [...entry, command, ...(options.args ?? [])], {
    cwd: ROOT,
    env: { ...inheritedEnv(), ...env },
    stdio: ['ignore', out, options.logFile ? out : 'inherit'],
  });
  if (typeof out === 'number') closeSync(out);
  return child;
}

/** Polls `${url}/readyz` until it answers 200; throws after timeoutMs or when the process exits first. */
export async function waitUntilReady(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${url}: the process exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    try {
      if ((await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) })).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url}: not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface GqlRequestOptions {
  token?: string;
  /** The request fails with an error named TimeoutError after this long. */
  timeoutMs?: number;
  /** Default application/json. */
  contentType?: string;
  headers?: Record<string, string>;
}

/** Like gql(), with a chosen token and a time limit; non-JSON bodies come back as { raw } instead of throwing. */
export function gqlRequest(url: string, query: string | Document, variables: unknown, options: GqlRequestOptions = {}): Promise<GqlResult> {
  return gqlPost(url, JSON.stringify({ query: documentText(query), variables }), options);
}

/** POSTs a request body made elsewhere (a NiFi request template's), as it is; the answer's text too. */
export async function gqlPost(
  url: string,
  requestBody: string,
  options: GqlRequestOptions = {},
): Promise<GqlResult & { text: string; headers: Record<string, string | string[] | undefined> }> {
  const { statusCode, headers, body } = await poolFor(url).request({
    path: '/graphql',
    method: 'POST',
    headers: {
      ...options.headers,
      'content-type': options.contentType ?? 'application/json',
      authorization: `Bearer ${options.token ?? BENCH_TOKEN}`,
    },
    body: requestBody,
    // aborts with a DOMException named TimeoutError
    signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
  });
  const text = await body.text();
  try {
    return { status: statusCode, body: JSON.parse(text), text, headers };
  } catch {
    return { status: statusCode, body: { raw: text }, text, headers };
  }
}

/** Resident memory of a process in MB (VmRSS from /proc). */
export function rssMegabytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

export interface RssSampler {
  /** Stops sampling: the first, highest and last sample in MB. */
  stop(): { startMb: number; peakMb: number; endMb: number };
}

/** Samples a process's VmRSS every intervalMs until stopped (e.g. the API's memory under a benchmark's load). */
export function sampleRss(pid: number, intervalMs = 100): RssSampler {
  const samples = [rssMegabytes(pid)];
  const timer = setInterval(() => {
    try {
      samples.push(rssMegabytes(pid));
    } catch {
      // the process ended
    }
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      samples.push(rssMegabytes(pid));
      const seen = samples.filter((s) => Number.isFinite(s));
      return { startMb: seen[0]!, peakMb: Math.max(...seen), endMb: seen[seen.length - 1]! };
    },
  };
}
