// Hostile requests against the built API (a child process): the CPU and wall time the worst documents within
// the limits cost, /healthz latency while four of them run at once, the API's memory for ten concurrent
// anonymous 15 MB bodies, and a SIGTERM under a keep-alive mutation load (requests left without a complete
// answer, time to exit). Prints numbers; asserts nothing. A request that is refused prints the status it got;
// one that gets no answer within REQUEST_TIMEOUT_MS prints "timeout", and the API is restarted.
// Usage: npm run build && npx tsx bench/hostile.ts   (DATABASE_URL names the server, else an embedded one;
// BENCH_DOCUMENTS=<substring> measures only the documents whose name contains it)
import { request } from 'undici';
import { hashToken } from '../src/auth/tokens.js';
import { documentText } from '../schema/documents/graphql.js';
import * as consoleOperations from '../web/src/api/operations.js';
import {
  BENCH_TOKEN,
  benchDatabase,
  fmt,
  gqlRequest,
  median,
  printTable,
  processCpuSeconds,
  rssMegabytes,
  sampleRss,
  startCli,
  type ServedApi,
} from './support.js';
import { MAX_RUNS_PAGE } from '../src/graphql/cost.js';
import { DOCUMENT_LIMITS } from '../src/server/operation-shape.js';

const VIEWER_TOKEN = 'bench-viewer-token';
const ROUNDS = 5;
const REQUEST_TIMEOUT_MS = 15_000;
const RUNS = 500;
const ENV = {
  LC_AUTH__TOKENS: JSON.stringify([
    { name: 'bench', sha256: hashToken(BENCH_TOKEN), roles: ['nifi', 'operator'] },
    { name: 'bench-viewer', sha256: hashToken(VIEWER_TOKEN), roles: ['viewer'] },
  ]),
};

/** The largest `build(n)` under the token limit (counted as the lexer would, roughly: names, punctuators, strings). */
function largest(build: (n: number) => string): string {
  const tokens = (doc: string) => doc.match(/\.\.\.|[A-Za-z_][A-Za-z0-9_]*|-?\d+|"[^"]*"|[{}():@!$=[\]]/g)?.length ?? 0;
  let n = 1;
  while (tokens(build(n * 2)) < DOCUMENT_LIMITS.tokens - 20) n *= 2;
  for (let step = n / 2; step >= 1; step /= 2) if (tokens(build(n + step)) < DOCUMENT_LIMITS.tokens - 20) n += step;
  return build(n);
}

const MAX_PARTITIONS = 10_000;
const RUN_SCALARS =
  'runId jobKey businessKey status snapshotScn sourceCount sourceNullSplitCount sourceMinSplit sourceMaxSplit ' +
  'expectedPartitionCount successPartitionCount failedPartitionCount extractedCount stagingCount targetCount hdfsRunPath stageTable ' +
  'parameters idempotencyKey createdBy startedAt heartbeatAt extractCompletedAt publishStartedAt publishedAt completedAt cleanedAt ' +
  'errorStage errorCode errorMessage';
const RUN_FIELDS = 'runId jobKey businessKey status parameters partitions { partitionId status } events { name } dispatches { dispatchId }';
const DOCUMENTS: Record<string, string> = {
  'fragment chain at the root': largest(
    (n) =>
      `query { ...F0 }${Array.from({ length: n }, (_, i) => ` fragment F${i} on Query { __typename ${i + 1 < n ? `...F${i + 1} ...F${i + 1}` : ''} }`).join('')}`,
  ),
  'fragment chain under runs': largest(
    (n) =>
      `query { runs(first: 2) { nodes { ...F0 } } }${Array.from({ length: n }, (_, i) => ` fragment F${i} on Run { runId ${i + 1 < n ? `...F${i + 1} ...F${i + 1}` : ''} }`).join('')}`,
  ),
  'field repetition flood': largest((n) => `query { runs(first: ${MAX_RUNS_PAGE}) { nodes { ${'runId '.repeat(n)}} } }`),
  [`alias flood: 20 × runs(first: ${MAX_RUNS_PAGE})`]: `query { ${Array.from({ length: 20 }, (_, i) => `r${i}: runs(first: ${MAX_RUNS_PAGE}) { nodes { ${RUN_FIELDS} } }`).join(' ')} }`,
  'directive flood': largest(
    (n) => `query { ${Array.from({ length: n }, (_, i) => `g${i % 20}: gates @include(if: true) { consumer }`).join(' ')} }`,
  ),
  'deep literal (JSON)': largest(
    (n) =>
      `mutation { createRun(input: {jobKey: "J", businessKey: "DEEP", hdfsRoot: "/d", stageTablePrefix: "T_", parameters: ${'{n: '.repeat(n)}1${'}'.repeat(n)}}) { runId } }`,
  ),
};

