// SIGTERM on `serve`, `work` and `start` as processes: what was received is answered, then they exit.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'graphql-sse';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { completeRun, CREATE_RUN, HDFS_ROOT, JOB } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';
import { sized } from '../support/test-size.js';
import { testWorker, workerConfig } from '../support/worker.js';

const SHUTDOWN_TIMEOUT_MS = 10_000;
/** systemd's SIGKILL comes this long after server.shutdownTimeout (the units' TimeoutStopSec): a process stops before it. */
const UNIT_STOP_MARGIN_MS = 10_000;
const CONCURRENT = 40;
const ROUNDS = sized(2, 10);
const SUMMARY = 'subscription { monitorSummaryChanged { activeRuns { status count } } }';

let api: TestApi;
let receiver: Receiver;
let configPath: string;
beforeAll(async () => {
  api = await startTestApi();
  receiver = await startReceiver();
  const tokens = api.config.auth.tokens.map((t) => `    - { name: ${t.name}, sha256: ${t.sha256}, roles: [${t.roles.join(', ')}] }`);
  configPath = join(mkdtempSync(join(tmpdir(), 'lc-shutdown-')), 'config.yaml');
  writeFileSync(configPath, `auth:\n  tokens:\n${tokens.join('\n')}\n`);
});
afterAll(async () => {
  await receiver?.close();
  await api?.close();
});

function start(command: 'serve' | 'start' | 'work', env: Record<string, string> = {}, args: string[] = []): CliProcess {
  return runCli([command, '--config', configPath, ...args], {
    DATABASE_URL: api.database.url,
    LC_SERVER__HOST: '127.0.0.1',
    // every request of the race holds a connection while it waits for the lock
    LC_DATABASE__POOL_SIZE: String(CONCURRENT + 10),
    LC_SERVER__SHUTDOWN_TIMEOUT: String(SHUTDOWN_TIMEOUT_MS / 1000),
    ...env,
  });
}

async function startApi(command: 'serve' | 'start', env: Record<string, string> = {}) {
  const port = await freePort();
  const child = start(command, { PORT: String(port), ...env });
  onTestFinished(() => void child.kill('SIGKILL'));
  const base = `http://127.0.0.1:${port}`;
  await until('readiness', async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200);
  return { child, base, port };
}

/** A transaction of the test's own holding a lock that makes every insert of a run wait (released at the test's end at the latest). */
async function lockRunInserts(): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: api.database.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE nifi_ops.load_run IN SHARE ROW EXCLUSIVE MODE');
  let released: Promise<void> | undefined;
  const release = () => (released ??= client.end());
  onTestFinished(release);
  return { release };
}

/**
 * Sessions waiting for the table lock on load_run; by default only createRun's INSERTs, since a worker in
 * the same process (`start`) may be waiting beside them at any moment.
 */
async function waitingForRunLock(statement = '%INSERT INTO nifi_ops.load_run%'): Promise<number> {
  const { rows } = await api.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid)
      WHERE NOT l.granted AND l.relation = 'nifi_ops.load_run'::regclass
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND a.query ILIKE $1`,
    [statement],
  );
  return rows[0]!.n;
}

const createRunBody = (idempotencyKey: string) =>
  JSON.stringify({
    query: CREATE_RUN,
    variables: {
      input: { jobKey: JOB, businessKey: `BK_${idempotencyKey}`, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_', idempotencyKey },
    },
  });

interface Outcome {
  key: string;
  status?: number;
  connection?: string;
  body?: { data?: unknown; errors?: unknown[] };
  /** No complete response: the socket's error, or how the body was cut. */
  failure?: string;
}

/** createRun on one of the agent's keep-alive connections; a reset or a cut body is a failure, not a throw. */
function postCreateRun(agent: http.Agent, base: string, key: string, headers: Record<string, string> = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const request = http.request(
      `${base}/graphql`,
      {
        method: 'POST',
        agent,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKENS.nifi}`, ...headers },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('aborted', () => resolve({ key, failure: 'response aborted' }));
        response.on('error', (error: NodeJS.ErrnoException) => resolve({ key, failure: error.code ?? error.message }));
        response.on('end', () => {
          try {
            resolve({ key, status: response.statusCode, connection: response.headers.connection, body: JSON.parse(text) });
          } catch {
            resolve({ key, failure: `incomplete body: ${text.length} characters` });
          }
        });
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ key, failure: error.code ?? error.message }));
    request.end(createRunBody(key));
  });
}

