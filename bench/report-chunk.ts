// reportChunk throughput and latency over HTTP with 32 clients: a run of 8 partitions against a run of
// 10,000 partitions (the per-report cost must not grow with the run), both reported to completion — so in
// the second, every other report completes a partition — and, as a like-for-like check, the same number of
// reports to 10,000 partitions that do not complete; plus claims/s. The reports are sent by wrk when it is
// installed (apt-get install -y wrk), otherwise by the Node client of bench/support.ts; the table says which.
// Then a report on its own, as the API sends one when no batch is in flight, through pg on one connection:
// nifi_ops.report_chunk against nifi_ops.report_chunks with a batch of one (new chunks, then the same chunks
// replayed, which a batch answers DEFERRED and report_chunk then decides), in the database backend's own
// CPU time per report, so that other load on the machine does not count.
// With BENCH_ONLY=tracing, the cost of tracing instead: the 8-partition run against two API processes on one
// database, one with tracing off and one exporting every span (sampleRatio 1) to a loopback OTLP/HTTP sink in
// this process, alternated round by round (6 rounds of 10,000 reports unless BENCH_ROUNDS/BENCH_REPORTS say;
// BENCH_SAMPLE_RATIO=0 measures what tracing costs when it keeps no trace: the context propagation alone).
// Usage: npm run build && npx tsx bench/report-chunk.ts   (DATABASE_URL optional; embedded otherwise;
// BENCH_REPORTS, BENCH_ROUNDS and BENCH_POOL change the run's size, the rounds and the API's pool size;
// BENCH_ONLY=lone measures only the report on its own, BENCH_ONLY=tracing only tracing's cost)
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { loadavg } from 'node:os';
import pg from 'pg';
import {
  benchDatabase,
  CLAIM_PARTITION,
  CREATE_RUN,
  fmt,
  gql,
  measure,
  median,
  postgresCpuSeconds,
  printTable,
  processCpuSeconds,
  REGISTER_MANIFEST,
  REPORT_CHUNK,
  sampleRss,
  startCli,
  type BenchDatabase,
  type Measured,
  type ReportLoad,
  type ReportLoadResult,
  type ServedApi,
  wrkInstalled,
  wrkReports,
} from './support.js';

