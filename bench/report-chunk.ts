// reportChunk throughput and latency over HTTP with 32 clients: a run of 8 partitions against a run of
// 10,000 partitions (the per-report cost must not grow with the run), plus claims/s.
// Usage: npm run build && npx tsx bench/report-chunk.ts   (DATABASE_URL optional; embedded otherwise)
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { benchDatabase, fmt, gql, measure, postgresCpuSeconds, printTable, processCpuSeconds, sampleRss, startCli, type Measured } from './support.js';

const CLIENTS = 32;
const REPORTS = Number(process.env.BENCH_REPORTS ?? 20_000);

const CREATE = 'mutation($i: CreateRunInput!) { createRun(input: $i) { runId hdfsRunPath } }';
const MANIFEST = 'mutation($i: RegisterManifestInput!) { registerManifest(input: $i) { status } }';
const CLAIM = 'mutation($i: ClaimPartitionInput!) { claimPartition(input: $i) { claimed } }';
const REPORT = `mutation($i: ReportChunkInput!) { reportChunk(input: $i) {
  recorded partitionStatus runStatus receivedChunks chunkCount validationScheduled } }`;

interface Scenario {
  name: string;
  partitions: number;
  chunksPerPartition: number;
}

interface ScenarioResult {
  claims: Measured;
  reports: Measured;
  validationScheduled: number;
  /** CPU microseconds per report: the API process and all PostgreSQL processes. */
  apiCpuUs: number;
  pgCpuUs: number;
}

async function runScenario(url: string, apiPid: number, scenario: Scenario): Promise<ScenarioResult> {
  const { partitions, chunksPerPartition } = scenario;
  const created = await gql(url, CREATE, {
    i: { jobKey: 'BENCH_JOB', businessKey: `${scenario.name}_${randomUUID().slice(0, 8)}`, hdfsRoot: '/bench', stageTablePrefix: 'TMP_' },
  });
  const { runId, hdfsRunPath } = created.body.data.createRun;
  const pids = Array.from({ length: partitions }, (_, i) => String(i).padStart(4, '0'));
  const manifest = await gql(url, MANIFEST, {
    i: {
      runId,
      sourceCount: String(partitions * chunksPerPartition),
      plannedPartitionCount: String(partitions),
      partitions: pids.map((partitionId, i) => ({
        partitionId, lowerBound: String(i * 10), upperBound: String(i * 10 + 10), upperInclusive: i === partitions - 1,
        expectedRowCount: String(chunksPerPartition),
      })),
    },
  });
  if (manifest.body.data?.registerManifest?.status !== 'EXTRACTING') throw new Error(JSON.stringify(manifest.body));

  const tokens = pids.map(() => randomUUID());
  const claims = await measure(partitions, CLIENTS, async (i) => {
    const res = await gql(url, CLAIM, { i: { runId, partitionId: pids[i], claimToken: tokens[i], workerNode: `node-${i % 4}` } });
    if (!res.body.data?.claimPartition?.claimed) throw new Error(JSON.stringify(res.body));
  });

  // chunk k of partition p at position k * partitions + p: partitions are interleaved as NiFi's workers would
  let validationScheduled = 0;
  const cpu0 = { api: processCpuSeconds(apiPid), pg: postgresCpuSeconds() };
  const reports = await measure(partitions * chunksPerPartition, CLIENTS, async (n) => {
    const p = n % partitions;
    const chunk = Math.floor(n / partitions);
    const res = await gql(url, REPORT, {
      i: {
        runId, partitionId: pids[p], claimToken: tokens[p], chunkIndex: chunk, chunkCount: chunksPerPartition,
        hdfsPath: `${hdfsRunPath}/part-${pids[p]}-${String(chunk).padStart(6, '0')}.parquet`, recordCount: 1, byteCount: 100,
      },
    });
    const result = res.body.data?.reportChunk;
    if (!result?.recorded) throw new Error(JSON.stringify(res.body));
    if (result.validationScheduled) validationScheduled++;
  });
  const n = partitions * chunksPerPartition;
  return {
    claims, reports, validationScheduled,
    apiCpuUs: ((processCpuSeconds(apiPid) - cpu0.api) / n) * 1e6,
    pgCpuUs: ((postgresCpuSeconds() - cpu0.pg) / n) * 1e6,
  };
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

async function main(): Promise<void> {
  const database = await benchDatabase();
  const api = await startCli('serve', database.url, { LC_DATABASE__POOLSIZE: '32' });
  try {
    // warm up: JIT, connection pool, plan caches
    await runScenario(api.url, api.process.pid!, { name: 'warmup', partitions: 8, chunksPerPartition: 250 });
    // the API's resident memory while it takes the load
    const rss = sampleRss(api.process.pid!);
    await settle(database.url);
    const small = await runScenario(api.url, api.process.pid!, { name: 'p8', partitions: 8, chunksPerPartition: REPORTS / 8 });
    await settle(database.url);
    const large = await runScenario(api.url, api.process.pid!, { name: 'p10000', partitions: 10_000, chunksPerPartition: REPORTS / 10_000 });
    const memory = rss.stop();
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    const { rows } = await sql.query(`SELECT count(*)::int AS runs FROM nifi_ops.load_run WHERE status = 'EXTRACTED_VALIDATED'`);
    await sql.end();
    printTable(`reportChunk over HTTP, ${CLIENTS} clients, ${REPORTS} reports per run`, [
      { run: '8 partitions', 'reports/s': fmt(small.reports.perSecond, 0), 'p50 ms': fmt(small.reports.p50, 2), 'p99 ms': fmt(small.reports.p99, 2), 'validation scheduled': small.validationScheduled, 'API CPU µs/report': fmt(small.apiCpuUs, 0), 'PG CPU µs/report': fmt(small.pgCpuUs, 0) },
      { run: '10,000 partitions', 'reports/s': fmt(large.reports.perSecond, 0), 'p50 ms': fmt(large.reports.p50, 2), 'p99 ms': fmt(large.reports.p99, 2), 'validation scheduled': large.validationScheduled, 'API CPU µs/report': fmt(large.apiCpuUs, 0), 'PG CPU µs/report': fmt(large.pgCpuUs, 0) },
    ]);
    printTable('claimPartition, 10,000 partitions', [
      { 'claims/s': fmt(large.claims.perSecond, 0), 'p50 ms': fmt(large.claims.p50, 2), 'p99 ms': fmt(large.claims.p99, 2) },
    ]);
    printTable(`API process memory (VmRSS) under this load, ${CLIENTS} clients`, [
      { 'after warm-up MB': fmt(memory.startMb), 'peak MB': fmt(memory.peakMb), 'at the end MB': fmt(memory.endMb) },
    ]);
    const ratio = large.reports.perSecond / small.reports.perSecond;
    console.log(`ratio 10,000 / 8 partitions: ${fmt(ratio, 2)} (target >= 0.8); runs completed: ${rows[0].runs} of 3`);
    console.log(JSON.stringify({
      bench: 'report-chunk',
      p8: small.reports, p10000: large.reports, claims: large.claims, ratio, apiRssMb: memory,
    }));
  } finally {
    await api.stop();
    await database.close();
  }
}

await main();
