// The bound of every request (README "When the database stalls"): with database.acquireTimeout 1 s and
// database.statementTimeout 2 s, every request is answered — 200 or 503, never 500 — within 5 s while the database
// does not answer at all, under a NiFi-like load of createRun, manifests, claims, chunk reports (the group commit
// queueing behind stuck batches) and queries, with a console page and a load balancer polling. Twice: a server
// frozen by SIGSTOP (its postmaster and every backend), and a network path that stops forwarding without closing
// anything (test/support/tcp-proxy.ts). `serve` and `work` run as processes; afterwards every write a client got a
// 200 for is in the database, counted once, and every VALIDATE_RUN reaches the receiver, with no restart.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { graphqlCaller, testConfig } from '../support/api.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { CREATE_RUN, HDFS_ROOT, JOB, REGISTER_MANIFEST, manifestInput } from '../support/fixtures.js';
import {
  call,
  claimPartition,
  partitionId,
  reportChunks,
  runState,
  startRun,
  validateDispatch,
  type Gql,
  type StartedRun,
} from '../support/ledger-flow.js';
import { createPgClusters, type PgCluster, type PgClusters } from '../support/pg-cluster.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

const DATABASE = 'load_control';
const TIMEOUTS = { LC_DATABASE__ACQUIRE_TIMEOUT: 'PT1S', LC_DATABASE__STATEMENT_TIMEOUT: 'PT2S' };
/** The promise for 1 s + 2 s: every request answered within 5 s. */
const BOUND_MS = 5_000;
/** How long the database stays silent. */
const STALL_MS = 15_000;
const FLOWS = 4;
const ROWS = [8, 8, 8];
/** The stall load: runs of this many partitions, reported by this many concurrent reporters, and manifests. */
const PRESSURE_ROWS = Array.from({ length: 12 }, () => 8);
const REPORTERS = 12;
const MANIFESTS = 3;
/** Each partition's chunks are reported at once, as NiFi's concurrent tasks do: they queue in the group commit. */
const CHUNKS = 4;
/** How soon a client sends a request again after a 503 (NiFi waits the Retry-After, 1 s). */
const RETRY_MS = 100;

interface Answer {
  /** The operation: the root field, or the endpoint. */
  operation: string;
  sentAt: number;
  ms: number;
  status: number;
  code: string | undefined;
}

