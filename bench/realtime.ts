// Realtime benchmark: commit-to-subscriber latency for SSE subscribers while the API takes a steady
// write load, and the API's write throughput with and without those subscribers.
//   subscribers — a child process holding N GraphQL-over-SSE streams (as N browsers would): half watch a
//                 job (runChanged(jobKey), the dashboard's table row), half watch one of the runs under
//                 write load (runChanged(runId) with its partition counts, fed by coalesced progress)
//   writes      — reportChunk calls spread over 10 runs of 10 partitions: open loop at --rate while the
//                 latency is measured; closed loop (32 clients) for the throughput phases, which alternate
//                 without and with the subscribers connected so that the database's growth affects both alike
//   latency     — every 100 ms a probe commits a status change of one of 10 runs on the watched job, in
//                 turn (one SQL statement in autocommit); latency = arrival at the subscriber − the moment
//                 the statement was sent (so it includes the statement's own round trip: an upper bound).
//                 A run changes once a second: no probe is superseded by the next state of its run.
// Usage: npm run build && npx tsx bench/realtime.ts [--subscribers 200] [--rate 1000] [--seconds 20]
// DATABASE_URL: a server on which the benchmark may create its own database; else an embedded PostgreSQL.
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { hashToken } from '../src/auth/tokens.js';
import type { Document } from '../schema/documents/graphql.js';
import {
  benchDatabase,
  CLAIM_PARTITION,
  CREATE_RUN,
  fmt,
  freePort,
  gqlRequest,
  median,
  printTable,
  processCpuSeconds,
  REGISTER_MANIFEST,
  REPORT_CHUNK,
  spawnCli,
  waitUntilReady,
} from './support.js';
import { eventStreamBlocks } from '../test/support/event-stream-blocks.js';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '200' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '20' },
    'subscriber-process': { type: 'boolean', default: false },
  },
});

const TOKEN = 'bench-realtime-token';
const PROBE_JOB = 'BENCH_PROBE';
const LOAD_JOB = 'BENCH_LOAD';
const LOAD_RUNS = 10;
const PARTITIONS = 10;
const CLIENTS = 32;
const THROUGHPUT_SECONDS = 8;
/** Alternating rounds without and with subscribers, compared by their medians: this VM's speed drifts. */
const THROUGHPUT_ROUNDS = 5;
const PROBE_EVERY_MS = 100;
const PROBE_RUNS = 10;

const ROW =
  'runId jobKey businessKey status startedAt heartbeatAt completedAt successPartitionCount failedPartitionCount extractedCount errorCode';
const WATCH_JOB = `subscription($jobKey: String) { runChanged(jobKey: $jobKey) { ${ROW} } }`;
const WATCH_RUN = `subscription($runId: UUID) { runChanged(runId: $runId) { ${ROW} partitionCounts { status count } } }`;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

// ---- the subscriber process: opens and closes its streams on command ----

interface Report {
  connected: number;
  messages: number;
  /** Probe id → arrival times (one per job-watching stream). */
  arrivals: Record<string, number[]>;
}

function subscriberProcess(): void {
  const { url, loadRuns, count } = JSON.parse(process.env.BENCH_SUBSCRIBERS!) as { url: string; loadRuns: string[]; count: number };
  const report: Report = { connected: 0, messages: 0, arrivals: {} };
  let aborts: AbortController[] = [];
  const reply = (message: object) => process.send!(message);

  const open = async (i: number) => {
    const [query, variables] = i % 2 === 0 ? [WATCH_JOB, { jobKey: PROBE_JOB }] : [WATCH_RUN, { runId: loadRuns[i % loadRuns.length] }];
    const abort = new AbortController();
    aborts.push(abort);
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', Authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ query, variables }),
      signal: abort.signal,
    });
    if (response.status !== 200) throw new Error(`subscription refused: ${response.status}`);
    report.connected++;
    try {
      for await (const block of eventStreamBlocks(response.body!)) {
        const arrived = now();
        const data = block.split('\n').find((l) => l.startsWith('data: {'));
        if (!data) continue;
        report.messages++;
        const run = JSON.parse(data.slice(6)).data?.runChanged;
        if (run?.jobKey === PROBE_JOB && run.errorCode) {
          report.arrivals[run.errorCode] ??= [];
          report.arrivals[run.errorCode]!.push(arrived);
        }
      }
    } catch {
      // closed by command
    }
    report.connected--;
  };

  process.on('message', async (message: { type: string }) => {
    switch (message.type) {
      case 'open':
        for (let i = 0; i < count; i++) void open(i).catch((error) => reply({ type: 'error', message: String(error) }));
        while (report.connected < count) await sleep(20);
        return reply({ type: 'open' });
      case 'close':
        for (const a of aborts) a.abort();
        aborts = [];
        while (report.connected > 0) await sleep(20);
        return reply({ type: 'close' });
      case 'reset':
        report.messages = 0;
        report.arrivals = {};
        return reply({ type: 'reset' });
      case 'report':
        return reply({ type: 'report', ...report });
      case 'stop':
        process.exit(0);
    }
  });
  reply({ type: 'started' });
}

