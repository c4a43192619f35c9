// Execution threads: GraphQL queries and requests with large bodies run in worker threads, each with its own
// Yoga, database pool and metrics, so that the main thread keeps answering health checks, NiFi's chunk reports
// and subscriptions while a console page of 10,000 partitions or a 10,000-partition manifest is being built.
import { randomUUID } from 'node:crypto';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { getOperationAST, parse } from 'graphql';
import { Piscina } from 'piscina';
import type { Config } from '../config/config.js';
import { answerBound } from '../db/client.js';
import type { Actor } from '../graphql/builder.js';
import type { Logger } from '../logging/logger.js';
import { DOCUMENT_LIMITS } from './operation-shape.js';

/** A request as the HTTP layer read and authenticated it. */
export interface LaneRequest {
  method: string;
  /** Path and query string. */
  url: string;
  headers: Array<[string, string]>;
  body: Uint8Array | null;
  actor: Actor;
  /** The request's server span on the main thread, the parent of the thread's spans (when traced). */
  traceparent?: string;
  /**
   * When (Date.now()) the request has been answered 503 already, by execute(), if it has not been answered: a
   * thread that takes it up only after that does not run it.
   */
  answerBy?: number;
}

export interface LaneResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Uint8Array;
}

/** What an execution thread is told when it starts. */
export interface LaneThreadData {
  config: Config;
  databaseUrl: string;
  /** The BroadcastChannel on which the threads report ready and answer for metrics and close. */
  channel: string;
}

/** Messages on the lane's BroadcastChannel (every thread hears all of them and answers only requests). */
export type LaneMessage =
  | { type: 'ready'; thread: number }
  | { type: 'metrics'; id: string }
  | { type: 'metrics-answer'; id: string; thread: number; metrics: ThreadMetrics }
  | { type: 'close'; id: string }
  | { type: 'closed'; id: string; thread: number };

/** A thread's registry as prom-client's getMetricsAsJSON() gives it, without its functions (they do not cross threads). */
type ThreadMetrics = object[];

/** The lane could not answer: its queue is full, or the request waited past the bound of every request. */
export class LaneOverloadedError extends Error {
  override name = 'LaneOverloadedError';
}

export interface ExecutionLane {
  execute(request: LaneRequest): Promise<LaneResponse>;
  /** Every thread has loaded (a query sent before waits in the queue). */
  ready(): boolean;
  /** Each thread's metrics (prom-client's JSON form), to merge with the main thread's. */
  metrics(): Promise<ThreadMetrics[]>;
  /** Lets each thread close its database pool, then ends the threads. */
  close(): Promise<void>;
}

/** A body at least this long (a manifest, a large metrics report) is parsed and executed off the main thread. */
const LARGE_BODY_BYTES = 64 * 1024;
/** Documents remembered with their operation's type: NiFi sends the same few documents again and again. */
const KNOWN_DOCUMENTS = 500;
const knownDocuments = new Map<string, string | null>();

/** The type of the operation a request selects (query, mutation, subscription), or null when it does not parse. */
function operationType(query: string, operationName: unknown): string | null {
  const key = `${typeof operationName === 'string' ? operationName : ''}\0${query}`;
  let type = knownDocuments.get(key);
  if (type === undefined) {
    try {
      const document = parse(query, { noLocation: true, maxTokens: DOCUMENT_LIMITS.tokens });
      type = getOperationAST(document, typeof operationName === 'string' ? operationName : undefined)?.operation ?? null;
    } catch {
      type = null; // the main thread's Yoga answers the 400
    }
    if (knownDocuments.size >= KNOWN_DOCUMENTS) knownDocuments.delete(knownDocuments.keys().next().value!);
    knownDocuments.set(key, type);
  }
  return type;
}

/**
 * Whether a request runs on the execution threads: a query (the console's pages, NiFi's reads), or any request
 * whose body is large. Mutations stay on the main thread, where chunk reports are committed in groups, and so do
 * subscriptions (a GET or POST asking for an event stream, anything on /graphql/stream), which live on the main
 * thread's LISTEN connection.
 */
