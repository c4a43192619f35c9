// A database that stops answering, cannot write, or is slow: every request gets a 503 within the configured
// timeouts (never a hang, never a 500), /readyz says so within 2 s, and everything recovers by itself.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { CREATE_RUN, FAIL_RUN, HDFS_ROOT, JOB, chunkInput, claim, CLAIM, REPORT, startRun } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';
import { testWorker, workerConfig } from '../support/worker.js';

const SHORT = { connectTimeout: 500, acquireTimeout: 1000, statementTimeout: 1500 };
const SHORT_SUM = SHORT.connectTimeout + SHORT.acquireTimeout + SHORT.statementTimeout;
/** Scheduling slack on two busy cores, on top of the configured bound. */
const SLACK_MS = 1500;

interface Timed {
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  ms: number;
}

async function timedPost(api: TestApi, query: string, variables: Record<string, unknown>, token: string = TOKENS.nifi): Promise<Timed> {
  const started = performance.now();
  const res = await fetch(`${api.url}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { errors?: Array<{ extensions?: { code?: string } }> };
  return {
    status: res.status,
    code: body.errors?.[0]?.extensions?.code,
    retryAfter: res.headers.get('retry-after'),
    ms: performance.now() - started,
  };
}

async function timedGet(url: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

const createRunInput = (businessKey: string, idempotencyKey?: string) => ({
  input: { jobKey: JOB, businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_', idempotencyKey },
});

/** The test server's address, for a proxy in front of it. */
function testServer(): { host: string; port: number } {
  const url = new URL(inject('testAdminDatabaseUrl'));
  return { host: url.hostname, port: Number(url.port || 5432) };
}

describe('a database that stops answering', () => {
  let proxy: TcpProxy;
  let api: TestApi;

  beforeAll(async () => {
    const target = testServer();
    proxy = await startTcpProxy(target.host, target.port);
  });
  afterEach(async () => {
    proxy.thaw();
    await api?.close();
  });
  afterAll(async () => proxy?.close());

  it('answers every kind of request 503 with Retry-After within the timeouts, /readyz 503 within 2 s, and recovers after', async () => {
    // queries run on an execution thread, with a database pool of its own, as in `serve`
    api = await startTestApi({ database: SHORT }, { databasePort: proxy.port, realtime: true, lane: { threads: 1 } });
    await until('the execution thread to load', async () => (await fetch(`${api.url}/readyz`)).ok);
    const run = await startRun(api, [10, 10]);
    const owner = await claim(api, run.runId, '0000');
    const idempotencyKey = randomUUID();

    proxy.freeze();
    const [create, list, chunk, claimed, failed, ready, health] = await Promise.all([
      timedPost(api, CREATE_RUN, createRunInput(`BK_${randomUUID().slice(0, 8)}`, idempotencyKey)),
      timedPost(api, '{ runs(first: 5) { nodes { runId status } } }', {}, TOKENS.viewer as string),
      timedPost(api, REPORT, { input: chunkInput(run, '0000', owner.claimToken, 0, 2, 5) }),
      timedPost(api, CLAIM, { input: { runId: run.runId, partitionId: '0001', claimToken: randomUUID(), workerNode: 'nifi-02' } }),
      timedPost(api, FAIL_RUN, {
        input: {
          runId: run.runId,
          expectedStatus: 'EXTRACTING',
          failStatus: 'FAILED_EXTRACT',
          errorStage: 'PG-20',
          errorCode: 'X',
          message: 'm',
        },
      }),
      timedGet(`${api.url}/readyz`),
      timedGet(`${api.url}/healthz`),
    ]);
    for (const [name, answer] of Object.entries({ create, list, chunk, claimed, failed })) {
      expect([answer.status, answer.code, answer.retryAfter], name).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
      expect(answer.ms, `${name} answered within the timeouts' sum`).toBeLessThan(SHORT_SUM + SLACK_MS);
    }
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(2000);
    expect(health.status).toBe(200);

    // while it stays frozen, every new request is refused in time as well (connections being replaced)
    const again = await timedPost(api, CREATE_RUN, createRunInput(`BK_${randomUUID().slice(0, 8)}`));
    expect([again.status, again.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(again.ms).toBeLessThan(SHORT_SUM + SLACK_MS);

    proxy.thaw();
    await until(
      'the API to write again',
      async () => (await api.gql(CREATE_RUN, createRunInput(`BK_${randomUUID().slice(0, 8)}`))).status === 200,
      20_000,
    );
    await until('/readyz to be ready again', async () => (await fetch(`${api.url}/readyz`)).status === 200, 20_000);
    await until(
      'the execution thread to read again',
      async () => (await timedPost(api, '{ runs(first: 5) { nodes { runId status } } }', {}, TOKENS.viewer as string)).status === 200,
      20_000,
    );
    // the refused createRun is safe to retry: its key yields exactly one run
    const retried = await api.gql(CREATE_RUN, createRunInput('BK_RETRIED', idempotencyKey));
    expect(retried.status === 200 || retried.code === 'IDEMPOTENCY_KEY_REUSED').toBe(true);
    const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE idempotency_key = $1', [idempotencyKey]);
    expect(rows[0].n).toBe(1);
    // the partition the refused report was for takes reports again
    const after = await api.gql(REPORT, { input: chunkInput(run, '0000', owner.claimToken, 0, 2, 5) });
    expect(after.status).toBe(200);
  });

  it('with the default timeouts, a request waits at most 10 s for a frozen database', async () => {
    api = await startTestApi({}, { databasePort: proxy.port });
    await api.gql(CREATE_RUN, createRunInput(`BK_${randomUUID().slice(0, 8)}`));
    const { connectTimeout, acquireTimeout, statementTimeout } = api.config.database;
    expect(connectTimeout + acquireTimeout + statementTimeout).toBeLessThanOrEqual(10_000);
    proxy.freeze();
    const answer = await timedPost(api, CREATE_RUN, createRunInput(`BK_${randomUUID().slice(0, 8)}`));
    expect([answer.status, answer.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(answer.ms).toBeLessThan(10_000 + SLACK_MS);
  });

  it('keeps the dispatcher and the sweeper going: after a stall they deliver and sweep again', async () => {
    api = await startTestApi({ database: SHORT }, { databasePort: proxy.port });
    const receiver: Receiver = await startReceiver();
    const config = workerConfig(api, receiver, { dispatch: { pollInterval: 200 } });
    const worker = testWorker(api, config);
    try {
      worker.dispatcher.start();
      worker.sweeper.start();
      proxy.freeze();
      // the loops hit the frozen database: their passes fail in time and they retry
      await new Promise((resolve) => setTimeout(resolve, SHORT_SUM + 500));
      proxy.thaw();
      // a run completing extraction after the stall gets its VALIDATE_RUN delivered by the same loop
      const run = await startRun(api, [1]);
      const owner = await claim(api, run.runId, '0000');
      const done = await api.gql(REPORT, { input: chunkInput(run, '0000', owner.claimToken, 0, 1, 1) });
      expect(done.body.data).toMatchObject({ reportChunk: { validationScheduled: true } });
      const [call] = await receiver.waitForCalls(1, 20_000);
      expect(call!.headers['x-run-id']).toBe(run.runId);
      expect(await worker.sweeper.cycle()).not.toBeUndefined();
    } finally {
      await worker.close();
      await receiver.close();
    }
  });
});

describe('a database that cannot write', () => {
  let api: TestApi;
  let admin: pg.Client;

  const terminateApiConnections = () =>
    admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
      api.database.name,
    ]);

  beforeAll(async () => {
    api = await startTestApi();
    admin = new pg.Client({ connectionString: api.database.url });
    admin.on('error', () => undefined);
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await api?.close();
  });

  it('answers writes 503 (never 500) and /readyz 503 while read-only, and recovers when writable again', async () => {
    const run = await startRun(api, [5]);
    // a failover onto a standby, as far as a client can tell: every new session is read-only
    await admin.query(`ALTER DATABASE ${api.database.name} SET default_transaction_read_only = on`);
    await terminateApiConnections();
    try {
      await until('/readyz to report the read-only database', async () => (await fetch(`${api.url}/readyz`)).status === 503, 10_000);
      const writes = await Promise.all([
        api.gql(CREATE_RUN, createRunInput(`BK_${randomUUID().slice(0, 8)}`)),
        api.gql(CLAIM, { input: { runId: run.runId, partitionId: '0000', claimToken: randomUUID(), workerNode: 'nifi-01' } }),
        api.gql(FAIL_RUN, {
          input: {
            runId: run.runId,
            expectedStatus: 'EXTRACTING',
            failStatus: 'FAILED_EXTRACT',
            errorStage: 'PG-20',
            errorCode: 'X',
            message: 'm',
          },
        }),
      ]);
      for (const res of writes) {
        expect([res.status, res.code, res.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
      }
      // reads still work on a read-only database
      const read = await api.gql('query($id: UUID!) { run(runId: $id) { status } }', { id: run.runId }, { token: 'viewer' });
      expect(read.body.data).toEqual({ run: { status: 'EXTRACTING' } });
    } finally {
      await admin.query(`ALTER DATABASE ${api.database.name} RESET default_transaction_read_only`);
      await terminateApiConnections();
    }
    await until('/readyz to be ready again', async () => (await fetch(`${api.url}/readyz`)).status === 200, 10_000);
    const claimed = await until('claims to be recorded again', async () => {
      const res = await api.gql(CLAIM, {
        input: { runId: run.runId, partitionId: '0000', claimToken: randomUUID(), workerNode: 'nifi-01' },
      });
      return res.status === 200 ? res : null;
    });
    expect(claimed.body.data).toMatchObject({ claimPartition: { claimed: true } });
  });
});

describe('a statement that outlasts database.statementTimeout', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi({ database: SHORT });
  });
  afterAll(async () => api?.close());

  it('is cancelled by the server and answered 503, and the row it waited for is untouched', async () => {
    const run = await startRun(api, [5]);
    const holder = await api.sql.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM nifi_ops.load_run WHERE run_id = $1 FOR UPDATE', [run.runId]);
      const answer = await timedPost(api, FAIL_RUN, {
        input: {
          runId: run.runId,
          expectedStatus: 'EXTRACTING',
          failStatus: 'FAILED_EXTRACT',
          errorStage: 'PG-20',
          errorCode: 'X',
          message: 'm',
        },
      });
      expect([answer.status, answer.code, answer.retryAfter]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
      expect(answer.ms).toBeLessThan(SHORT.statementTimeout + SLACK_MS);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0].status).toBe('EXTRACTING');
  });
});
