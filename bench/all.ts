// npm run bench: every benchmark, one after the other on one PostgreSQL server, then — on the same server, in
// the same run — pgbench's single-row durable UPDATE with 16 clients as the reference point, and one table of
// everything with each throughput's ratio to pgbench's TPS.
// Usage: npm run bench   (builds, then runs this; DATABASE_URL names the server to use, else an embedded one
// is started with PostgreSQL's durable defaults). Each benchmark creates and drops its own database there.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { fmt, printTable } from './support.js';

const ROOT = new URL('..', import.meta.url).pathname;
const BENCHES = ['report-chunk', 'dispatch', 'realtime', 'hostile'] as const;
type BenchName = (typeof BENCHES)[number];
const PGBENCH_CLIENTS = 16;
const PGBENCH_SECONDS = 10;
const PGBENCH_ACCOUNTS = 100_000; // scale 1

interface BenchRun {
  name: BenchName;
  code: number | null;
  seconds: number;
  /** The benchmark's final JSON line ({"bench": name, …}), when it prints one. */
  json: Record<string, any> | undefined;
  /** Every console.table it printed, as rows of column → cell text. */
  tables: Array<Array<Record<string, string>>>;
}

/** Runs bench/<name>.ts as a child on the given server, passing its output through. */
function runBench(name: BenchName, databaseUrl: string): Promise<BenchRun> {
  const started = performance.now();
  console.log(`\n=== ${name} ===`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', `${name}.ts`)], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      process.stdout.write(d);
    });
    child.on('exit', (code) =>
      resolve({
        name,
        code,
        seconds: (performance.now() - started) / 1000,
        json: jsonLine(output, name),
        tables: consoleTables(output),
      }),
    );
  });
}

function jsonLine(output: string, name: string): Record<string, any> | undefined {
  for (const line of output.split('\n').reverse()) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line);
      if (parsed?.bench === name) return parsed;
    } catch {
      // not a JSON line after all
    }
  }
  return undefined;
}

/** console.table's box drawing back into rows: the first │-line of a box is its header. */
function consoleTables(output: string): Array<Array<Record<string, string>>> {
  const tables: Array<Array<Record<string, string>>> = [];
  let header: string[] | undefined;
  let rows: Array<Record<string, string>> = [];
  const cells = (line: string) =>
    line
      .split('│')
      .slice(1, -1)
      .map((c) => c.trim().replace(/^'(.*)'$/, '$1'));
  for (const line of output.split('\n').map((l) => l.trim())) {
    if (line.startsWith('┌')) {
      header = undefined;
      rows = [];
    } else if (line.startsWith('│')) {
      if (!header) header = cells(line);
      else rows.push(Object.fromEntries(cells(line).map((cell, i) => [header![i]!, cell])));
    } else if (line.startsWith('└') && header) {
      tables.push(rows);
      header = undefined;
    }
  }
  return tables;
}

/** A number from a table row whose `measure` matches: "1234", "1234 (1000)", or the mean of "1200, 1300". */
function measured(run: BenchRun | undefined, measure: RegExp): number | undefined {
  for (const rows of run?.tables ?? []) {
    const row = rows.find((r) => measure.test(r.measure ?? ''));
    if (!row) continue;
    const list = /^[\d.]+(, [\d.]+)+$/.test(row.value ?? '') ? row.value!.split(', ').map(Number) : [Number.parseFloat(row.value ?? '')];
    const value = list.reduce((a, b) => a + b, 0) / list.length;
    if (Number.isFinite(value)) return value;
  }
  return undefined;
}

function findPgbench(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'pgbench'))) return join(dir, 'pgbench');
  }
  const installed = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a)) : [];
  return installed.map((v) => `/usr/lib/postgresql/${v}/bin/pgbench`).find((p) => existsSync(p));
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

interface PgbenchResult {
  tps: number;
  settings: Record<string, string>;
}