const CLIENTS = 32;
const REPORTS = Number(process.env.BENCH_REPORTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WRK = wrkInstalled();
const ONLY_LONE = process.env.BENCH_ONLY === 'lone';
const ONLY_TRACING = process.env.BENCH_ONLY === 'tracing';

interface Scenario {
  name: string;
  partitions: number;
  chunksPerPartition: number;
  /** Chunks reported per partition, when fewer than it has: the run then never completes (progress only). */
  reportedPerPartition?: number;
}

interface ScenarioResult {
  claims: Measured;
  reports: ReportLoadResult;
  /** CPU microseconds per report: the API process and all PostgreSQL processes. */
  apiCpuUs: number;
  pgCpuUs: number;
  /** Reports per statement sent to the database (group commit), from the API's lc_chunk_report_batch_size. */
  meanBatch: number;
}

async function batchTotals(url: string): Promise<{ sum: number; count: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { sum: value('lc_chunk_report_batch_size_sum'), count: value('lc_chunk_report_batch_size_count') };
}

async function runScenario(url: string, apiPid: number, scenario: Scenario): Promise<ScenarioResult> {
  const { partitions, chunksPerPartition } = scenario;
  const created = await gql(url, CREATE_RUN, {
    input: {
      jobKey: 'BENCH_JOB',
      businessKey: `${scenario.name}_${randomUUID().slice(0, 8)}`,
      hdfsRoot: '/bench',
      stageTablePrefix: 'TMP_',
    },
  });
  const { runId, hdfsRunPath } = created.body.data.createRun;
  const pids = Array.from({ length: partitions }, (_, i) => String(i).padStart(4, '0'));
  const manifest = await gql(url, REGISTER_MANIFEST, {
    input: {
      runId,
      sourceCount: String(partitions * chunksPerPartition),
      plannedPartitionCount: String(partitions),
      partitions: pids.map((partitionId, i) => ({
        partitionId,
        lowerBound: String(i * 10),
        upperBound: String(i * 10 + 10),
        upperInclusive: i === partitions - 1,
        expectedRowCount: String(chunksPerPartition),
      })),
    },
  });
  if (manifest.body.data?.registerManifest?.status !== 'EXTRACTING') throw new Error(JSON.stringify(manifest.body));

  const tokens = pids.map(() => randomUUID());
  const claims = await measure(partitions, CLIENTS, async (i) => {
    const res = await gql(url, CLAIM_PARTITION, {
      input: { runId, partitionId: pids[i], claimToken: tokens[i], workerNode: `node-${i % 4}` },
    });
    if (!res.body.data?.claimPartition?.claimed) throw new Error(JSON.stringify(res.body));
  });

  const cpu0 = { api: processCpuSeconds(apiPid), pg: postgresCpuSeconds() };
  const batches0 = await batchTotals(url);
  const n = partitions * (scenario.reportedPerPartition ?? chunksPerPartition);
  const load = { runId, hdfsRunPath, chunkCount: chunksPerPartition, count: n, tokens };
  const reports = WRK ? await wrkReports(url, load, CLIENTS) : await nodeReports(url, load);
  const batches1 = await batchTotals(url);
  return {
    claims,
    reports,
    meanBatch: (batches1.sum - batches0.sum) / (batches1.count - batches0.count),
    apiCpuUs: ((processCpuSeconds(apiPid) - cpu0.api) / n) * 1e6,
    pgCpuUs: ((postgresCpuSeconds() - cpu0.pg) / n) * 1e6,
  };
}

/** The reports through the Node client, when wrk is not installed: the same requests in the same order. */
async function nodeReports(url: string, load: ReportLoad): Promise<ReportLoadResult> {
  const partitions = load.tokens.length;
  let validationScheduled = 0;
  const cpu0 = process.cpuUsage();
  // chunk k of partition p at position k * partitions + p: partitions are interleaved as NiFi's workers would
  const measured = await measure(load.count, CLIENTS, async (n) => {
    const p = n % partitions;
    const chunk = Math.floor(n / partitions);
    const pid = String(p).padStart(4, '0');
    const res = await gql(url, REPORT_CHUNK, {
      input: {
        runId: load.runId,
        partitionId: pid,
        claimToken: load.tokens[p],
        chunkIndex: chunk,
        chunkCount: load.chunkCount,
        hdfsPath: `${load.hdfsRunPath}/part-${pid}-${String(chunk).padStart(6, '0')}.parquet`,
        recordCount: 1,
        byteCount: 100,
      },
    });
    const result = res.body.data?.reportChunk;
    if (!result?.recorded) throw new Error(JSON.stringify(res.body));
    if (result.validationScheduled) validationScheduled++;
  });
  const cpu = process.cpuUsage(cpu0);
  return { ...measured, validationScheduled, loadGeneratorCpuUs: (cpu.user + cpu.system) / load.count };
}

/**
 * Vacuums and checkpoints between scenarios, so that one scenario's autovacuum and checkpoint work does not
 * land in the next one's throughput and CPU figures.
 */
async function settle(url: string): Promise<void> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  await sql.query('VACUUM (ANALYZE)');
  await sql.query('CHECKPOINT');
  await sql.end();
}

interface LoneResult {
  backendCpuUs: number;
  p50Us: number;
}

const LONE_PARTITIONS = 8;
const LONE_CHUNKS = Number(process.env.BENCH_LONE_CHUNKS ?? 400);
const SINGLE_SQL = 'SELECT * FROM nifi_ops.report_chunk($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)';
const BATCH_SQL = 'SELECT * FROM nifi_ops.report_chunks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)';