let api: ServedApi;
let databaseUrl: string;

async function restart(): Promise<void> {
  api.process.kill('SIGKILL');
  await new Promise((r) => api.process.once('exit', r));
  api = await startCli('serve', databaseUrl, ENV);
}

interface Timed {
  status: number | 'timeout' | string;
  cpuMs: number;
  wallMs: number;
  /** The API's VmRSS peak during the request, above its VmRSS before it. */
  rssMb: number;
}

/** One request, sequentially: the API's CPU (utime + stime from /proc), the wall time and the memory it took. */
async function timed(query: string, variables: Record<string, unknown> = {}): Promise<Timed> {
  const pid = api.process.pid!;
  const cpu = processCpuSeconds(pid);
  const rssBefore = rssMegabytes(pid);
  const sampler = sampleRss(pid, 5);
  const started = performance.now();
  const measured = (status: Timed['status']): Timed => ({
    status,
    cpuMs: (processCpuSeconds(pid) - cpu) * 1000,
    wallMs: performance.now() - started,
    rssMb: sampler.stop().peakMb - rssBefore,
  });
  try {
    const token = query.startsWith('mutation') ? BENCH_TOKEN : VIEWER_TOKEN;
    const { status } = await gqlRequest(api.url, query, variables, { token, timeoutMs: REQUEST_TIMEOUT_MS });
    return measured(status);
  } catch (error) {
    const name = (error as Error).name;
    return measured(name === 'TimeoutError' ? 'timeout' : name);
  }
}

const REGISTER_MANIFEST =
  'mutation($input: RegisterManifestInput!) { registerManifest(input: $input) { status dispatchPartitions { partitionId } } }';

/** RUNS runs, and one with the largest manifest allowed; returns that run's id and its manifest. */
async function seed(): Promise<{ runId: string; manifest: Record<string, unknown> }> {
  for (let i = 0; i < RUNS; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, RUNS - i) }, (_, j) =>
        gqlRequest(api.url, 'mutation($input: CreateRunInput!) { createRun(input: $input) { runId } }', {
          input: {
            jobKey: 'BENCH_HOSTILE',
            businessKey: `BK_${i + j}`,
            hdfsRoot: '/data',
            stageTablePrefix: 'T_',
            parameters: { i: i + j },
          },
        }),
      ),
    );
  }
  const created = await gqlRequest(
    api.url,
    'mutation($input: CreateRunInput!) { createRun(input: $input) { runId } }',
    { input: { jobKey: 'BENCH_HOSTILE', businessKey: 'BK_LARGEST', hdfsRoot: '/data', stageTablePrefix: 'T_' } },
    { token: BENCH_TOKEN },
  );
  const runId = created.body.data.createRun.runId as string;
  const input = {
    runId,
    sourceCount: String(MAX_PARTITIONS),
    plannedPartitionCount: String(MAX_PARTITIONS),
    partitions: Array.from({ length: MAX_PARTITIONS }, (_, i) => ({
      partitionId: String(i).padStart(4, '0'),
      lowerBound: String(i * 10),
      upperBound: String(i * 10 + 10),
      upperInclusive: i === MAX_PARTITIONS - 1,
      expectedRowCount: '1',
    })),
  };
  const manifest = await gqlRequest(api.url, REGISTER_MANIFEST, { input }, { token: BENCH_TOKEN, timeoutMs: 120_000 });
  if (manifest.body.data?.registerManifest?.status !== 'EXTRACTING') throw new Error(JSON.stringify(manifest.body));
  return { runId, manifest: input };
}

/**
 * What the limits let through at their most expensive: the console's page of the largest run, runs pages near
 * the cost limit, and the largest manifest sent again (a replay: parsed, validated and compared in full).
 */
function acceptedDocuments(largest: Awaited<ReturnType<typeof seed>>): Documents {
  const eventFields = 'eventId eventTime level name partitionId processGroup errorCode message actor';
  const page = (alias: string) =>
    `${alias}: runs(first: ${MAX_RUNS_PAGE}) { nodes { ${RUN_SCALARS} events(last: 10) { ${eventFields} } } }`;
  return {
    'console run page, 10,000 partitions': {
      query: documentText(consoleOperations.RUN),
      variables: { runId: largest.runId, withPartitions: true },
    },
    [`3 × runs(first: ${MAX_RUNS_PAGE}) with events, near the cost limit`]: {
      query: `{ ${['a', 'b', 'c'].map(page).join(' ')} }`,
      variables: {},
    },
    'registerManifest replay, 10,000 partitions': { query: REGISTER_MANIFEST, variables: { input: largest.manifest } },
  };
}

