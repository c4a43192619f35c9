// NiFi-like load through the API while something happens to the processes or the database behind it (a failover,
// a Patroni switchover, a rolling upgrade): flows that drive runs one after the other (createRun, the manifest,
// claims, chunk reports, a query on serve's execution thread) and a console page polling the runs, each request sent
// again after a 503 as NiFi does; a load balancer polling /readyz beside them; NiFi's validation flow behind a
// receiver. What the clients got a 200 for is kept, to be looked for in the database afterwards.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { expect } from 'vitest';
import { graphqlCaller } from './api.js';
import { JOB, START_VALIDATION } from './fixtures.js';
import { claimPartition, partitionId, reportChunks, startRun, validateDispatch, type Gql } from './ledger-flow.js';
import type { Receiver } from './receiver.js';
import { until } from './until.js';

export interface Answer {
  /** performance.now() when the answer (or the failure) came. */
  at: number;
  /** How long the request took. */
  ms: number;
  /** 0: no HTTP answer at all (the connection was refused or reset; `code` says which). */
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

/** The system call's code under fetch's "fetch failed" (ECONNRESET, ECONNREFUSED, UND_ERR_SOCKET, …). */
const failureCode = (error: unknown): string => {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error as Error).message;
};

/**
 * A caller that times and records every answer and sends a request again after a 503 — and after a connection
 * that failed without an answer, which it records as status 0 — `retryMs` later, as NiFi does (it waits the
 * Retry-After, 1 s). Sending again is safe: createRun has its idempotency key, a claim with the same token is a
 * replay, a chunk already recorded is answered `recorded: false`.
 */
function retryingGql(url: string, answers: Answer[], retryMs: number): Gql {
  const gql = graphqlCaller(url);
  return async function retrying<T>(query: string, variables?: Record<string, unknown>, options?: Parameters<Gql>[2]) {
    const isQuery = !query.trimStart().startsWith('mutation');
    for (;;) {
      const sentAt = performance.now();
      const res = await gql<T>(query, variables, options).catch((error: unknown) => {
        answers.push({ at: performance.now(), ms: performance.now() - sentAt, status: 0, code: failureCode(error), query: isQuery });
        return undefined;
      });
      if (res) answers.push({ at: performance.now(), ms: performance.now() - sentAt, status: res.status, code: res.code, query: isQuery });
      if (res && res.status !== 503) return res;
      await sleep(retryMs);
    }
  };
}

export interface FlowShape {
  /** The business keys' prefix, which says whose runs they are. */
  businessKeyPrefix: string;
  /** Rows per partition: one partition each. */
  rows: number[];
  /** Chunks per partition, reported one after the other. */
  chunks: number;
}

/** One NiFi flow: runs until `stopped()`, each to EXTRACTED_VALIDATED; pushes each run it was acknowledged. */
async function nifiFlow(gql: Gql, shape: FlowShape, flow: number, stopped: () => boolean, done: Acknowledged[]): Promise<void> {
  const { businessKeyPrefix, rows, chunks } = shape;
  while (!stopped()) {
    const startedAt = performance.now();
    const run = await startRun(gql, JOB, `${businessKeyPrefix}_${flow}_${randomUUID().slice(0, 8)}`, rows);
    const acknowledged: Acknowledged = { runId: run.runId, startedAt, claims: [], files: [] };
    for (const [index, count] of rows.entries()) {
      const partition = partitionId(index);
      const claimToken = await claimPartition(gql, run.runId, partition);
      acknowledged.claims.push({ partitionId: partition, claimToken });
      await reportChunks(gql, run, partition, claimToken, { from: 0, to: chunks, chunkCount: chunks, rows: count / chunks });
      for (let chunk = 0; chunk < chunks; chunk++) {
        acknowledged.files.push(`${run.hdfsRunPath}/part-${partition}-${String(chunk).padStart(6, '0')}.parquet`);
      }
    }
    // a query, on serve's execution thread
    await validateDispatch(gql, run.runId);
    done.push(acknowledged);
  }
}