interface Acknowledged {
  runId: string;
  startedAt: number;
  claims: Array<{ partitionId: string; claimToken: string }>;
  files: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rootField = (document: string) =>
  document
    .slice(document.indexOf('{') + 1)
    .trim()
    .match(/^\w+/)?.[0] ?? '?';

/** A caller that times every answer and sends a request again after a 503, as NiFi does. */
function timedGql(url: string, answers: Answer[]): Gql {
  const gql = graphqlCaller(url);
  return async function timed<T>(query: string, variables?: Record<string, unknown>, options?: Parameters<Gql>[2]) {
    for (;;) {
      const sentAt = performance.now();
      const res = await gql<T>(query, variables, options);
      answers.push({ operation: rootField(query), sentAt, ms: performance.now() - sentAt, status: res.status, code: res.code });
      if (res.status !== 503) return res;
      await sleep(RETRY_MS);
    }
  };
}

/** One NiFi flow: runs until `stopped()`, each to EXTRACTED_VALIDATED; returns what it was acknowledged. */
async function nifiFlow(gql: Gql, flow: number, stopped: () => boolean, done: Acknowledged[]): Promise<void> {
  while (!stopped()) {
    const startedAt = performance.now();
    const run = await startRun(gql, JOB, `BK_STALL_${flow}_${randomUUID().slice(0, 8)}`, ROWS);
    const acknowledged: Acknowledged = { runId: run.runId, startedAt, claims: [], files: [] };
    await Promise.all(
      ROWS.map(async (rows, index) => {
        const partition = partitionId(index);
        const claimToken = await claimPartition(gql, run.runId, partition);
        acknowledged.claims.push({ partitionId: partition, claimToken });
        await Promise.all(
          Array.from({ length: CHUNKS }, (_, chunk) =>
            reportChunks(gql, run, partition, claimToken, { from: chunk, to: chunk + 1, chunkCount: CHUNKS, rows: rows / CHUNKS }),
          ),
        );
        for (let chunk = 0; chunk < CHUNKS; chunk++) {
          acknowledged.files.push(`${run.hdfsRunPath}/part-${partition}-${String(chunk).padStart(6, '0')}.parquet`);
        }
      }),
    );
    // a query, on serve's execution thread
    await validateDispatch(gql, run.runId);
    done.push(acknowledged);
  }
}

let clusters: PgClusters;
let server: PgCluster;
let proxy: TcpProxy;
let receiver: Receiver;
let serve: CliProcess;
let work: CliProcess;
let apiUrl: string;
/** Every run a flow finished, over both stalls. */
const finished: Acknowledged[] = [];

beforeAll(async () => {
  clusters = await createPgClusters();
  server = await clusters.primary('stalling', await freePort());
  const admin = new pg.Client({ connectionString: server.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();
  await migrate(server.url(DATABASE));
  proxy = await startTcpProxy('127.0.0.1', server.port);
  receiver = await startReceiver();

  const viaProxy = `postgresql://postgres@127.0.0.1:${proxy.port}/${DATABASE}`;
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  serve = runCli(['serve'], {
    ...TIMEOUTS,
    DATABASE_URL: viaProxy,
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
    LC_AUTH__TOKENS: JSON.stringify(testConfig().auth.tokens),
  });
  work = runCli(['work'], {
    ...TIMEOUTS,
    DATABASE_URL: viaProxy,
    LC_NIFI__RECEIVER_URL: receiver.url,
    LC_NIFI__TIMEOUT_SECONDS: '2',
    LC_DISPATCH__LEASE: 'PT5S',
    LC_DISPATCH__POLL_INTERVAL: '0.5',
  });
  await until('serve to be ready', async () => (await fetch(`${apiUrl}/readyz`).catch(() => undefined))?.status === 200, 60_000);
  await until('work to start', () => work.output().includes('"worker_started"'), 60_000);
});

afterAll(async () => {
  server?.thaw();
  proxy?.thaw();
  for (const child of [serve, work]) if (child && child.exitCode === null) child.kill('SIGKILL');
  await Promise.all([serve?.exited, work?.exited]);
  await receiver?.close();
  await proxy?.close();
  await clusters?.close();
});

/** Claims every partition of a run; the tokens. */
async function claimAll(gql: Gql, runId: string, partitions: number): Promise<string[]> {
  return Promise.all(Array.from({ length: partitions }, (_, i) => claimPartition(gql, runId, partitionId(i))));
}

/**
 * What the stall meets besides the flows, started with it: every kind of request at once, as NiFi's concurrent
 * tasks send them. Reports of a run whose partitions were claimed before (REPORTERS at a time: the group commit
 * queues them behind stuck batches), claims of another run's partitions, manifests of runs created before, and a
 * run read again and again; each sent again after a 503 until it is answered 200.
 */
async function stallLoad(gql: Gql, stopped: () => boolean) {
  const reported = await startRun(gql, JOB, `BK_STALL_REPORTED_${randomUUID().slice(0, 8)}`, PRESSURE_ROWS);
  const tokens = await claimAll(gql, reported.runId, PRESSURE_ROWS.length);
  const claimed = await startRun(gql, JOB, `BK_STALL_CLAIMED_${randomUUID().slice(0, 8)}`, PRESSURE_ROWS);
  const created = await Promise.all(
    Array.from({ length: MANIFESTS }, async () => {
      const run = await call<{ runId: string }>(gql, CREATE_RUN, {
        input: { jobKey: JOB, businessKey: `BK_STALL_MANIFEST_${randomUUID().slice(0, 8)}`, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_' },
      });
      return run.runId;
    }),
  );
  const chunks = tokens.flatMap((claimToken, index) =>
    Array.from({ length: CHUNKS }, (_, chunk) => ({ partition: partitionId(index), claimToken, chunk })),
  );
  return {
    reported,
    tokens,
    claimed,
    created,
    /** Sends it all; resolves when every request got its 200. */
    start: async (): Promise<{ claimTokens: string[] }> => {
      const queue = [...chunks];
      const reporters = Array.from({ length: REPORTERS }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const rows = PRESSURE_ROWS[Number(next.partition)]! / CHUNKS;
          await reportChunks(gql, reported, next.partition, next.claimToken, {
            from: next.chunk,
            to: next.chunk + 1,
            chunkCount: CHUNKS,
            rows,
          });
        }
      });
      const claims = claimAll(gql, claimed.runId, PRESSURE_ROWS.length);
      const manifests = Promise.all(created.map((runId) => call(gql, REGISTER_MANIFEST, { input: manifestInput(runId, PRESSURE_ROWS) })));
      // a createRun sent while the database is silent, whatever phase the flows are in
      const creation = call(gql, CREATE_RUN, {
        input: { jobKey: JOB, businessKey: `BK_STALL_CREATED_${randomUUID().slice(0, 8)}`, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_' },
      });
      const reads = (async () => {
        while (!stopped()) await runState(gql, reported.runId);
      })();
      const [, claimTokens] = await Promise.all([Promise.all(reporters), claims, manifests, reads, creation]);
      return { claimTokens };
    },
  };
}

/** What the stall load was acknowledged, for the final check. */
const stallLoads: Array<{ reported: StartedRun; claimed: StartedRun; claimTokens: string[]; created: string[] }> = [];

/**
 * Drives the flows, a console page and a load balancer; once each flow finished a run, the database stalls for
 * STALL_MS with the stall load sent at once, then answers again; ends when each flow finished a run begun after
 * that and the stall load is through. Returns every answer, and when the stall began and ended.
 */
async function underLoad(stall: () => void, resume: () => void): Promise<{ answers: Answer[]; stalledAt: number; resumedAt: number }> {
  const answers: Answer[] = [];
  const gql = timedGql(apiUrl, answers);
  const done: Acknowledged[][] = Array.from({ length: FLOWS }, () => []);
  let stop = false;
  let failure: unknown;
  const failFast = <T>(work: Promise<T>) =>
    work.catch((error: unknown) => {
      failure ??= error;
      stop = true;
      throw error;
    });
  const unlessFailed = (condition: () => boolean) => () => {
    if (failure) throw failure;
    return condition();
  };
  const extra = await stallLoad(gql, () => stop);
  const watchers = Promise.all([
    failFast(
      (async () => {
        while (!stop) {
          await gql('{ runs(first: 5) { nodes { runId status } } }', {}, { token: 'viewer' });
          await sleep(50);
        }
      })(),
    ),
    failFast(
      (async () => {
        while (!stop) {
          const sentAt = performance.now();
          const { status } = await fetch(`${apiUrl}/readyz`);
          answers.push({ operation: '/readyz', sentAt, ms: performance.now() - sentAt, status, code: undefined });
          await sleep(100);
        }
      })(),
    ),
  ]);
  const flows = Promise.all(done.map((acknowledged, flow) => failFast(nifiFlow(gql, flow, () => stop, acknowledged))));
  let stalled: Promise<{ claimTokens: string[] }> | undefined;
  for (const clients of [flows, watchers]) clients.catch(() => undefined);
  let stalledAt = 0;
  let resumedAt = 0;
  try {
    await until(
      'each flow to finish a run',
      unlessFailed(() => done.every((runs) => runs.length >= 1)),
      60_000,
    );
    stalledAt = performance.now();
    stall();
    stalled = failFast(extra.start());
    stalled.catch(() => undefined);
    await sleep(STALL_MS);
    resume();
    resumedAt = performance.now();
    await until(
      'each flow to finish a run begun after the stall',
      unlessFailed(() => done.every((runs) => runs.some((run) => run.startedAt > resumedAt))),
      90_000,
    );
  } finally {
    stop = true;
    await Promise.all([flows, watchers, stalled]);
  }
  const { claimTokens } = (await stalled)!;
  stallLoads.push({ reported: extra.reported, claimed: extra.claimed, claimTokens, created: extra.created });
  finished.push(...done.flat(), {
    runId: extra.reported.runId,
    startedAt: stalledAt,
    claims: extra.tokens.map((claimToken, i) => ({ partitionId: partitionId(i), claimToken })),
    files: extra.tokens.flatMap((_, i) =>
      Array.from(
        { length: CHUNKS },
        (_c, chunk) => `${extra.reported.hdfsRunPath}/part-${partitionId(i)}-${String(chunk).padStart(6, '0')}.parquet`,
      ),
    ),
  });
  return { answers, stalledAt, resumedAt };
}

/** Checks the answers and prints, per operation, the longest answer of those sent while the database was silent. */
function expectAnsweredWithinBound(label: string, { answers, stalledAt, resumedAt }: Awaited<ReturnType<typeof underLoad>>): void {
  expect(
    answers.filter((a) => a.status !== 200 && !(a.status === 503 && (a.code === 'SERVICE_UNAVAILABLE' || a.operation === '/readyz'))),
  ).toEqual([]);
  const during = answers.filter((a) => a.sentAt >= stalledAt && a.sentAt < resumedAt);
  const byOperation = new Map<string, Answer[]>();
  for (const answer of during) byOperation.set(answer.operation, [...(byOperation.get(answer.operation) ?? []), answer]);
  const summary = [...byOperation].map(([operation, list]) => {
    const longest = Math.max(...list.map((a) => a.ms));
    return `${operation} ${Math.round(longest)} ms (${list.length}, ${list.filter((a) => a.status === 503).length}×503)`;
  });
  console.log(`[${label}] longest answer per operation sent during the ${STALL_MS / 1000} s stall: ${summary.join('; ')}`);
  for (const operation of ['createRun', 'registerManifest', 'claimPartition', 'reportChunk', 'run', 'runs', '/readyz']) {
    expect(byOperation.get(operation)?.length ?? 0, `${operation} requests during the stall`).toBeGreaterThan(0);
  }
  expect(during.filter((a) => a.status === 503).length).toBeGreaterThan(0);
  expect(answers.filter((a) => a.ms >= BOUND_MS)).toEqual([]);
}

describe('a database that stops answering under load (acquire 1 s, statement 2 s)', () => {
  it('frozen by SIGSTOP: every request is answered 200 or 503 within 5 s', async () => {
    const result = await underLoad(
      () => server.freeze(),
      () => server.thaw(),
    );
    expectAnsweredWithinBound('SIGSTOP', result);
  }, 180_000);

  it('behind a proxy that stops forwarding: every request is answered 200 or 503 within 5 s', async () => {
    const result = await underLoad(
      () => proxy.freeze(),
      () => proxy.thaw(),
    );
    expectAnsweredWithinBound('stalled proxy', result);
  }, 180_000);

  it('after both, every acknowledged write is in the database, counted once, every VALIDATE_RUN delivered, no restart', async () => {
    expect([serve.exitCode, serve.signalCode, work.exitCode, work.signalCode]).toEqual([null, null, null, null]);
    const db = new pg.Client({ connectionString: server.url(DATABASE) });
    await db.connect();
    try {
      const runIds = finished.map((run) => run.runId);
      const runs = await db.query<{ run_id: string; status: string; extracted_count: string }>(
        'SELECT run_id::text, status, extracted_count::text FROM nifi_ops.load_run WHERE run_id = ANY($1::uuid[])',
        [runIds],
      );
      const total = (runId: string) => String(finished.find((run) => run.runId === runId)!.claims.length * ROWS[0]!);
      expect(new Map(runs.rows.map((r) => [r.run_id, [r.status, r.extracted_count]]))).toEqual(
        new Map(runIds.map((id) => [id, ['EXTRACTED_VALIDATED', total(id)]])),
      );
      const partitions = await db.query<{ run_id: string; partition_id: string; claim_token: string; counters: string }>(
        `SELECT run_id::text, partition_id, claim_token::text,
                concat_ws('/', status, received_chunks, file_count, actual_row_count, received_rows) AS counters
           FROM nifi_ops.load_partition WHERE run_id = ANY($1::uuid[])`,
        [runIds],
      );
      const stored = new Map(partitions.rows.map((r) => [`${r.run_id}/${r.partition_id}/${r.claim_token}`, r.counters]));
      const expected = new Map(
        finished.flatMap((run) =>
          run.claims.map((c) => {
            const rows = ROWS[0]!;
            return [`${run.runId}/${c.partitionId}/${c.claimToken}`, `SUCCESS/${CHUNKS}/${CHUNKS}/${rows}/${rows}`] as const;
          }),
        ),
      );
      expect(stored).toEqual(expected);
      const files = await db.query<{ hdfs_path: string }>('SELECT hdfs_path FROM nifi_ops.load_file WHERE run_id = ANY($1::uuid[])', [
        runIds,
      ]);
      expect(files.rows.map((r) => r.hdfs_path).sort()).toEqual(finished.flatMap((run) => run.files).sort());
      // the stall load's claims and manifests
      for (const load of stallLoads) {
        const claims = await db.query<{ claim_token: string }>(
          'SELECT claim_token::text FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id',
          [load.claimed.runId],
        );
        expect(claims.rows.map((r) => r.claim_token)).toEqual(load.claimTokens);
        const manifests = await db.query<{ run_id: string; status: string; partitions: number }>(
          `SELECT run_id::text, status, (SELECT count(*)::int FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id) AS partitions
             FROM nifi_ops.load_run r WHERE run_id = ANY($1::uuid[])`,
          [load.created],
        );
        expect(manifests.rows.map((r) => [r.status, r.partitions])).toEqual(load.created.map(() => ['EXTRACTING', PRESSURE_ROWS.length]));
      }
      const dispatches = await db.query<{ run_id: string; dispatch_id: string }>(
        `SELECT run_id::text, dispatch_id::text FROM nifi_ops.load_dispatch WHERE dispatch_type = 'VALIDATE_RUN'`,
      );
      expect(dispatches.rows.map((d) => d.run_id).sort()).toEqual([...runIds].sort());
      await until(
        'every dispatch to be delivered',
        () => dispatches.rows.every((d) => receiver.callsFor(d.dispatch_id).length > 0),
        30_000,
      );
    } finally {
      await db.end();
    }
  });
});