type Documents = Record<string, { query: string; variables: Record<string, unknown> }>;
/** BENCH_DOCUMENTS=<substring>: only the documents whose name contains it. */
const only = (documents: Documents): Documents =>
  Object.fromEntries(Object.entries(documents).filter(([name]) => name.includes(process.env.BENCH_DOCUMENTS ?? '')));
const asDocuments = (queries: Record<string, string>): Documents =>
  Object.fromEntries(Object.entries(queries).map(([name, query]) => [name, { query, variables: {} }]));

async function documentCosts(title: string, documents: Documents) {
  const rows: Array<Record<string, string | number>> = [];
  const results: Record<string, { status: Timed['status']; cpuMs: number; wallMs: number; rssMb: number }> = {};
  for (const [name, { query, variables }] of Object.entries(documents)) {
    const rounds: Timed[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t = await timed(query, variables);
      rounds.push(t);
      if (t.status === 'timeout') {
        await restart();
        break;
      }
    }
    const statuses = [...new Set(rounds.map((r) => r.status))].join(', ');
    const cpuMs = median(rounds.map((r) => r.cpuMs));
    const wallMs = median(rounds.map((r) => r.wallMs));
    const rssMb = Math.max(...rounds.map((r) => r.rssMb));
    results[name] = { status: statuses, cpuMs, wallMs, rssMb };
    rows.push({
      document: name,
      bytes: query.length,
      status: statuses,
      rounds: rounds.length,
      'API CPU ms (median)': fmt(cpuMs, 0),
      'wall ms (median)': fmt(wallMs, 0),
      'RSS increase MB (max)': fmt(rssMb, 1),
    });
  }
  printTable(
    `${title} (median of up to ${ROUNDS}; a timeout is ${REQUEST_TIMEOUT_MS / 1000} s and ends the rounds; CPU is counted in 10 ms ticks)`,
    rows,
  );
  return results;
}