/** A raw connection: one createRun now, more requests later on the same connection (pipelined). */
function rawConnection(port: number, key: string) {
  const socket = net.connect(port, '127.0.0.1');
  const body = createRunBody(key);
  socket.write(
    `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${TOKENS.nifi}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  const closed = new Promise<{ text: string; error?: string }>((resolve) => {
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ text, error: error.code }));
    socket.on('end', () => resolve({ text }));
  });
  return {
    key,
    send: (request: string) => socket.write(request),
    /** How many response heads have arrived so far. */
    answered: () => (text.match(/HTTP\/1\.1 \d{3}/g) ?? []).length,
    /** Every response's status and headers, in order, once the server closed the connection. */
    async responses() {
      const { text: all, error } = await closed;
      const heads = [...all.matchAll(/HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n/g)].map((m) => ({
        status: Number(m[1]),
        headers: m[2]!.toLowerCase(),
      }));
      return { heads, error };
    },
  };
}

async function committedKeys(keys: string[]): Promise<Set<string>> {
  const { rows } = await api.sql.query<{ idempotency_key: string }>(
    'SELECT idempotency_key FROM nifi_ops.load_run WHERE idempotency_key = ANY($1)',
    [keys],
  );
  return new Set(rows.map((r) => r.idempotency_key));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('stopping load-control serve', () => {
  it(`answers all of ${CONCURRENT} concurrent mutations in flight at SIGTERM (${ROUNDS} rounds), commits exactly the 200s, ends SSE with complete, exits 0`, async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const { child, base, port } = await startApi('serve');
      const feed = await subscribe(base, SUMMARY);
      await feed.waitFor(() => true);
      const lock = await lockRunInserts();
      const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENT });
      const keys = Array.from({ length: CONCURRENT }, (_, i) => `stop-${round}-${i}-${randomUUID()}`);
      const requests = keys.map((key) => postCreateRun(agent, base, key));
      const raw = rawConnection(port, `stop-${round}-raw-${randomUUID()}`);
      // every request has been received: each waits in its transaction for the lock
      await until('all requests waiting for the lock', async () => (await waitingForRunLock()) === CONCURRENT + 1);

      // odd rounds: the commits race the drain; even rounds: the signal races the last commits
      const signalFirst = round % 2 === 1;
      if (!signalFirst) {
        await lock.release();
        await sleep(Math.random() * 15);
      }
      const signalled = performance.now();
      child.kill('SIGTERM');
      await until('the stop to begin', () => child.output().includes('"stopping"'));
      if (signalFirst) {
        raw.send('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        await sleep(Math.random() * 100);
        await lock.release();
      }
      const outcomes = await Promise.all(requests);
      const code = await child.exited;
      const stopMs = performance.now() - signalled;
      agent.destroy();

      expect(outcomes.filter((o) => o.failure)).toEqual([]);
      const committed = await committedKeys(keys);
      for (const o of outcomes)
        expect({ key: o.key, status: o.status, committed: committed.has(o.key) }).toEqual({
          key: o.key,
          status: o.status,
          committed: o.status === 200,
        });
      expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
      if (signalFirst) {
        // all were answered during the drain; on the raw connection the later /readyz is the last answer
        expect(outcomes.every((o) => o.connection === 'close')).toBe(true);
        const { heads, error } = await raw.responses();
        expect(error).toBeUndefined();
        expect(heads.map((h) => h.status)).toEqual([200, 503]);
        expect(heads[0]!.headers).not.toContain('connection: close');
        expect(heads[1]!.headers).toContain('connection: close');
      }
      expect(feed.completed).toBe(true);
      expect(feed.broken).toBeUndefined();
      expect(code).toBe(0);
      expect(stopMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      expect(child.output()).toContain('"stopped"');
      console.info(
        `round ${round} (${signalFirst ? 'signal, then commits' : 'commits, then signal'}): ` +
          `${outcomes.length} of ${CONCURRENT} answered 200, exit ${code} after ${Math.round(stopMs)} ms`,
      );
    }
  }, 180_000);

  it('ends every operation of a single-connection stream (/graphql/stream) with complete, then the stream, and exits 0', async () => {
    const { child, base } = await startApi('serve');
    const client = createClient({
      url: `${base}/graphql/stream`,
      singleConnection: true,
      headers: { Authorization: `Bearer ${TOKENS.viewer}` },
      retryAttempts: 0,
    });
    const operations = [SUMMARY, 'subscription { realtimeStatus { live } }'].map((query) => {
      const state = { results: 0, completed: false, error: undefined as unknown };
      client.subscribe(
        { query },
        {
          next: () => state.results++,
          complete: () => {
            state.completed = true;
          },
          error: (error) => {
            state.error = error;
          },
        },
      );
      return state;
    });
    await until('both operations live', () => operations.every((o) => o.results > 0));
    const signalled = performance.now();
    child.kill('SIGTERM');
    const code = await child.exited;
    expect(operations.map((o) => ({ completed: o.completed, error: o.error }))).toEqual([
      { completed: true, error: undefined },
      { completed: true, error: undefined },
    ]);
    expect(code).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    await client.dispose();
  });

  it('answers the queries in flight on its execution thread at SIGTERM, then closes the thread and exits 0', async () => {
    const { child, base } = await startApi('serve');
    const client = new pg.Client({ connectionString: api.database.url });
    await client.connect();
    onTestFinished(() => client.end());
    // a query reads load_run: this lock makes each one wait in the execution thread
    await client.query('BEGIN; LOCK TABLE nifi_ops.load_run IN ACCESS EXCLUSIVE MODE');
    const queries = Array.from({ length: 10 }, () =>
      fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKENS.viewer}` },
        body: JSON.stringify({ query: '{ runs(first: 5) { nodes { runId } } }' }),
      }).then(async (response) => ({ status: response.status, body: await response.json() })),
    );
    // a thread takes 8 requests at once: 8 wait for the lock, 2 in the thread's queue
    await until(
      'the queries waiting in the execution thread',
      async () => (await waitingForRunLock('%SELECT%FROM nifi_ops.load_run%')) === 8,
    );
    child.kill('SIGTERM');
    await until('the stop to begin', () => child.output().includes('"stopping"'));
    await client.query('COMMIT');
    const answers = await Promise.all(queries);
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.every((a) => Array.isArray(a.body.data?.runs?.nodes))).toBe(true);
    expect(await child.exited).toBe(0);
    expect(child.output()).toContain('"stopped"');
  });

  it('turns /readyz to 503 at once on a connection open at SIGTERM, and refuses new connections', async () => {
    const { child, port } = await startApi('serve');
    const lock = await lockRunInserts();
    const raw = rawConnection(port, `stop-readyz-${randomUUID()}`);
    await until('the request waiting for the lock', async () => (await waitingForRunLock()) === 1);
    child.kill('SIGTERM');
    await until('the stop to begin', () => child.output().includes('"stopping"'));
    // a new connection (fetch would reuse an idle one, which the drain keeps and answers for a while)
    const connecting = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    expect(connecting).toBe('ECONNREFUSED');
    raw.send('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await lock.release();
    expect((await raw.responses()).heads.map((h) => h.status)).toEqual([200, 503]);
    expect(await child.exited).toBe(0);
  });

  it('with server.shutdownDelay, turns /readyz to 503 at once and still accepts and answers new connections until the delay is over', async () => {
    const { child, base } = await startApi('serve', { LC_SERVER__SHUTDOWN_DELAY: 'PT5S' });
    child.kill('SIGTERM');
    await until('the stop to begin', () => child.output().includes('"stopping"'));
    // new connections each (a load balancer's checks and requests come on connections of their own)
    const agent = new http.Agent({ keepAlive: false });
    const get = (path: string) =>
      new Promise<number | string>((resolve) => {
        http
          .get(`${base}${path}`, { agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
          .on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      });
    expect(await get('/readyz')).toBe(503);
    const key = `stop-delay-${randomUUID()}`;
    const created = await postCreateRun(agent, base, key);
    expect([created.status, created.failure]).toEqual([200, undefined]);
    expect(await committedKeys([key])).toEqual(new Set([key]));
    await until('the listener to close after the delay', async () => (await get('/healthz')) === 'ECONNREFUSED', 15_000);
    expect(await child.exited).toBe(0);
  });

  it('answers a request sent after SIGTERM on a keep-alive connection that was idle, with Connection: close', async () => {
    const { child, port } = await startApi('serve');
    const key = `stop-idle-${randomUUID()}`;
    const raw = rawConnection(port, `stop-idle-first-${randomUUID()}`);
    await until('the first answer', async () => (await committedKeys([raw.key])).size === 1 && raw.answered() === 1);
    // the connection is idle now; the client writes its next request just after the signal
    child.kill('SIGTERM');
    await until('the stop to begin', () => child.output().includes('"stopping"'));
    const body = createRunBody(key);
    raw.send(
      `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${TOKENS.nifi}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const { heads, error } = await raw.responses();
    expect(error).toBeUndefined();
    expect(heads.map((h) => h.status)).toEqual([200, 200]);
    expect(heads[1]!.headers).toContain('connection: close');
    expect(await committedKeys([key])).toEqual(new Set([key]));
    expect(await child.exited).toBe(0);
  });

  it('exits at once with 143 on a second SIGTERM; the request cut off is not committed', async () => {
    const { child, base } = await startApi('serve');
    const lock = await lockRunInserts();
    const agent = new http.Agent({ keepAlive: true });
    const key = `stop-twice-${randomUUID()}`;
    const request = postCreateRun(agent, base, key);
    await until('the request waiting for the lock', async () => (await waitingForRunLock()) === 1);
    child.kill('SIGTERM');
    await until('the stop to begin', () => child.output().includes('"stopping"'));
    const second = performance.now();
    child.kill('SIGTERM');
    // 143 and stop_forced: the forced exit, not the drain's end (exit 1 at SHUTDOWN_TIMEOUT_MS, the request being stuck)
    expect(await child.exited).toBe(143);
    expect(performance.now() - second).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(child.output()).toContain('"stop_forced"');
    expect((await request).failure).toBeDefined();
    await lock.release();
    expect(await committedKeys([key])).toEqual(new Set());
    agent.destroy();
  });

  it('exits 1 after server.shutdownTimeout, naming the request still open', async () => {
    const { child, base } = await startApi('serve', { LC_SERVER__SHUTDOWN_TIMEOUT: '1' });
    const lock = await lockRunInserts();
    const agent = new http.Agent({ keepAlive: true });
    const request = postCreateRun(agent, base, `stop-late-${randomUUID()}`, { 'X-Request-Id': 'the-stuck-request' });
    await until('the request waiting for the lock', async () => (await waitingForRunLock()) === 1);
    const signalled = performance.now();
    child.kill('SIGTERM');
    expect(await child.exited).toBe(1);
    expect(performance.now() - signalled).toBeGreaterThanOrEqual(1000);
    expect(performance.now() - signalled).toBeLessThan(1000 + UNIT_STOP_MARGIN_MS);
    const timedOut = child
      .output()
      .split('\n')
      .find((line) => line.includes('"stop_timed_out"'));
    expect(timedOut).toContain('the-stuck-request');
    await lock.release();
    await request;
    agent.destroy();
  });
});

describe('stopping load-control work', () => {
  it('finishes the calls on the wire and the sweep in flight, gives back the leases it did not send, /readyz 503 meanwhile', async () => {
    const runs = await Promise.all(Array.from({ length: 4 }, () => completeRun(api)));
    const dispatchIds = runs.map((r) => r.dispatchId);
    receiver.reset();
    receiver.setDefault({ status: 202, delayMs: 1500 });
    // the worker's first sweep waits for this lock: a cycle in flight at the signal
    const lock = await lockRunInserts();
    const child = start('work', { LC_NIFI__RECEIVER_URL: receiver.url, LC_DISPATCH__BATCH: '2' }, ['--metrics-port', '0']);
    onTestFinished(() => void child.kill('SIGKILL'));
    const port = await until('the metrics port', () => /"port":(\d+)[^\n]*worker_metrics_listening/.exec(child.output())?.[1]);
    const health = `http://127.0.0.1:${port}`;
    await until('readiness', async () => (await fetch(`${health}/readyz`)).status === 200);
    await receiver.waitForCalls(2);
    // the second batch is leased while the first is on the wire
    await until('four leases', async () => {
      const { rows } = await api.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM nifi_ops.load_dispatch
          WHERE dispatch_id = ANY($1) AND status = 'PENDING' AND attempt_count = 1 AND next_attempt_at > clock_timestamp()`,
        [dispatchIds],
      );
      return rows[0]!.n === 4;
    });
    await until('the sweep waiting for the lock', async () => (await waitingForRunLock('%')) > 0);
    const signalled = performance.now();
    child.kill('SIGTERM');
    // the signal reaches the child's event loop asynchronously: ask once it has been handled
    await until('the signal handled', () => child.output().includes('"msg":"stopping"'), 2000);
    expect((await fetch(`${health}/readyz`)).status).toBe(503);
    await sleep(300);
    await lock.release();
    expect(await child.exited).toBe(0);
    const stopMs = performance.now() - signalled;
    expect(stopMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);

    const sent = receiver.calls.map((c) => c.headers['x-dispatch-id'] as string);
    expect(sent).toHaveLength(2);
    const { rows } = await api.sql.query<{ dispatch_id: string; status: string; attempt_count: number; due: boolean }>(
      `SELECT dispatch_id::text, status, attempt_count, next_attempt_at <= clock_timestamp() AS due
         FROM nifi_ops.load_dispatch WHERE dispatch_id = ANY($1) ORDER BY dispatch_id`,
      [dispatchIds],
    );
    for (const row of rows) {
      expect(row).toEqual(
        sent.includes(row.dispatch_id)
          ? { ...row, status: 'SENT', attempt_count: 1 }
          : { ...row, status: 'PENDING', attempt_count: 0, due: true },
      );
    }
    expect(child.output()).not.toContain('sweeper_error');
    console.info(`work: 2 calls finished, 2 leases given back, exit 0 after ${Math.round(stopMs)} ms`);

    // another worker takes the released calls at once, not after the lease
    receiver.reset();
    const other = testWorker(api, workerConfig(api, receiver));
    try {
      expect(await other.dispatcher.dispatchOnce()).toBe(2);
    } finally {
      await other.close();
    }
  }, 60_000);
});

describe('stopping load-control start', () => {
  it('answers the mutation in flight, ends SSE with complete and finishes the call on the wire, then exits 0', async () => {
    const { dispatchId } = await completeRun(api);
    receiver.reset();
    receiver.setDefault({ status: 202, delayMs: 1000 });
    // the table lock can also hold the worker's writes; the request must outwait them, not hit statementTimeout
    const { child, base } = await startApi('start', { LC_NIFI__RECEIVER_URL: receiver.url, LC_DATABASE__STATEMENT_TIMEOUT: 'PT30S' });
    const feed = await subscribe(base, SUMMARY);
    await feed.waitFor(() => true);
    await receiver.waitForCalls(1);
    const lock = await lockRunInserts();
    const agent = new http.Agent({ keepAlive: true });
    const key = `stop-start-${randomUUID()}`;
    const request = postCreateRun(agent, base, key);
    await until('the request waiting for the lock', async () => (await waitingForRunLock()) === 1);
    const signalled = performance.now();
    child.kill('SIGTERM');
    await sleep(200);
    await lock.release();
    const outcome = await request;
    expect(await child.exited).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(outcome).toMatchObject({ status: 200, connection: 'close' });
    expect(await committedKeys([key])).toEqual(new Set([key]));
    expect(feed.completed).toBe(true);
    expect(feed.broken).toBeUndefined();
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [dispatchId]);
    expect(rows).toEqual([{ status: 'SENT' }]);
    agent.destroy();
  }, 60_000);
});
