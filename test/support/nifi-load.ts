// NiFi-like load on an API while its database fails over (test/process/failover.test.ts, test/ha/): flows that drive
// runs through createRun, the manifest, claims and chunk reports and read each run's dispatch back on the execution
// thread, a console page polling the runs and a load balancer polling /readyz. Every client sends a request again
// after a 503, as NiFi does, and every answer is recorded; what a client got a 200 for is kept, to be looked for in
// the database afterwards. A receiver can play NiFi's validation flow too: each VALIDATE_RUN it receives is
// started with startValidation, the compare-and-set that lets one delivery of a dispatch win.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import { graphqlCaller } from './api.js';
import { JOB, START_VALIDATION } from './fixtures.js';
import { claimPartition, partitionId, reportChunks, startRun, validateDispatch, type Gql } from './ledger-flow.js';
import type { Receiver } from './receiver.js';
import { until } from './until.js';

/** Each run: three partitions of two chunks. */
const ROWS = [4, 4, 4];
const CHUNKS = 2;
/** How soon a client sends a request again after a 503 (NiFi waits the Retry-After, 1 s; shorter here, to time the window). */
const RETRY_MS = 100;

export interface Answer {
  at: number;
  status: number;
  code: string | undefined;
  /** A query: the execution thread answered it. */
  query: boolean;
}

/** What a client got a 200 for. */
export interface Acknowledged {
  runId: string;
  startedAt: number;
  claims: Array<{ partitionId: string; claimToken: string }>;
  files: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A caller that sends a request again after every 503, as NiFi does, and records every answer. */
function retryingGql(url: string, answers: Answer[]): Gql {
  const gql = graphqlCaller(url);
  return async function retrying<T>(query: string, variables?: Record<string, unknown>, options?: Parameters<Gql>[2]) {
    for (;;) {
      const res = await gql<T>(query, variables, options);
      answers.push({ at: performance.now(), status: res.status, code: res.code, query: !query.trimStart().startsWith('mutation') });
      if (res.status !== 503) return res;
      await sleep(RETRY_MS);
    }
  };
}

/** One NiFi flow: runs until `stopped()`, each to EXTRACTED_VALIDATED; records what it was acknowledged. */
async function nifiFlow(gql: Gql, name: string, stopped: () => boolean, done: Acknowledged[]): Promise<void> {
  while (!stopped()) {
    const startedAt = performance.now();
    const run = await startRun(gql, JOB, `BK_${name}_${randomUUID().slice(0, 8)}`, ROWS);
    const acknowledged: Acknowledged = { runId: run.runId, startedAt, claims: [], files: [] };
    for (const [index, rows] of ROWS.entries()) {
      const partition = partitionId(index);
      const claimToken = await claimPartition(gql, run.runId, partition);
      acknowledged.claims.push({ partitionId: partition, claimToken });
      await reportChunks(gql, run, partition, claimToken, { from: 0, to: CHUNKS, chunkCount: CHUNKS, rows: rows / CHUNKS });
      for (let chunk = 0; chunk < CHUNKS; chunk++) {
        acknowledged.files.push(`${run.hdfsRunPath}/part-${partition}-${String(chunk).padStart(6, '0')}.parquet`);
      }
    }
    // a query, on serve's execution thread
    await validateDispatch(gql, run.runId);
    done.push(acknowledged);
  }
}

export interface NifiLoad {
  answers: Answer[];
  readiness: Array<{ at: number; status: number }>;
  /** Per flow, the runs it finished. */
  done: Acknowledged[][];
  /** Polls until `condition` holds; fails at once with the error of a client that failed. */
  until(what: string, condition: () => boolean, timeoutMs: number): Promise<void>;
  /** Stops every client and waits for them; throws the first client's failure. */
  stop(): Promise<void>;
}

/** `flows` NiFi flows (business keys BK_<name>_…), a console page and a load balancer, against the API at `apiUrl`. */
export function startNifiLoad(apiUrl: string, name: string, flows: number): NifiLoad {
  const answers: Answer[] = [];
  const readiness: Array<{ at: number; status: number }> = [];
  const gql = retryingGql(apiUrl, answers);
  const done: Acknowledged[][] = Array.from({ length: flows }, () => []);
  let stop = false;
  const stopped = () => stop;
  // a client that fails stops them all, and the waits at once
  let failure: unknown;
  const failFast = <T>(client: Promise<T>) =>
    client.catch((error: unknown) => {
      failure ??= error;
      stop = true;
      throw error;
    });

  // a console page polling the runs (the execution thread) and a load balancer polling /readyz, all along
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
          readiness.push({ at: performance.now(), status: (await fetch(`${apiUrl}/readyz`)).status });
          await sleep(100);
        }
      })(),
    ),
  ]);
  const clients = Promise.all(done.map((acknowledged, flow) => failFast(nifiFlow(gql, `${name}_${flow}`, stopped, acknowledged))));
  // their failure is reported by stop()
  for (const running of [clients, watchers]) running.catch(() => undefined);
  return {
    answers,
    readiness,
    done,
    async until(what, condition, timeoutMs) {
      await until(
        what,
        () => {
          if (failure) throw failure;
          return condition();
        },
        timeoutMs,
      );
    },
    async stop() {
      stop = true;
      await Promise.all([clients, watchers]);
    },
  };
}

