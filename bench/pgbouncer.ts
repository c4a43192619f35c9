// reportChunk's throughput through PgBouncer in transaction pooling mode (deploy/pgbouncer.example.ini) against
// direct, in the same run: one `serve` from the sources per path on one database (DATABASE_URL's server, needed:
// PgBouncer runs in front of it), the paths alternated round by round. Through PgBouncer each transaction carries
// its settings with its BEGIN, and a statement outside a transaction gets one of its own (src/db/client.ts): three
// round trips instead of one, which the group commit spreads over a batch.
//   DATABASE_URL=postgresql://root@127.0.0.1:5432/postgres npx tsx bench/pgbouncer.ts
// BENCH_REPORTS (per round, default 3,000), BENCH_ROUNDS (default 2) and BENCH_CLIENTS (default 32) size it.
import { randomUUID } from 'node:crypto';
import { hashToken } from '../src/auth/tokens.js';
import { startPgBouncer } from '../test/support/pgbouncer.js';
import {
  BENCH_TOKEN,
  CLAIM_PARTITION,
  CREATE_RUN,
  REGISTER_MANIFEST,
  benchDatabase,
  fmt,
  freePort,
  gql,
  measure,
  median,
  printTable,
  spawnCli,
  waitUntilReady,
} from './support.js';

const REPORTS = Number(process.env.BENCH_REPORTS ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const CHUNKS = 4;
const REPORT = 'mutation($i: ReportChunkInput!) { reportChunk(input: $i) { recorded } }';

async function serve(databaseUrl: string, directUrl?: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnCli(
    'serve',
    {
      DATABASE_URL: databaseUrl,
      ...(directUrl ? { LC_DATABASE__DIRECT_URL: directUrl } : {}),
      PORT: String(port),
      LC_SERVER__HOST: '127.0.0.1',
      LC_LOGGING__LEVEL: 'warn',
      LC_AUTH__TOKENS: JSON.stringify([{ name: 'bench', sha256: hashToken(BENCH_TOKEN), roles: ['nifi', 'operator'] }]),
    },
    { fromSource: true },
  );
  await waitUntilReady(url, child, 180_000);
  return { url, stop: () => child.kill('SIGTERM') };
}

/** A run of REPORTS / CHUNKS partitions, each claimed; then its reports, CLIENTS at a time: reports per second. */
async function round(url: string): Promise<number> {
  const partitions = REPORTS / CHUNKS;
  const created = await gql(url, CREATE_RUN, {
    i: { jobKey: 'BENCH_JOB', businessKey: `PGB_${randomUUID().slice(0, 8)}`, hdfsRoot: '/bench', stageTablePrefix: 'TMP_' },
  });
  const { runId, hdfsRunPath } = created.body.data.createRun;
  const pids = Array.from({ length: partitions }, (_, i) => String(i).padStart(4, '0'));
  const manifest = await gql(url, REGISTER_MANIFEST, {
    i: {
      runId,
      sourceCount: String(REPORTS),
      plannedPartitionCount: String(partitions),
      partitions: pids.map((partitionId, i) => ({
        partitionId,
        lowerBound: String(i * 10),
        upperBound: String(i * 10 + 10),
        upperInclusive: i === partitions - 1,
        expectedRowCount: String(CHUNKS),
      })),
    },
  });
  if (manifest.body.data?.registerManifest?.status !== 'EXTRACTING') throw new Error(JSON.stringify(manifest.body));
  const tokens = pids.map(() => randomUUID());
  await measure(partitions, CLIENTS, async (i) => {
    const res = await gql(url, CLAIM_PARTITION, { i: { runId, partitionId: pids[i], claimToken: tokens[i], workerNode: 'node-1' } });
    if (!res.body.data?.claimPartition?.claimed) throw new Error(JSON.stringify(res.body));
  });
  const reports = await measure(REPORTS, CLIENTS, async (i) => {
    const partition = Math.floor(i / CHUNKS);
    const chunk = i % CHUNKS;
    const res = await gql(url, REPORT, {
      i: {
        runId,
        partitionId: pids[partition],
        claimToken: tokens[partition],
        chunkIndex: String(chunk),
        chunkCount: String(CHUNKS),
        fragmentIdentifier: `f-${partition}`,
        hdfsPath: `${hdfsRunPath}/part-${pids[partition]}-${chunk}.parquet`,
        recordCount: '1',
        byteCount: '10',
      },
    });
    if (!res.body.data?.reportChunk?.recorded) throw new Error(JSON.stringify(res.body));
  });
  return reports.perSecond;
}

const database = await benchDatabase();
const server = new URL(database.url);
const bouncer = await startPgBouncer({ host: server.hostname, port: Number(server.port || 5432) }, await freePort(), server.username);
const apis = {
  direct: await serve(database.url),
  pgbouncer: await serve(bouncer.url(server.username, server.pathname.slice(1)), database.url),
};
try {
  const results: Record<keyof typeof apis, number[]> = { direct: [], pgbouncer: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const path of r % 2 === 0 ? (['direct', 'pgbouncer'] as const) : (['pgbouncer', 'direct'] as const)) {
      results[path].push(await round(apis[path].url));
    }
  }
  const direct = median(results.direct);
  const pooled = median(results.pgbouncer);
  printTable(`reportChunk through PgBouncer (transaction pooling) vs direct, ${CLIENTS} clients, ${REPORTS} reports a round`, [
    { path: 'direct', 'reports/s (median)': fmt(direct), rounds: results.direct.map((x) => fmt(x)).join(' ') },
    { path: 'pgbouncer', 'reports/s (median)': fmt(pooled), rounds: results.pgbouncer.map((x) => fmt(x)).join(' ') },
  ]);
  console.log(`pgbouncer / direct: ${fmt(pooled / direct, 2)}`);
} finally {
  apis.direct.stop();
  apis.pgbouncer.stop();
  await bouncer.close();
  await database.close();
}