/** Reports every chunk of a fresh run alone, one after the other, then replays them all; both timed. */
async function loneReports(
  url: string,
  databaseUrl: string,
  path: 'single' | 'batch of one',
): Promise<{ fresh: LoneResult; replay: LoneResult }> {
  const created = await gql(url, CREATE_RUN, {
    input: { jobKey: 'BENCH_JOB', businessKey: `lone_${randomUUID().slice(0, 8)}`, hdfsRoot: '/bench', stageTablePrefix: 'TMP_' },
  });
  const { runId, hdfsRunPath } = created.body.data.createRun;
  const pids = Array.from({ length: LONE_PARTITIONS }, (_, i) => String(i).padStart(4, '0'));
  await gql(url, REGISTER_MANIFEST, {
    input: {
      runId,
      sourceCount: String(LONE_PARTITIONS * LONE_CHUNKS),
      plannedPartitionCount: String(LONE_PARTITIONS),
      partitions: pids.map((partitionId, i) => ({
        partitionId,
        lowerBound: String(i * 10),
        upperBound: String(i * 10 + 10),
        upperInclusive: i === LONE_PARTITIONS - 1,
        expectedRowCount: String(LONE_CHUNKS),
      })),
    },
  });
  const tokens = pids.map(() => randomUUID());
  for (const [i, partitionId] of pids.entries())
    await gql(url, CLAIM_PARTITION, { input: { runId, partitionId, claimToken: tokens[i], workerNode: 'n' } });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const {
    rows: [{ pid }],
  } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const reports = Array.from({ length: LONE_PARTITIONS * LONE_CHUNKS }, (_, n) => {
    const p = n % LONE_PARTITIONS;
    const chunk = Math.floor(n / LONE_PARTITIONS);
    return [
      runId,
      pids[p],
      tokens[p],
      chunk,
      LONE_CHUNKS,
      null,
      `${hdfsRunPath}/part-${pids[p]}-${String(chunk).padStart(6, '0')}.parquet`,
      '1',
      '100',
      'bench',
    ] as const;
  });
  const send = async (values: readonly unknown[]) => {
    if (path === 'single') return client.query({ name: 'single', text: SINGLE_SQL, values: [...values] });
    const { rows } = await client.query({ name: 'batch', text: BATCH_SQL, values: values.map((v) => [v]) });
    if (rows[0].outcome === 'DEFERRED') await client.query({ name: 'single', text: SINGLE_SQL, values: [...values] });
  };
  const timed = async (): Promise<LoneResult> => {
    const cpu0 = processCpuSeconds(pid);
    const latencies: number[] = [];
    for (const values of reports) {
      const t0 = performance.now();
      await send(values);
      latencies.push((performance.now() - t0) * 1000);
    }
    latencies.sort((a, b) => a - b);
    return { backendCpuUs: ((processCpuSeconds(pid) - cpu0) / reports.length) * 1e6, p50Us: latencies[Math.floor(latencies.length / 2)]! };
  };
  try {
    const fresh = await timed();
    const replay = await timed();
    return { fresh, replay };
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  // the product's default pool (database.poolSize 10): on two cores, more connections than that only queue
  // on the CPU, and a lock holder waiting for a core holds up every report behind it
  const poolEnv: Record<string, string> = process.env.BENCH_POOL ? { LC_DATABASE__POOLSIZE: process.env.BENCH_POOL } : {};
  if (ONLY_TRACING) {
    try {
      await tracingScenarios(database, poolEnv);
    } finally {
      await database.close();
    }
    return;
  }
  const api = await startCli('serve', database.url, poolEnv);
  try {
    if (!ONLY_LONE) await httpScenarios(api, database);
    await loneScenarios(api, database);
  } finally {
    await api.stop();
    await database.close();
  }
}

async function httpScenarios(api: ServedApi, database: BenchDatabase): Promise<void> {
  // warm up: JIT, connection pool, plan caches
  await runScenario(api.url, api.process.pid!, { name: 'warmup', partitions: 8, chunksPerPartition: 250 });
  // the API's resident memory while it takes the load
  const rss = sampleRss(api.process.pid!);
  // the two runs alternate, ROUNDS times each, and the medians are compared: this machine's speed drifts by
  // tens of percent over a minute, which one run after the other would read as a difference between them
  const rounds: Array<{ small: ScenarioResult; large: ScenarioResult; progress: ScenarioResult }> = [];
  for (let round = 0; round < ROUNDS; round++) {
    await settle(database.url);
    const small = await runScenario(api.url, api.process.pid!, { name: `p8r${round}`, partitions: 8, chunksPerPartition: REPORTS / 8 });
    await settle(database.url);
    const large = await runScenario(api.url, api.process.pid!, {
      name: `p10000r${round}`,
      partitions: 10_000,
      chunksPerPartition: REPORTS / 10_000,
    });
    await settle(database.url);
    // the same number of reports to 10,000 partitions that do not complete: what a report costs in a large
    // run, without the partition completions that make up half of the reports above
    const progress = await runScenario(api.url, api.process.pid!, {
      name: `p10000progress${round}`,
      partitions: 10_000,
      chunksPerPartition: 1000,
      reportedPerPartition: REPORTS / 10_000,
    });
    rounds.push({ small, large, progress });
  }
  const memory = rss.stop();
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  const { rows } = await sql.query(`SELECT count(*)::int AS runs FROM nifi_ops.load_run WHERE status = 'EXTRACTED_VALIDATED'`);
  await sql.end();
  const row = (label: string, r: ScenarioResult) => ({
    run: label,
    'reports/s': fmt(r.reports.perSecond, 0),
    'p50 ms': fmt(r.reports.p50, 2),
    'p99 ms': fmt(r.reports.p99, 2),
    'validation scheduled': r.reports.validationScheduled,
    'API CPU µs/report': fmt(r.apiCpuUs, 0),
    'PG CPU µs/report': fmt(r.pgCpuUs, 0),
    'mean batch': fmt(r.meanBatch, 1),
    'load generator CPU µs/report': fmt(r.reports.loadGeneratorCpuUs, 0),
  });
  printTable(
    `reportChunk over HTTP, ${CLIENTS} clients (${WRK ? 'wrk' : 'Node client; install wrk for a lighter load generator'}), ${REPORTS} reports per run, ${ROUNDS} rounds`,
    rounds.flatMap((r, i) => [
      row(`round ${i + 1}: 8 partitions`, r.small),
      row(`round ${i + 1}: 10,000 partitions`, r.large),
      row(`round ${i + 1}: 10,000 partitions, progress only`, r.progress),
    ]),
  );
  const medians = (pick: (r: (typeof rounds)[number]) => Measured) => ({
    perSecond: median(rounds.map((r) => pick(r).perSecond)),
    p50: median(rounds.map((r) => pick(r).p50)),
    p99: median(rounds.map((r) => pick(r).p99)),
  });
  const small = medians((r) => r.small.reports);
  const large = medians((r) => r.large.reports);
  const progress = medians((r) => r.progress.reports);
  printTable('medians over the rounds', [
    { run: '8 partitions', 'reports/s': fmt(small.perSecond, 0), 'p50 ms': fmt(small.p50, 2), 'p99 ms': fmt(small.p99, 2) },
    { run: '10,000 partitions', 'reports/s': fmt(large.perSecond, 0), 'p50 ms': fmt(large.p50, 2), 'p99 ms': fmt(large.p99, 2) },
    {
      run: '10,000 partitions, progress only',
      'reports/s': fmt(progress.perSecond, 0),
      'p50 ms': fmt(progress.p50, 2),
      'p99 ms': fmt(progress.p99, 2),
    },
  ]);
  const claims = medians((r) => r.large.claims);
  printTable('claimPartition, 10,000 partitions (medians)', [
    { 'claims/s': fmt(claims.perSecond, 0), 'p50 ms': fmt(claims.p50, 2), 'p99 ms': fmt(claims.p99, 2) },
  ]);
  printTable(`API process memory (VmRSS) under this load, ${CLIENTS} clients`, [
    { 'after warm-up MB': fmt(memory.startMb), 'peak MB': fmt(memory.peakMb), 'at the end MB': fmt(memory.endMb) },
  ]);
  const ratio = large.perSecond / small.perSecond;
  console.log(
    `ratio 10,000 / 8 partitions (medians): ${fmt(ratio, 2)} (target >= 0.8); runs completed: ${rows[0].runs} of ${1 + 2 * ROUNDS}`,
  );
  console.log(`ratio 10,000 partitions progress only / 8 partitions (medians): ${fmt(progress.perSecond / small.perSecond, 2)}`);
  console.log(
    JSON.stringify({
      bench: 'report-chunk',
      p8: small,
      p10000: large,
      p10000ProgressOnly: progress,
      claims,
      ratio,
      apiRssMb: memory,
      rounds: rounds.map((r) => ({
        p8: r.small.reports.perSecond,
        p10000: r.large.reports.perSecond,
        p10000ProgressOnly: r.progress.reports.perSecond,
      })),
    }),
  );
}

async function loneScenarios(api: ServedApi, database: BenchDatabase): Promise<void> {
  // alternated as the scenarios above are; the medians are compared
  const lone: Array<Record<'single' | 'batch of one', { fresh: LoneResult; replay: LoneResult }>> = [];
  for (let round = 0; round < ROUNDS; round++) {
    await settle(database.url);
    const single = await loneReports(api.url, database.url, 'single');
    await settle(database.url);
    lone.push({ single, 'batch of one': await loneReports(api.url, database.url, 'batch of one') });
  }
  const loneMedian = (path: 'single' | 'batch of one', kind: 'fresh' | 'replay', key: keyof LoneResult) =>
    fmt(median(lone.map((r) => r[path][kind][key])), 0);
  printTable(
    `a report on its own, one connection, ${LONE_PARTITIONS * LONE_CHUNKS} reports (medians of ${ROUNDS} rounds)`,
    (['single', 'batch of one'] as const).map((path) => ({
      path: path === 'single' ? 'report_chunk' : 'report_chunks of one (+ report_chunk when DEFERRED)',
      'new chunk: backend CPU µs': loneMedian(path, 'fresh', 'backendCpuUs'),
      'new chunk: p50 µs': loneMedian(path, 'fresh', 'p50Us'),
      'replay: backend CPU µs': loneMedian(path, 'replay', 'backendCpuUs'),
      'replay: p50 µs': loneMedian(path, 'replay', 'p50Us'),
    })),
  );
  console.log(JSON.stringify({ bench: 'report-chunk-lone', lone: lone.map((r) => ({ single: r.single, batchOfOne: r['batch of one'] })) }));
}

/** A loopback OTLP/HTTP (JSON) receiver that counts the spans it is sent and answers as a collector does. */
async function startSpanSink(): Promise<{ url: string; spans(): number; close(): Promise<void> }> {
  let spans = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans?: unknown[] }> }>;
      };
      for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans += scope.spans?.length ?? 0;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans: () => spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * The 8-partition run against the API without tracing and against one exporting every span, TRACING_ROUNDS
 * times, the order flipped each round. On a shared machine the throughput of one run drifts by a factor of
 * several over minutes, so each round's on/off ratio is taken between neighbours, and the ratios' median is the
 * figure; the API's CPU per report varies less than its throughput.
 */