export interface NifiLoad {
  /** Every answer every client got, in order. */
  answers: Answer[];
  /** The caller the clients use: more clients (a receiver acting as NiFi) may use it too. */
  gql: Gql;
  /** Per flow, the runs it finished. */
  done: Acknowledged[][];
  /** Waits for `condition`, failing at once if a client failed. */
  until(what: string, condition: () => boolean, timeoutMs: number): Promise<void>;
  /** Stops every client and waits for them; throws the first client's failure. */
  stop(): Promise<void>;
}

/**
 * Starts `flows` NiFi flows and a console page polling the runs through the API at `url`, plus `watchers` (e.g. a
 * load balancer polling /readyz): each runs until stop(); the first that fails stops them all.
 */
export function startNifiLoad(
  url: string,
  options: FlowShape & { flows: number; retryMs: number; watchers?: Array<(stopped: () => boolean) => Promise<void>> },
): NifiLoad {
  const answers: Answer[] = [];
  const gql = retryingGql(url, answers, options.retryMs);
  const done: Acknowledged[][] = Array.from({ length: options.flows }, () => []);
  let stop = false;
  const stopped = () => stop;
  let failure: unknown;
  const failFast = (work: Promise<void>) =>
    work.catch((error: unknown) => {
      failure ??= error;
      stop = true;
    });
  const consolePage = async () => {
    while (!stop) {
      await gql('{ runs(first: 5) { nodes { runId status } } }', {}, { token: 'viewer' });
      await sleep(50);
    }
  };
  const clients = Promise.all([
    ...done.map((acknowledged, flow) => failFast(nifiFlow(gql, options, flow, stopped, acknowledged))),
    failFast(consolePage()),
    ...(options.watchers ?? []).map((watch) => failFast(watch(stopped))),
  ]);
  return {
    answers,
    gql,
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
      await clients;
      if (failure) throw failure;
    },
  };
}

/** Answers other than 200 and 503 SERVICE_UNAVAILABLE (a 500, a reset connection …): there must be none. */
export const unexpectedAnswers = (answers: Answer[]): Answer[] =>
  answers.filter((a) => a.status !== 200 && !(a.status === 503 && a.code === 'SERVICE_UNAVAILABLE'));

/** A load balancer's health check: polls the API's /readyz every 100 ms and records each answer (a watcher). */
export function readinessPoller(apiUrl: string, readiness: Array<{ at: number; status: number }>) {
  return async (stopped: () => boolean): Promise<void> => {
    while (!stopped()) {
      readiness.push({ at: performance.now(), status: (await fetch(`${apiUrl}/readyz`)).status });
      await sleep(100);
    }
  };
}

export interface Validations {
  /** Per dispatch, how many startValidation calls won (answered started: true). */
  wins: Map<string, number>;
  /** Waits until every delivery received so far has had its startValidation answered; throws if one was not 200 or 503. */
  settled(): Promise<void>;
}

/**
 * NiFi's validation flow behind `receiver`: every VALIDATE_RUN it receives (each delivery, repeats included) is
 * started with startValidation — sent again `retryMs` after a 503, like any NiFi call — after the receiver answered.
 */
export function validateOnDelivery(receiver: Receiver, apiUrl: string, retryMs: number): Validations {
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
          await sleep(retryMs);
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

/** Every run, claim and file of `runs` is in the database `client` reads, each run in `status`. */
export async function expectAcknowledgedIn(client: pg.ClientBase, runs: Acknowledged[], status: string): Promise<void> {
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
  expect(
    runs.flatMap((run) => run.claims.map((c) => `${run.runId}/${c.partitionId}/${c.claimToken}`)).filter((c) => !claimed.has(c)),
  ).toEqual([]);
  const files = await client.query<{ hdfs_path: string }>('SELECT hdfs_path FROM nifi_ops.load_file WHERE run_id = ANY($1::uuid[])', [
    runIds,
  ]);
  expect(files.rows.map((r) => r.hdfs_path).sort()).toEqual(runs.flatMap((run) => run.files).sort());
}