function ask<T>(child: ChildProcess, type: string, send = true): Promise<T> {
  return new Promise((resolve) => {
    const listener = (message: { type: string } & T) => {
      if (message.type !== type) return;
      child.off('message', listener);
      resolve(message);
    };
    child.on('message', listener);
    if (send) child.send({ type });
  });
}

// ---- the write load ----

interface LoadRun {
  runId: string;
  hdfsRunPath: string;
  tokens: string[];
  next: number[];
}

async function call(url: string, query: string | Document, variables: unknown): Promise<any> {
  const res = await gqlRequest(url, query, variables, { token: TOKEN });
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data;
}

async function createRun(url: string, jobKey: string) {
  const { createRun: run } = await call(url, CREATE_RUN, {
    input: { jobKey, businessKey: `B_${randomUUID().slice(0, 12)}`, hdfsRoot: '/bench', stageTablePrefix: 'TMP_' },
  });
  return run as { runId: string; hdfsRunPath: string };
}

async function prepareLoadRun(url: string): Promise<LoadRun> {
  const run = await createRun(url, LOAD_JOB);
  const pids = Array.from({ length: PARTITIONS }, (_, i) => String(i).padStart(4, '0'));
  await call(url, REGISTER_MANIFEST, {
    input: {
      runId: run.runId,
      sourceCount: String(PARTITIONS * 1_000_000),
      plannedPartitionCount: String(PARTITIONS),
      partitions: pids.map((partitionId, i) => ({
        partitionId,
        lowerBound: String(i * 10),
        upperBound: String(i * 10 + 10),
        upperInclusive: i === PARTITIONS - 1,
        expectedRowCount: '1000000',
      })),
    },
  });
  const tokens = pids.map(() => randomUUID());
  for (const [i, partitionId] of pids.entries())
    await call(url, CLAIM_PARTITION, { input: { runId: run.runId, partitionId, claimToken: tokens[i], workerNode: 'bench' } });
  return { ...run, tokens, next: pids.map(() => 0) };
}

let writes = 0;

/** The next chunk of some partition: partitions of a million chunks never complete, every report is progress. */
function reportOnce(url: string, runs: LoadRun[]): Promise<unknown> {
  const n = writes++;
  const run = runs[n % runs.length]!;
  const p = Math.floor(n / runs.length) % PARTITIONS;
  const chunk = run.next[p]!++;
  const partitionId = String(p).padStart(4, '0');
  return call(url, REPORT_CHUNK, {
    input: {
      runId: run.runId,
      partitionId,
      claimToken: run.tokens[p],
      chunkIndex: chunk,
      chunkCount: 1_000_000,
      hdfsPath: `${run.hdfsRunPath}/part-${partitionId}-${String(chunk).padStart(7, '0')}.parquet`,
      recordCount: 1,
      byteCount: 10,
    },
  });
}

async function closedLoop(url: string, runs: LoadRun[], seconds: number): Promise<number> {
  const deadline = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < deadline) {
        await reportOnce(url, runs);
        done++;
      }
    }),
  );
  return done / seconds;
}

