// /graphql/stream: graphql-sse's single connection mode (one HTTP stream for any number of subscriptions), its
// refusals and bounds, and how it ends at shutdown; the distinct connections mode there and on /graphql still works.
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi, type TokenName } from '../../support/api.js';
import { createRun, FAIL_RUN, startRun } from '../../support/fixtures.js';
import { subscribe } from '../../support/sse.js';
import { until } from '../../support/until.js';
import { MAX_STREAM_OPERATIONS } from '../../../src/server/event-streams.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({}, { realtime: true, eventStreamLimits: { reservationMs: 500 } });
});
afterAll(async () => api?.close());

const RUN_CHANGED = 'subscription($runId: UUID) { runChanged(runId: $runId) { runId status } }';
const SUMMARY = 'subscription { monitorSummaryChanged { activeRuns { status count } } }';
const ALERTS = 'subscription { alertRaised { kind runId } }';

interface Recorded {
  client: Client<true>;
  /** Every request the client made, as METHOD and whether it asked for an event stream. */
  requests: string[];
}

function singleConnectionClient(token: TokenName = 'viewer'): Recorded {
  const requests: string[] = [];
  const client = createClient({
    url: `${api.url}/graphql/stream`,
    singleConnection: true,
    headers: { Authorization: `Bearer ${TOKENS[token]}` },
    retryAttempts: 0,
    fetchFn: (input: RequestInfo | URL, init?: RequestInit) => {
      const accept = new Headers(init?.headers).get('accept');
      requests.push(`${init?.method ?? 'GET'}${accept === 'text/event-stream' ? ' stream' : ''}`);
      return fetch(input, init);
    },
  });
  return { client, requests };
}

/** The results of one operation on `client`, and whether it completed. */
function watch(client: Client<true>, query: string, variables: Record<string, unknown> = {}) {
  const results: ExecutionResult<Record<string, any>, unknown>[] = [];
  const state = { completed: false, error: undefined as unknown };
  const dispose = client.subscribe<Record<string, any>>(
    { query, variables },
    {
      next: (result) => results.push(result),
      error: (error) => {
        state.error = error;
      },
      complete: () => {
        state.completed = true;
      },
    },
  );
  return { results, state, dispose };
}

