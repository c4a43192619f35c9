// Execution threads (server.executionThreads): queries and large bodies run off the main thread, answered exactly
// as the main thread would answer them; mutations and subscriptions stay on the main thread.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { createRun, manifestInput, REGISTER_MANIFEST, RUN, startRun } from '../support/fixtures.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ server: { corsOrigins: ['https://console.example'] } }, { realtime: true, lane: { threads: 1 } });
  await until('the execution thread to load', async () => (await fetch(`${api.url}/readyz`)).ok);
});
afterAll(async () => api?.close());

/** lc_requests_total by operation and status, as the execution threads alone counted them. */
async function threadRequests(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const registry of await api.lane!.metrics()) {
    const requests = (registry as Array<{ name: string; values: Array<{ value: number; labels: Record<string, string> }> }>).find(
      (m) => m.name === 'lc_requests_total',
    );
    for (const { value, labels } of requests?.values ?? []) {
      counts[`${labels.operation} ${labels.status}`] = (counts[`${labels.operation} ${labels.status}`] ?? 0) + value;
    }
  }
  return counts;
}

describe('execution threads', () => {
  it('run queries, answered as the main thread answers them: data, errors, request id, CORS', async () => {
    const run = await createRun(api);
    const before = await threadRequests();
    const read = await api.gql<{ run: { runId: string; status: string } }>(RUN, { runId: run.runId }, { token: 'viewer' });
    expect(read.status).toBe(200);
    expect(read.body.data?.run).toMatchObject({ runId: run.runId, status: 'CREATED' });

    const missing = await api.gql(RUN, { runId: randomUUID() }, { token: 'viewer', headers: { 'X-Request-Id': 'lane-404' } });
    expect([missing.status, missing.headers.get('x-error-code'), missing.headers.get('x-request-id')]).toEqual([
      404,
      'RUN_NOT_FOUND',
      'lane-404',
    ]);
    expect(missing.body.errors?.[0]?.extensions).toMatchObject({ code: 'RUN_NOT_FOUND', requestId: 'lane-404' });

    const unknownField = await api.gql('{ runs(first: 1) { nodes { noSuchField } } }', {}, { token: 'viewer' });
    expect([unknownField.status, unknownField.headers.get('x-error-code')]).toEqual([400, 'BAD_REQUEST']);

    const forbidden = await api.gql('{ gates { consumer } }', {}, { token: null, headers: { Authorization: 'Bearer nope' } });
    expect(forbidden.status).toBe(401);

    const cors = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKENS.viewer}`, Origin: 'https://console.example' },
      body: JSON.stringify({ query: '{ runs(first: 1) { nodes { runId } } }' }),
    });
    expect([cors.status, cors.headers.get('access-control-allow-origin')]).toEqual([200, 'https://console.example']);

    const got = await fetch(`${api.url}/graphql?query=${encodeURIComponent('{ runs(first: 1) { nodes { runId } } }')}`, {
      headers: { Authorization: `Bearer ${TOKENS.viewer}`, Accept: 'application/json' },
    });
    expect(got.status).toBe(200);

    const after = await threadRequests();
    const served = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
    expect([served('run 200'), served('run 404'), served('runs 200')]).toEqual([1, 1, 2]);
    // a mutation stays on the main thread, where chunk reports are committed in groups
    expect(served('createRun 200')).toBe(0);
  });

  it('run a large body, and what it does after its commit reaches the main thread (NOTIFY, raise after commit)', async () => {
    // 700 partitions: a body over 64 KiB
    const counts = Array.from({ length: 700 }, () => 1);
    const run = await createRun(api);
    const changes = await subscribe(api.url, 'subscription($runId: UUID!) { runChanged(runId: $runId) { status } }', { runId: run.runId });
    const before = await threadRequests();
    const registered = await api.gql<{ registerManifest: { status: string } }>(REGISTER_MANIFEST, {
      input: manifestInput(run.runId, counts),
    });
    expect(registered.body.data?.registerManifest.status).toBe('EXTRACTING');
    await changes.waitFor((message) => message.data?.runChanged?.status === 'EXTRACTING');
    changes.close();

    const broken = await createRun(api);
    const invalid = { ...manifestInput(broken.runId, counts), sourceCount: '1' };
    const refused = await api.gql(REGISTER_MANIFEST, { input: invalid });
    expect([refused.status, refused.headers.get('x-error-code')]).toEqual([422, 'MANIFEST_INVALID']);
    const stored = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [broken.runId]);
    expect(stored.rows[0].status).toBe('FAILED_MANIFEST');

    const after = await threadRequests();
    expect((after['registerManifest 200'] ?? 0) - (before['registerManifest 200'] ?? 0)).toBe(1);
    expect((after['registerManifest 422'] ?? 0) - (before['registerManifest 422'] ?? 0)).toBe(1);
  });

  it("add the threads' figures to /metrics, the process's own figures once", async () => {
    await startRun(api, [1]);
    const text = await (await fetch(`${api.url}/metrics`)).text();
    const runs = await threadRequests();
    const exposed = Number(/^lc_requests_total\{operation="run",status="200"\} (\d+)$/m.exec(text)?.[1]);
    expect(exposed).toBe(runs['run 200']);
    expect(text).toMatch(/^lc_requests_total\{operation="createRun",status="200"\} \d+$/m);
    expect(text.match(/^lc_process_cpu_seconds_total \S+$/gm)?.length).toBe(1);
  });
});

describe('a full queue', () => {
  it('is refused 503 SERVICE_UNAVAILABLE with Retry-After; the requests it holds are answered', async () => {
    const small = await startTestApi({}, { lane: { threads: 1, tasksPerThread: 1, maxQueue: 1 } });
    const blocker = await small.sql.connect();
    try {
      await until('the execution thread to load', async () => (await fetch(`${small.url}/readyz`)).ok);
      await blocker.query('BEGIN; LOCK TABLE nifi_ops.load_run IN ACCESS EXCLUSIVE MODE');
      const query = '{ runs(first: 1) { nodes { runId } } }';
      const held = small.gql(query, {}, { token: 'viewer' });
      await until('the first query to hold the thread', async () => {
        const waiting = await small.sql.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE 'load-control execution thread%' AND wait_event_type = 'Lock'`,
        );
        return waiting.rows[0].n === 1;
      });
      const queued = small.gql(query, {}, { token: 'viewer' });
      const refused = await small.gql(query, {}, { token: 'viewer' });
      expect([refused.status, refused.headers.get('x-error-code'), refused.headers.get('retry-after')]).toEqual([
        503,
        'SERVICE_UNAVAILABLE',
        '1',
      ]);
      await blocker.query('COMMIT');
      expect([(await held).status, (await queued).status]).toEqual([200, 200]);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      blocker.release();
      await small.close();
    }
  });
});

describe('closing', () => {
  it("gives back the threads' database connections", async () => {
    const closing = await startTestApi({}, { lane: { threads: 1 } });
    const threadConnections = async () =>
      (
        await closing.sql.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'load-control execution thread%' AND datname = current_database()",
        )
      ).rows[0].n as number;
    try {
      await Promise.all(Array.from({ length: 8 }, () => closing.gql('{ runs(first: 1) { nodes { runId } } }', {}, { token: 'viewer' })));
      expect(await threadConnections()).toBeGreaterThan(0);
      await closing.lane!.close();
      await until('no connection of an execution thread', async () => (await threadConnections()) === 0);
    } finally {
      await closing.close();
    }
  });
});