/** Answers other than 200 and 503 SERVICE_UNAVAILABLE: there must be none. */
export const unexpectedAnswers = (answers: Answer[]): Answer[] =>
  answers.filter((a) => a.status !== 200 && !(a.status === 503 && a.code === 'SERVICE_UNAVAILABLE'));

/** Every run, claim and file the clients got a 200 for is in the database at `url`, each run in `status`. */
export async function expectAcknowledgedWrites(url: string, runs: Acknowledged[], status: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const runIds = runs.map((run) => run.runId);
    const statuses = await client.query<{ run_id: string; status: string }>(
      'SELECT run_id::text, status FROM nifi_ops.load_run WHERE run_id = ANY($1::uuid[])',
      [runIds],
    );
    expect(new Map(statuses.rows.map((r) => [r.run_id, r.status]))).toEqual(new Map(runIds.map((id) => [id, status])));
    const claims = await client.query<{ run_id: string; partition_id: string; claim_token: string }>(
      'SELECT run_id::text, partition_id, claim_token::text FROM nifi_ops.load_partition WHERE run_id = ANY($1::uuid[])',
      [runIds],
    );
    const claimed = new Set(claims.rows.map((r) => `${r.run_id}/${r.partition_id}/${r.claim_token}`));
    for (const run of runs) for (const c of run.claims) expect(claimed.has(`${run.runId}/${c.partitionId}/${c.claimToken}`)).toBe(true);
    const files = await client.query<{ hdfs_path: string }>('SELECT hdfs_path FROM nifi_ops.load_file WHERE run_id = ANY($1::uuid[])', [
      runIds,
    ]);
    expect(files.rows.map((r) => r.hdfs_path).sort()).toEqual(runs.flatMap((run) => run.files).sort());
  } finally {
    await client.end();
  }
}

export interface Validations {
  /** Per dispatch, how many startValidation calls won (answered started: true). */
  wins: Map<string, number>;
  /** Waits until every delivery received so far has had its startValidation answered; throws if one was not 200 or 503. */
  settled(): Promise<void>;
}

/**
 * NiFi's validation flow behind `receiver`: every VALIDATE_RUN it receives (each delivery, repeats included) is
 * started with startValidation — sent again after a 503, like any NiFi call — after the receiver answered.
 */
export function validateOnDelivery(receiver: Receiver, apiUrl: string): Validations {
  const gql = graphqlCaller(apiUrl);
  const wins = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();
  const failures: unknown[] = [];
  receiver.onCall((call) => {
    if (!call.path.includes('/validate/')) return;
    const { runId, dispatchId } = call.body as { runId: string; dispatchId: string };
    const started = (async () => {
      for (;;) {
        const res = await gql<{ startValidation: { started: boolean } }>(START_VALIDATION, {
          input: { runId, dispatchId, node: 'nifi-01' },
        });
        if (res.status === 503) {
          await sleep(RETRY_MS);
          continue;
        }
        if (res.status !== 200 || !res.body.data) throw new Error(`startValidation: HTTP ${res.status} ${JSON.stringify(res.body.errors)}`);
        if (res.body.data.startValidation.started) wins.set(dispatchId, (wins.get(dispatchId) ?? 0) + 1);
        return;
      }
    })().catch((error: unknown) => {
      failures.push(error);
    });
    inFlight.add(started);
    void started.then(() => inFlight.delete(started));
  });
  return {
    wins,
    async settled() {
      while (inFlight.size > 0) await Promise.all(inFlight);
      if (failures.length > 0) throw failures[0];
    },
  };
}