const raw = (method: string, headers: Record<string, string> = {}, body?: unknown, path = '/graphql/stream') =>
  fetch(`${api.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKENS.viewer}`, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('single connection mode on /graphql/stream', () => {
  it('carries three subscriptions on one event stream, each getting its own events', async () => {
    const before = api.server!.eventStreams!.streamCount();
    const { client, requests } = singleConnectionClient();
    const run = await createRun(api);
    const runs = watch(client, RUN_CHANGED, { runId: run.runId });
    const summary = watch(client, SUMMARY);
    const alerts = watch(client, ALERTS);
    await until('the run and the summary', () => runs.results.length > 0 && summary.results.length > 0);
    expect(runs.results[0]!.data!.runChanged).toEqual({ runId: run.runId, status: 'CREATED' });
    await api.gql(FAIL_RUN, {
      input: {
        runId: run.runId,
        expectedStatus: 'CREATED',
        failStatus: 'FAILED_MANIFEST',
        errorStage: 'MANIFEST',
        errorCode: 'X',
        message: 'x',
      },
    });
    await until(
      'the failure on every operation',
      () =>
        runs.results.some((r) => r.data!.runChanged.status === 'FAILED_MANIFEST') &&
        alerts.results.some((r) => r.data!.alertRaised.runId === run.runId),
    );
    expect(requests.filter((r) => r.endsWith('stream'))).toEqual(['GET stream']);
    expect(requests.filter((r) => r === 'POST')).toHaveLength(3);
    expect(api.server!.eventStreams!.streamCount()).toBe(before + 1);
    // disposing an operation completes it on the server (DELETE); the last one ends the stream
    const count = api.realtime!.runs.subscriberCount();
    runs.dispose();
    await until('the run subscription to end on the server', () => api.realtime!.runs.subscriberCount() === count - 1);
    expect(requests).toContain('DELETE');
    summary.dispose();
    alerts.dispose();
    await until('the stream to be dropped', () => api.server!.eventStreams!.streamCount() === before);
    await client.dispose();
  });

  it('answers a refused operation with its error in the contract envelope, then complete; the stream carries on', async () => {
    const { client } = singleConnectionClient();
    const good = watch(client, SUMMARY);
    const cases: Array<[string, Record<string, unknown>, string]> = [
      [RUN_CHANGED, { runId: 'not-a-uuid' }, 'INVALID_INPUT'],
      [RUN_CHANGED, { runId: '00000000-0000-4000-8000-000000000000' }, 'RUN_NOT_FOUND'],
      ['subscription { nope }', {}, 'BAD_REQUEST'],
      ['subscription {', {}, 'BAD_REQUEST'],
      // the cost limit and the document limits apply as on /graphql
      ['{ runs(first: 500) { nodes { partitions { partitionId } } } }', {}, 'QUERY_TOO_COSTLY'],
      [`subscription { ${Array.from({ length: 40 }, (_, i) => `a${i}: alertRaised { kind }`).join(' ')} }`, {}, 'BAD_REQUEST'],
    ];
    const refused = cases.map(([query, variables]) => watch(client, query, variables));
    await until('every refusal to complete', () => refused.every((r) => r.state.completed));
    cases.forEach(([, , code], i) => {
      const results = refused[i]!.results;
      expect(results).toHaveLength(1);
      expect(results[0]!.errors![0]!.extensions).toMatchObject({ code });
      expect(Object.keys(results[0]!.errors![0]!)[0]).toBe('extensions');
    });
    await until('the good one', () => good.results.length > 0);
    expect(good.state.completed).toBe(false);
    good.dispose();
    await client.dispose();
  });

  it('runs queries and mutations over the stream with the same auth: a viewer may not fail a run', async () => {
    const { client } = singleConnectionClient();
    const run = await createRun(api);
    const query = watch(client, 'query($runId: UUID!) { run(runId: $runId) { status } }', { runId: run.runId });
    const mutation = watch(client, FAIL_RUN, {
      input: {
        runId: run.runId,
        expectedStatus: 'CREATED',
        failStatus: 'FAILED_MANIFEST',
        errorStage: 'MANIFEST',
        errorCode: 'X',
        message: 'x',
      },
    });
    await until('both to complete', () => query.state.completed && mutation.state.completed);
    expect(query.results[0]!.data).toEqual({ run: { status: 'CREATED' } });
    expect(mutation.results[0]!.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });
    expect((await api.gql('query($runId: UUID!) { run(runId: $runId) { status } }', { runId: run.runId })).body.data).toEqual({
      run: { status: 'CREATED' },
    });
    await client.dispose();
  });

  it('needs a token for every request, before reading anything', async () => {
    for (const method of ['PUT', 'GET', 'POST', 'DELETE']) {
      const res = await fetch(`${api.url}/graphql/stream`, { method, headers: { Accept: method === 'GET' ? 'text/event-stream' : '*/*' } });
      expect(res.status, method).toBe(401);
      expect(res.headers.get('x-error-code')).toBe('UNAUTHENTICATED');
    }
    const bad = await fetch(`${api.url}/graphql/stream`, { method: 'PUT', headers: { Authorization: 'Bearer wrong' } });
    expect(bad.status).toBe(401);
  });

  it(`refuses more than ${MAX_STREAM_OPERATIONS} operations on one stream, and operations on a stream that does not exist`, async () => {
    const put = await raw('PUT');
    expect(put.status).toBe(201);
    const token = await put.text();
    const stream = await raw('GET', { Accept: 'text/event-stream', 'X-GraphQL-Event-Stream-Token': token });
    expect(stream.status).toBe(200);
    const post = (id: number) =>
      raw('POST', { 'X-GraphQL-Event-Stream-Token': token }, { query: SUMMARY, extensions: { operationId: String(id) } });
    for (let i = 0; i < MAX_STREAM_OPERATIONS; i++) expect((await post(i)).status).toBe(202);
    const over = await post(MAX_STREAM_OPERATIONS);
    expect(over.status).toBe(400);
    expect(over.headers.get('x-error-code')).toBe('BAD_REQUEST');
    // completing one makes room for another
    expect((await raw('DELETE', { 'X-GraphQL-Event-Stream-Token': token }, undefined, '/graphql/stream?operationId=0')).status).toBe(200);
    await until(
      'the completed operation to be counted out',
      async () => (await post(1000 + Math.floor(Math.random() * 1e6))).status === 202,
    );
    await stream.body!.cancel();
    const unknown = await raw(
      'POST',
      { 'X-GraphQL-Event-Stream-Token': 'no-such-stream' },
      { query: SUMMARY, extensions: { operationId: 'x' } },
    );
    expect(unknown.status).toBe(404);
  });

  it('drops a reservation that is never connected, with the subscriptions posted to it', async () => {
    const before = api.server!.eventStreams!.streamCount();
    const subscribers = api.realtime!.monitor.subscriberCount();
    const token = await (await raw('PUT')).text();
    expect(
      (await raw('POST', { 'X-GraphQL-Event-Stream-Token': token }, { query: SUMMARY, extensions: { operationId: 'a' } })).status,
    ).toBe(202);
    expect(api.server!.eventStreams!.streamCount()).toBe(before + 1);
    await until('the reservation to expire', () => api.server!.eventStreams!.streamCount() === before);
    await until('its subscription to end', () => api.realtime!.monitor.subscriberCount() === subscribers);
    const late = await raw('GET', { Accept: 'text/event-stream', 'X-GraphQL-Event-Stream-Token': token });
    // graphql-sse: an unknown token on an event stream request is a distinct-mode request without a query
    expect(late.status).toBeGreaterThanOrEqual(400);
  });

  it('refuses a reservation with 503 while too many are not connected', async () => {
    const own = await startTestApi({}, { realtime: true, eventStreamLimits: { maxPendingReservations: 2 } });
    try {
      const put = () => fetch(`${own.url}/graphql/stream`, { method: 'PUT', headers: { Authorization: `Bearer ${TOKENS.viewer}` } });
      const first = await (await put()).text();
      expect((await put()).status).toBe(201);
      const refused = await put();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('x-error-code')).toBe('SERVICE_UNAVAILABLE');
      // connecting one leaves room for another
      const stream = await fetch(`${own.url}/graphql/stream`, {
        headers: { Authorization: `Bearer ${TOKENS.viewer}`, Accept: 'text/event-stream', 'X-GraphQL-Event-Stream-Token': first },
      });
      expect(stream.status).toBe(200);
      expect((await put()).status).toBe(201);
      await stream.body!.cancel();
    } finally {
      await own.close();
    }
  });

  it('cuts a stream whose client stops reading, rather than queueing its events without end', async () => {
    const own = await startTestApi({}, { realtime: true, eventStreamLimits: { maxUnsentEvents: 5 } });
    try {
      // a client that reads gets far more than that, and keeps its stream
      const small = await createRun(own);
      const reading = createClient({
        url: `${own.url}/graphql/stream`,
        singleConnection: true,
        headers: { Authorization: `Bearer ${TOKENS.viewer}` },
        retryAttempts: 0,
      });
      const read = watch(reading, RUN_CHANGED, { runId: small.runId });
      for (let i = 0; i < 20; i++) {
        await own.sql.query('SELECT pg_notify($1, $2)', ['lc_run_changed', small.runId]);
        await until(`event ${i + 1}`, () => read.results.length > i);
      }
      expect(read.state).toEqual({ completed: false, error: undefined });
      read.dispose();
      await reading.dispose();
      await until('the reading stream to close', () => own.server!.eventStreams!.streamCount() === 0);

      const run = await startRun(
        own,
        Array.from({ length: 5000 }, () => 1),
      );
      const headers = { Authorization: `Bearer ${TOKENS.viewer}` };
      const token = await (await fetch(`${own.url}/graphql/stream`, { method: 'PUT', headers })).text();
      // opened and never read: ~1.2 MB per event fills the socket buffers after a few
      const stream = await fetch(`${own.url}/graphql/stream`, {
        headers: { ...headers, Accept: 'text/event-stream', 'X-GraphQL-Event-Stream-Token': token },
      });
      expect(stream.status).toBe(200);
      const post = await fetch(`${own.url}/graphql/stream`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', 'X-GraphQL-Event-Stream-Token': token },
        body: JSON.stringify({
          query: 'subscription($runId: UUID) { runChanged(runId: $runId) { runId partitions { partitionId status } } }',
          variables: { runId: run.runId },
          extensions: { operationId: 'big' },
        }),
      });
      expect(post.status).toBe(202);
      expect(own.server!.eventStreams!.streamCount()).toBe(1);
      for (let i = 0; i < 200 && own.server!.eventStreams!.streamCount() > 0; i++) {
        await own.sql.query('SELECT pg_notify($1, $2)', ['lc_run_changed', run.runId]);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(own.server!.eventStreams!.streamCount()).toBe(0);
      await until('its subscription to end', () => own.realtime!.runs.subscriberCount() === 0);
      // what was sent before the cut can still be read, and then the stream ends
      const reader = stream.body!.getReader();
      await until('the end of the stream', async () => (await reader.read()).done);
    } finally {
      await own.close();
    }
  }, 120_000);

  it('keeps the distinct connections mode, on /graphql/stream and on /graphql', async () => {
    const run = await createRun(api);
    const onStreamPath = await fetch(`${api.url}/graphql/stream`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKENS.viewer}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ query: RUN_CHANGED, variables: { runId: run.runId } }),
    });
    expect(onStreamPath.status).toBe(200);
    const reader = onStreamPath.body!.getReader();
    let text = '';
    while (!text.includes(run.runId)) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('event: next');
    await reader.cancel();
    const onGraphql = await subscribe(api.url, RUN_CHANGED, { runId: run.runId });
    expect((await onGraphql.waitFor(() => true)).data!.runChanged.runId).toBe(run.runId);
    onGraphql.close();
  });
});

describe('single connection streams at shutdown', () => {
  it('end each operation with complete, then the stream itself, so the drain finishes', async () => {
    const own = await startTestApi({}, { realtime: true });
    try {
      const client = createClient({
        url: `${own.url}/graphql/stream`,
        singleConnection: true,
        headers: { Authorization: `Bearer ${TOKENS.viewer}` },
        retryAttempts: 0,
      });
      const run = await createRun(own);
      const ops = [watch(client, RUN_CHANGED, { runId: run.runId }), watch(client, SUMMARY)];
      await until('both live', () => ops.every((o) => o.results.length > 0));
      own.realtime!.endSubscriptions();
      await own.server!.drain();
      expect(ops.every((o) => o.state.completed)).toBe(true);
      expect(own.server!.eventStreams!.streamCount()).toBe(0);
      // no new stream is reserved once stopping
      const put = await fetch(`${own.url}/graphql/stream`, { method: 'PUT', headers: { Authorization: `Bearer ${TOKENS.viewer}` } }).catch(
        () => null,
      );
      expect(put === null || put.status === 503).toBe(true);
      await client.dispose();
    } finally {
      await own.close();
    }
  });
});