/** Open loop at `rate` per second (at most 512 in flight), calling `tick` every few ms; the rate achieved. */
async function openLoop(url: string, runs: LoadRun[], rate: number, seconds: number, tick: () => void): Promise<number> {
  const started = performance.now();
  let sent = 0;
  let done = 0;
  const pending = new Set<Promise<unknown>>();
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (sent < due && pending.size < 512) {
      sent++;
      const p: Promise<unknown> = reportOnce(url, runs)
        .then(() => done++)
        .finally(() => pending.delete(p));
      pending.add(p);
    }
    tick();
    await sleep(2);
  }
  await Promise.all(pending);
  return done / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  const subscribers = Number(args.subscribers);
  const rate = Number(args.rate);
  const seconds = Number(args.seconds);
  const db = await benchDatabase();
  const port = await freePort();
  const api = spawnCli('serve', {
    DATABASE_URL: db.url,
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
    LC_LOGGING__LEVEL: 'warn',
    LC_DATABASE__POOLSIZE: '20',
    LC_AUTH__TOKENS: JSON.stringify([{ name: 'bench', sha256: hashToken(TOKEN), roles: ['nifi', 'operator', 'viewer'] }]),
  });
  const url = `http://127.0.0.1:${port}`;
  const sql = new pg.Client({ connectionString: db.url });
  let child: ChildProcess | undefined;
  try {
    await waitUntilReady(url, api);
    await sql.connect();
    const runs: LoadRun[] = [];
    for (let i = 0; i < LOAD_RUNS; i++) runs.push(await prepareLoadRun(url));
    const probeRuns: Array<{ runId: string }> = [];
    for (let i = 0; i < PROBE_RUNS; i++) probeRuns.push(await createRun(url, PROBE_JOB));

    child = fork(new URL(import.meta.url).pathname, ['--subscriber-process'], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, BENCH_SUBSCRIBERS: JSON.stringify({ url, loadRuns: runs.map((r) => r.runId), count: subscribers }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('message', (m: { type: string; message?: string }) => m.type === 'error' && console.error(`subscriber: ${m.message}`));
    await ask(child, 'started', false);
    await closedLoop(url, runs, 3); // warm-up: JIT, pools, caches
    // statistics for the tables the warm-up filled, as autovacuum would have them within its first minute: plans
    // cached while they looked empty may walk ix_load_file_partition_status instead of the primary key
    await sql.query('VACUUM (ANALYZE)');

    const without: number[] = [];
    const withSubs: number[] = [];
    const cpu = { without: [] as number[], with: [] as number[] };
    const phase = async (into: number[], cpuInto: number[]) => {
      // only the API's own CPU: other PostgreSQL clusters on the machine would blur the database's share
      const c0 = processCpuSeconds(api.pid!);
      const perSecond = await closedLoop(url, runs, THROUGHPUT_SECONDS);
      into.push(perSecond);
      cpuInto.push(((processCpuSeconds(api.pid!) - c0) / (perSecond * THROUGHPUT_SECONDS)) * 1e6);
    };
    for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
      await phase(without, cpu.without);
      await ask(child, 'open');
      await sleep(1000);
      await phase(withSubs, cpu.with);
      await ask(child, 'close');
      await sleep(1000);
    }

    await ask(child, 'open');
    await sleep(1000);
    await ask(child, 'reset');
    const sent: Record<string, number> = {};
    let probes = 0;
    let last = performance.now();
    let probing: Promise<unknown> = Promise.resolve();
    const achieved = await openLoop(url, runs, rate, seconds, () => {
      if (performance.now() - last < PROBE_EVERY_MS) return;
      last = performance.now();
      const id = `P${++probes}`;
      const probe = probeRuns[probes % PROBE_RUNS]!;
      const status = Math.floor(probes / PROBE_RUNS) % 2 ? 'FAILED_EXTRACT' : 'TIMED_OUT';
      probing = probing.then(() => {
        sent[id] = now();
        return sql.query('UPDATE nifi_ops.load_run SET status = $2, error_code = $3 WHERE run_id = $1', [probe.runId, status, id]);
      });
    });
    await probing;
    await sleep(1500);
    const result = await ask<Report>(child, 'report');
    const latencies: number[] = [];
    for (const [id, arrivals] of Object.entries(result.arrivals)) for (const at of arrivals) latencies.push(at - sent[id]!);
    latencies.sort((a, b) => a - b);
    const watchers = Math.ceil(subscribers / 2);
    const delivered = Object.values(result.arrivals).filter((a) => a.length === watchers).length;
    const ratio = median(withSubs) / median(without);

    printTable(
      `Realtime: ${subscribers} SSE subscribers (${watchers} watching a job, ${subscribers - watchers} watching runs under load)`,
      [
        { measure: 'writes/s while measuring latency (target)', value: `${fmt(achieved, 0)} (${rate})` },
        { measure: 'probes delivered to every job watcher', value: `${delivered} / ${probes}` },
        { measure: 'SSE messages received per second', value: fmt(result.messages / (seconds + 1.5), 0) },
        { measure: 'commit → subscriber latency p50 (ms)', value: fmt(percentile(latencies, 0.5)) },
        { measure: 'commit → subscriber latency p99 (ms)', value: fmt(percentile(latencies, 0.99)) },
        { measure: 'commit → subscriber latency max (ms)', value: fmt(latencies.at(-1) ?? NaN) },
        { measure: `write throughput without subscribers (${CLIENTS} clients, writes/s)`, value: without.map((w) => fmt(w, 0)).join(', ') },
        { measure: `write throughput with subscribers (${CLIENTS} clients, writes/s)`, value: withSubs.map((w) => fmt(w, 0)).join(', ') },
        { measure: 'API process CPU µs per write (without / with)', value: `${fmt(mean(cpu.without), 0)} / ${fmt(mean(cpu.with), 0)}` },
        { measure: 'throughput with / without (medians)', value: fmt(ratio, 3) },
      ],
    );
    const met = percentile(latencies, 0.99) < 100 && ratio >= 0.9 && delivered === probes && achieved >= rate * 0.98;
    console.log(
      `targets (${rate} writes/s held, p99 < 100 ms, every probe delivered, throughput ratio >= 0.9): ${met ? 'met' : 'NOT met'}`,
    );
  } finally {
    child?.send({ type: 'stop' });
    await sql.end().catch(() => undefined);
    await new Promise<void>((resolve) => {
      if (api.exitCode !== null) return resolve();
      api.once('exit', () => resolve());
      api.kill('SIGTERM');
    });
    await db.close();
  }
}

if (args['subscriber-process']) subscriberProcess();
else
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