/** Single-row UPDATEs of pgbench_accounts, 16 clients, synchronous_commit on: the server's durable-commit ceiling. */
async function pgbench(serverUrl: string): Promise<PgbenchResult> {
  const binary = findPgbench();
  if (!binary) throw new Error('pgbench not found (PATH, /usr/lib/postgresql/*/bin): install postgresql-client');
  const name = `lc_pgbench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const dir = mkdtempSync(join(tmpdir(), 'lc-pgbench-'));
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    const { rows } = await admin.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'full_page_writes')`,
    );
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const init = await run(binary, ['-i', '-s', '1', '-q', url.toString()], {});
    if (init.code !== 0) throw new Error(`pgbench -i failed:\n${init.output}`);
    const script = join(dir, 'update.sql');
    writeFileSync(
      script,
      `\\set aid random(1, ${PGBENCH_ACCOUNTS})\nUPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n`,
    );
    console.log(`\n=== pgbench: single-row UPDATE, ${PGBENCH_CLIENTS} clients, ${PGBENCH_SECONDS} s ===`);
    const result = await run(
      binary,
      ['-n', '-c', String(PGBENCH_CLIENTS), '-j', '2', '-T', String(PGBENCH_SECONDS), '-f', script, url.toString()],
      { PGOPTIONS: '-c synchronous_commit=on' },
    );
    console.log(result.output.trim());
    const tps = /tps = ([\d.]+)/.exec(result.output)?.[1];
    if (result.code !== 0 || !tps) throw new Error(`pgbench failed:\n${result.output}`);
    return { tps: Number(tps), settings: Object.fromEntries(rows.map((r) => [r.name, r.setting])) };
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  let serverUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let dataDir: string | undefined;
  if (!serverUrl) {
    dataDir = mkdtempSync(join(tmpdir(), 'lc-bench-all-pg-'));
    chmodSync(dataDir, 0o755); // the server runs as the postgres OS user when we are root
    const embedded = await startEmbeddedPostgres({ dataDir: join(dataDir, 'data') });
    serverUrl = embedded.url;
    stopEmbedded = embedded.stop;
  }
  try {
    const runs = new Map<BenchName, BenchRun>();
    for (const name of BENCHES) runs.set(name, await runBench(name, serverUrl));
    const reference = await pgbench(serverUrl).catch((error: Error) => {
      console.error(error.message);
      return undefined;
    });

    const chunk = runs.get('report-chunk')?.json;
    const dispatch = runs.get('dispatch');
    const realtime = runs.get('realtime');
    const hostile = runs.get('hostile')?.json;
    const rows: Array<{ measure: string; value: number | undefined; unit: string; throughput?: boolean }> = [
      { measure: 'reportChunk, run of 8 partitions', value: chunk?.p8?.perSecond, unit: 'reports/s', throughput: true },
      { measure: 'reportChunk latency p50 / p99, 8 partitions', value: chunk?.p8?.p50, unit: `ms (p99 ${fmt(chunk?.p8?.p99 ?? NaN, 2)})` },
      { measure: 'reportChunk, run of 10,000 partitions', value: chunk?.p10000?.perSecond, unit: 'reports/s', throughput: true },
      {
        measure: 'reportChunk latency p50 / p99, 10,000 partitions',
        value: chunk?.p10000?.p50,
        unit: `ms (p99 ${fmt(chunk?.p10000?.p99 ?? NaN, 2)})`,
      },
      { measure: 'claimPartition', value: chunk?.claims?.perSecond, unit: 'claims/s', throughput: true },
      {
        measure: 'dispatch: deliveries to the receiver',
        value: dispatch?.json?.deliveriesPerSecond ?? measured(dispatch, /^deliveries\/s/),
        unit: 'deliveries/s',
        throughput: true,
      },
      {
        measure: 'dispatch: wake-up, commit → receiver p50',
        value: dispatch?.json?.wakeupP50Ms ?? measured(dispatch, /^wake-up p50/),
        unit: 'ms',
      },
      {
        measure: 'dispatch: wake-up, commit → receiver p99',
        value: dispatch?.json?.wakeupP99Ms ?? measured(dispatch, /^wake-up p99/),
        unit: 'ms',
      },
      {
        measure: 'realtime: commit → SSE subscriber p50',
        value: realtime?.json?.latencyP50Ms ?? measured(realtime, /latency p50/),
        unit: 'ms',
      },
      {
        measure: 'realtime: commit → SSE subscriber p99',
        value: realtime?.json?.latencyP99Ms ?? measured(realtime, /latency p99/),
        unit: 'ms',
      },
      {
        measure: 'realtime: reportChunk with subscribers connected',
        value: realtime?.json?.writesPerSecondWith ?? measured(realtime, /^write throughput with subscribers/),
        unit: 'writes/s',
        throughput: true,
      },
      {
        measure: 'hostile: slowest document within the limits, API CPU',
        value: hostile ? Math.max(...Object.values<{ cpuMs: number }>(hostile.documents).map((d) => d.cpuMs)) : undefined,
        unit: 'ms (target < 50)',
      },
      {
        measure: 'hostile: ten anonymous 15 MB bodies, API VmRSS increase',
        value: hostile?.anonymousBodies?.increaseMb,
        unit: 'MB (target < 50)',
      },
      {
        measure: 'hostile: SIGTERM under load, requests without a complete response',
        value: hostile?.shutdown?.incomplete,
        unit: `(target 0; exit in ${fmt(hostile?.shutdown?.exitMs ?? NaN, 0)} ms)`,
      },
      {
        measure: 'API memory (VmRSS) under the reportChunk load, peak',
        value: chunk?.apiRssMb?.peakMb,
        unit: `MB (${fmt(chunk?.apiRssMb?.startMb ?? NaN, 0)} after warm-up)`,
      },
      { measure: `pgbench: single-row durable UPDATE, ${PGBENCH_CLIENTS} clients`, value: reference?.tps, unit: 'TPS', throughput: true },
    ];
    const settings = reference
      ? `PostgreSQL ${reference.settings.server_version}, fsync=${reference.settings.fsync}, synchronous_commit=on for pgbench`
      : 'pgbench did not run';
    printTable(
      `All benchmarks on one server (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PostgreSQL'}; ${settings})`,
      rows.map((r) => ({
        measure: r.measure,
        value: r.value === undefined ? 'n/a' : fmt(r.value, r.value < 100 ? 2 : 0),
        unit: r.unit,
        'ratio to pgbench TPS': r.throughput && r.value !== undefined && reference ? fmt(r.value / reference.tps, 3) : '',
      })),
    );
    if (reference?.settings.fsync === 'off') console.log("note: fsync is off on this server, so pgbench's UPDATEs were not durable");
    const failed = [...runs.values()].filter((r) => r.code !== 0).map((r) => `${r.name} (exit ${r.code})`);
    for (const r of runs.values()) console.log(`${r.name}: ${fmt(r.seconds, 0)} s, exit ${r.code}`);
    if (failed.length || !reference) {
      console.log(`failed: ${[...failed, ...(reference ? [] : ['pgbench'])].join(', ')}`);
      return 1;
    }
    return 0;
  } finally {
    await stopEmbedded?.();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