export function belongsOnLane(request: { method: string; accept: string; url: string; body: Buffer | null }): boolean {
  if (request.accept.includes('text/event-stream')) return false;
  // /graphql/stream: every operation of a single-connection stream runs where the stream lives
  if (request.url.split('?')[0] !== '/graphql') return false;
  if (request.body && request.body.length >= LARGE_BODY_BYTES) return true;
  let params: { query?: unknown; operationName?: unknown };
  if (request.method === 'GET') {
    const search = new URL(request.url, 'http://load-control').searchParams;
    params = { query: search.get('query'), operationName: search.get('operationName') };
  } else {
    try {
      params = JSON.parse(request.body?.toString('utf8') ?? 'null') ?? {};
    } catch {
      return false;
    }
  }
  return typeof params.query === 'string' && operationType(params.query, params.operationName) === 'query';
}

export interface LaneOptions {
  threads: number;
  config: Config;
  databaseUrl: string;
  log: Logger;
  /** Requests a thread takes at once: they mostly wait for the database, so several share a thread. */
  tasksPerThread?: number;
  /** Requests waiting for a thread beyond those; more are refused with 503 rather than queued without bound. */
  maxQueue?: number;
}
/** How long a thread may take to answer for its metrics or to close its pool. */
const ANSWER_TIMEOUT_MS = 2_000;

export function startExecutionLane(options: LaneOptions): ExecutionLane {
  const { threads, config, databaseUrl, log, tasksPerThread = 8, maxQueue = 256 } = options;
  const here = fileURLToPath(import.meta.url);
  // from the sources (tsx, tests) the thread's module is TypeScript too, and the thread needs tsx to load it
  const typescript = extname(here) === '.ts';
  const channelName = `load-control-lane-${randomUUID()}`;
  const channel = new BroadcastChannel(channelName);
  channel.unref();
  const readyThreads = new Set<number>();
  const answers = new Map<string, (message: LaneMessage) => void>();
  channel.onmessage = (event) => {
    const message = (event as { data: LaneMessage }).data;
    if (message.type === 'ready') readyThreads.add(message.thread);
    else if (message.type === 'metrics-answer' || message.type === 'closed') answers.get(message.id)?.(message);
  };

  const pool = new Piscina<LaneRequest, LaneResponse>({
    filename: join(dirname(here), `execution-lane-thread${extname(here)}`),
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY,
    concurrentTasksPerWorker: tasksPerThread,
    maxQueue,
    // the default blocks a thread in Atomics.wait between tasks, which would stall the I/O of the tasks it holds
    atomics: 'disabled',
    ...(typescript ? { execArgv: ['--import', 'tsx'] } : {}),
    workerData: { config, databaseUrl, channel: channelName } satisfies LaneThreadData,
  });
  pool.on('error', (error: unknown) => log.error({ err: error }, 'execution_thread_failed'));

  /** Asks every running thread and collects their answers (those that answer within the timeout). */
  async function ask(type: 'metrics' | 'close'): Promise<LaneMessage[]> {
    const id = randomUUID();
    const expected = pool.threads.length;
    const collected: LaneMessage[] = [];
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ANSWER_TIMEOUT_MS);
      answers.set(id, (message) => {
        collected.push(message);
        if (collected.length >= expected) {
          clearTimeout(timer);
          resolve();
        }
      });
      channel.postMessage({ type, id } satisfies LaneMessage);
    });
    answers.delete(id);
    return collected;
  }

  let closed: Promise<void> | undefined;
  return {
    async execute(request) {
      // the body's memory moves to the thread; the HTTP layer hands over a body that owns its whole buffer
      const transferList = request.body ? [request.body.buffer as ArrayBuffer] : [];
      // a thread's requests wait for its database pool, and those queued behind them for the thread: the bound
      // of every request holds for the queued ones too (those running end within it by their own timeouts)
      const bound = answerBound(config.database);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new LaneOverloadedError('no answer from the database in time')), bound);
      });
      try {
        return await Promise.race([pool.run({ ...request, answerBy: Date.now() + bound }, { transferList }), late]);
      } catch (error) {
        if (error instanceof LaneOverloadedError) throw error;
        if (pool.queueSize >= maxQueue) throw new LaneOverloadedError('every execution thread is busy and the queue is full');
        log.error({ err: error }, 'execution_thread_request_failed');
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    ready: () => pool.threads.length === threads && pool.threads.every((thread) => readyThreads.has(thread.threadId)),
    async metrics() {
      const answered = await ask('metrics');
      return answered.flatMap((message) => (message.type === 'metrics-answer' ? [message.metrics] : []));
    },
    close() {
      closed ??= (async () => {
        await ask('close');
        await pool.destroy();
        channel.close();
      })();
      return closed;
    },
  };
}