/** /healthz every 10 ms while four copies of the document run at once, for a few seconds. */
async function healthUnderLoad(name: string, { query, variables }: Documents[string], seconds = 3) {
  const latencies: number[] = [];
  let failed = 0;
  const statuses = new Map<string, number>();
  const until = performance.now() + seconds * 1000;
  const load = Array.from({ length: 4 }, async () => {
    while (performance.now() < until) {
      const t = await timed(query, variables);
      statuses.set(String(t.status), (statuses.get(String(t.status)) ?? 0) + 1);
      if (t.status === 'timeout') return;
    }
  });
  const probe = (async () => {
    while (performance.now() < until) {
      const started = performance.now();
      try {
        await request(`${api.url}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).then((r) => r.body.text());
        latencies.push(performance.now() - started);
      } catch {
        failed++;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  await Promise.all([...load, probe]);
  if (statuses.has('timeout')) await restart();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? Number.NaN;
  return {
    document: name,
    statuses: [...statuses].map(([s, n]) => `${s}×${n}`).join(', '),
    probes: latencies.length,
    failed,
    p50: at(0.5),
    p99: at(0.99),
  };
}

/** Ten concurrent POSTs of 15 MB without a token: the API's VmRSS before and at its peak. */
async function anonymousBodies() {
  await new Promise((r) => setTimeout(r, 500));
  const pid = api.process.pid!;
  const before = rssMegabytes(pid);
  const sampler = sampleRss(pid, 20);
  const body = Buffer.alloc(15 * 1024 * 1024, 'a');
  const started = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: 10 }, () =>
      request(`${api.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(60_000),
      }).then(
        async (r) => {
          await r.body.text();
          return String(r.statusCode);
        },
        (error: Error) => (error as { code?: string }).code ?? error.name,
      ),
    ),
  );
  const ms = performance.now() - started;
  await new Promise((r) => setTimeout(r, 200));
  const memory = sampler.stop();
  const counted: Record<string, number> = {};
  for (const s of statuses) counted[s] = (counted[s] ?? 0) + 1;
  return { beforeMb: before, peakMb: memory.peakMb, increaseMb: memory.peakMb - before, ms, statuses: counted };
}

/** ~50 keep-alive clients sending createRun continuously; SIGTERM after 2 s; what each request got. */
async function shutdownUnderLoad() {
  const served = await startCli('serve', databaseUrl, ENV);
  const outcomes = new Map<string, number>();
  const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  let createdAnswers = 0;
  let stopped = false;
  let n = 0;
  const clients = Array.from({ length: 50 }, async () => {
    while (!stopped) {
      const key = `hostile-shutdown-${n++}`;
      try {
        const r = await gqlRequest(
          served.url,
          'mutation($input: CreateRunInput!) { createRun(input: $input) { runId created } }',
          { input: { jobKey: 'BENCH_SHUTDOWN', businessKey: key, hdfsRoot: '/data', stageTablePrefix: 'T_', idempotencyKey: key } },
          { timeoutMs: 30_000 },
        );
        count(String(r.status));
        if (r.body?.data?.createRun?.created) createdAnswers++;
      } catch (error) {
        const code = (error as { code?: string }).code ?? (error as Error).name;
        // refused connections never reached the API: the clients stop there
        if (code === 'ECONNREFUSED') {
          count('connection refused');
          return;
        }
        count(`no complete response (${code})`);
      }
    }
  });
  await new Promise((r) => setTimeout(r, 2_000));
  const signalled = performance.now();
  served.process.kill('SIGTERM');
  const exited = new Promise<number>((resolve) => served.process.once('exit', () => resolve(performance.now() - signalled)));
  const exitMs = await Promise.race([exited, new Promise<number>((r) => setTimeout(() => r(Number.NaN), 60_000))]);
  stopped = true;
  if (Number.isNaN(exitMs)) served.process.kill('SIGKILL');
  await Promise.race([Promise.all(clients), new Promise((r) => setTimeout(r, 35_000))]);
  const pg = (await import('pg')).default;
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  const { rows } = await sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = 'BENCH_SHUTDOWN'`);
  await sql.end();
  const incomplete = [...outcomes].filter(([k]) => k.startsWith('no complete')).reduce((a, [, v]) => a + v, 0);
  return { exitMs, incomplete, outcomes: Object.fromEntries(outcomes), runsInDatabase: rows[0].n as number, createdAnswers };
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  databaseUrl = database.url;
  api = await startCli('serve', databaseUrl, ENV);
  try {
    const largest = await seed();
    const hostile = only(asDocuments(DOCUMENTS));
    const accepted = only(acceptedDocuments(largest));
    const costs = {
      ...(await documentCosts('the worst documents within the limits, one at a time', hostile)),
      ...(await documentCosts('the costliest requests the limits accept, one at a time', accepted)),
    };
    const health = [];
    for (const [name, document] of Object.entries({ ...hostile, ...accepted })) {
      // a document that hung alone would hold the API for the whole window: its number is its timeout above
      if (costs[name]!.status === 'timeout') continue;
      health.push(await healthUnderLoad(name, document));
    }
    printTable(
      '/healthz latency while four such requests run at once (3 s each)',
      health.map((h) => ({
        document: h.document,
        'their statuses': h.statuses,
        probes: h.probes,
        failed: h.failed,
        'p50 ms': fmt(h.p50, 1),
        'p99 ms': fmt(h.p99, 1),
      })),
    );
    const bodies = await anonymousBodies();
    printTable('ten concurrent anonymous 15 MB bodies (target: under +50 MB)', [
      {
        'VmRSS before MB': fmt(bodies.beforeMb),
        'peak MB': fmt(bodies.peakMb),
        'increase MB': fmt(bodies.increaseMb),
        'wall ms': fmt(bodies.ms, 0),
        statuses: JSON.stringify(bodies.statuses),
      },
    ]);
    await api.stop();
    const shutdown = await shutdownUnderLoad();
    printTable('SIGTERM under 50 keep-alive createRun clients (target: 0 without a complete response)', [
      {
        'exit ms': fmt(shutdown.exitMs, 0),
        'no complete response': shutdown.incomplete,
        outcomes: JSON.stringify(shutdown.outcomes),
        'runs in the database': shutdown.runsInDatabase,
        'created: true answers': shutdown.createdAnswers,
      },
    ]);
    console.log(
      JSON.stringify({
        bench: 'hostile',
        documents: costs,
        healthz: Object.fromEntries(health.map((h) => [h.document, { p50Ms: h.p50, p99Ms: h.p99, failed: h.failed }])),
        anonymousBodies: bodies,
        shutdown,
      }),
    );
  } finally {
    if (api.process.exitCode === null && api.process.signalCode === null) await api.stop();
    await database.close();
  }
}

await main();