async function tracingScenarios(database: BenchDatabase, poolEnv: Record<string, string>): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
  const reports = Number(process.env.BENCH_REPORTS ?? 10_000);
  const sink = await startSpanSink();
  const off = await startCli('serve', database.url, poolEnv);
  const sampleRatio = process.env.BENCH_SAMPLE_RATIO ?? '1';
  const on = await startCli('serve', database.url, { ...poolEnv, LC_TRACING__ENDPOINT: sink.url, LC_TRACING__SAMPLE_RATIO: sampleRatio });
  const load0 = loadavg();
  try {
    for (const api of [off, on]) await runScenario(api.url, api.process.pid!, { name: 'warmup', partitions: 8, chunksPerPartition: 250 });
    const results: Array<{ off: ScenarioResult; on: ScenarioResult; spansPerReport: number }> = [];
    for (let round = 0; round < rounds; round++) {
      const measured: Partial<Record<'off' | 'on', ScenarioResult>> = {};
      let spans = 0;
      for (const mode of round % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
        await settle(database.url);
        const api = mode === 'on' ? on : off;
        const spans0 = sink.spans();
        measured[mode] = await runScenario(api.url, api.process.pid!, {
          name: `${mode}${round}`,
          partitions: 8,
          chunksPerPartition: reports / 8,
        });
        if (mode === 'on') {
          // the batch exporter sends what it holds every 2 s
          await new Promise((resolve) => setTimeout(resolve, 2500));
          spans = sink.spans() - spans0;
        }
      }
      results.push({ off: measured.off!, on: measured.on!, spansPerReport: spans / reports });
    }
    const row = (label: string, r: ScenarioResult, spansPerReport?: number) => ({
      run: label,
      'reports/s': fmt(r.reports.perSecond, 0),
      'p50 ms': fmt(r.reports.p50, 2),
      'p99 ms': fmt(r.reports.p99, 2),
      'API CPU µs/report': fmt(r.apiCpuUs, 0),
      'PG CPU µs/report': fmt(r.pgCpuUs, 0),
      'mean batch': fmt(r.meanBatch, 1),
      'spans exported/report': spansPerReport === undefined ? '-' : fmt(spansPerReport, 2),
    });
    printTable(
      `reportChunk over HTTP with tracing off and on (sampleRatio ${sampleRatio}, exporting to a loopback OTLP sink), 8 partitions, ${CLIENTS} clients (${WRK ? 'wrk' : 'Node client'}), ${reports} reports per run`,
      results.flatMap((r, i) => [row(`round ${i + 1}: tracing off`, r.off), row(`round ${i + 1}: tracing on`, r.on, r.spansPerReport)]),
    );
    const medianOf = (pick: (r: (typeof results)[number]) => number) => median(results.map(pick));
    const summary = {
      off: {
        perSecond: medianOf((r) => r.off.reports.perSecond),
        p50: medianOf((r) => r.off.reports.p50),
        p99: medianOf((r) => r.off.reports.p99),
        apiCpuUs: medianOf((r) => r.off.apiCpuUs),
      },
      on: {
        perSecond: medianOf((r) => r.on.reports.perSecond),
        p50: medianOf((r) => r.on.reports.p50),
        p99: medianOf((r) => r.on.reports.p99),
        apiCpuUs: medianOf((r) => r.on.apiCpuUs),
        spansPerReport: medianOf((r) => r.spansPerReport),
      },
      // each round's on/off, then their median
      throughputRatio: medianOf((r) => r.on.reports.perSecond / r.off.reports.perSecond),
      apiCpuRatio: medianOf((r) => r.on.apiCpuUs / r.off.apiCpuUs),
      loadAverage: { before: load0, after: loadavg() },
    };
    const line = (tracing: string, m: typeof summary.off) => ({
      tracing,
      'reports/s': fmt(m.perSecond, 0),
      'p50 ms': fmt(m.p50, 2),
      'p99 ms': fmt(m.p99, 2),
      'API CPU µs/report': fmt(m.apiCpuUs, 0),
    });
    printTable(`medians over ${rounds} rounds`, [line('off', summary.off), line('on', summary.on)]);
    const load = (l: number[]) => l.map((v) => fmt(v, 2)).join(' ');
    console.log(
      `tracing on / off, median of the rounds' ratios: throughput ${fmt(summary.throughputRatio, 2)}, API CPU per report ${fmt(summary.apiCpuRatio, 2)}; ` +
        `load average ${load(summary.loadAverage.before)} before, ${load(summary.loadAverage.after)} after`,
    );
    console.log(JSON.stringify({ bench: 'report-chunk-tracing', sampleRatio: Number(sampleRatio), ...summary }));
  } finally {
    await Promise.all([off.stop(), on.stop()]);
    await sink.close();
  }
}

await main();
