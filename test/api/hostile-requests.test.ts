// What an attacker (or a broken client) can send: nothing anonymous costs more than a header check, every
// walk over a document is bounded, expensive requests are refused before they run, and strings PostgreSQL
// would reject never reach it. Every refusal is a 4xx that changes nothing.
import { randomUUID } from 'node:crypto';
import { getNamedType, isInputObjectType, isNonNullType, isObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSchema } from '../../src/graphql/schema.js';
import { documentText } from '../../schema/documents/graphql.js';
import * as consoleOperations from '../../web/src/api/operations.js';
import { announceBody, expectUnauthenticatedAnswer } from '../support/announce-body.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { CREATE_RUN, HDFS_ROOT, JOB, START_BACKFILL, startRun } from '../support/fixtures.js';
import { subscribe } from '../support/sse.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ server: { corsOrigins: ['https://console.example:8443'] } }, { realtime: true });
});
afterAll(async () => api?.close());

const runCount = async () => (await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run')).rows[0].n as number;
const createRunInput = (overrides: Record<string, unknown> = {}) => ({
  jobKey: JOB,
  businessKey: `BK_${randomUUID().slice(0, 8)}`,
  hdfsRoot: HDFS_ROOT,
  stageTablePrefix: 'TMP_INSP_DTL_',
  ...overrides,
});

describe('requests without a valid token', () => {
  it('are answered 401 from the headers, before the body arrives', async () => {
    const port = Number(new URL(api.url).port);
    for (const authorization of [undefined, 'Bearer not-a-token', 'Basic dXNlcjpwdw==']) {
      // 15 MB announced, 20 bytes sent: the answer cannot have waited for the rest
      const { answer, socket } = await announceBody(
        port,
        authorization ? { Authorization: authorization } : {},
        15_000_000,
        '{"query":"{ runs { ',
      );
      expectUnauthenticatedAnswer(answer);
      socket.destroy();
    }
  });

  it('get the error envelope with the request id, for every kind of request, introspection included', async () => {
    const requests: Array<[string, RequestInit]> = [
      [
        'POST introspection',
        {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ query: '{ __schema { types { name } } }' }),
        },
      ],
      [
        'POST __typename',
        { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) },
      ],
      ['GET query', { method: 'GET' }],
      ['GET event stream', { method: 'GET', headers: { Accept: 'text/event-stream' } }],
    ];
    for (const [name, init] of requests) {
      const url = `${api.url}/graphql${init.method === 'GET' ? '?query=%7B__typename%7D' : ''}`;
      const res = await fetch(url, { ...init, headers: { ...init.headers, 'X-Request-Id': 'anon-1' } });
      expect(res.status, name).toBe(401);
      expect(res.headers.get('x-request-id'), name).toBe('anon-1');
      expect(await res.json(), name).toEqual({
        errors: [{ message: 'Unauthorized', extensions: { code: 'UNAUTHENTICATED', requestId: 'anon-1' } }],
      });
    }
    const sse = await subscribe(api.url, 'subscription { alertRaised { kind } }', {}, { token: null });
    expect(sse.status).toBe(401);
    sse.close();
  });

  it("still get GraphiQL's page (it holds no data), and a token makes introspection work", async () => {
    const page = await fetch(`${api.url}/graphql`, { headers: { Accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('GraphiQL');
    const introspection = await api.gql<{ __schema: { queryType: { name: string } } }>(
      '{ __schema { queryType { name } } }',
      {},
      { token: 'viewer' },
    );
    expect(introspection.body.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  });
});

/** The issue's document: fragments F0 → F1 → … each spreading the next twice (execution merges the two). */
function fragmentChain(levels: number): string {
  const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`);
  return `query { ...F0 } ${fragments.join(' ')} fragment F${levels} on Query { __typename }`;
}

/** Fragments that really expand: each selects the next under two aliases of a field, 2^levels fields in all. */
function aliasedFragmentChain(levels: number): string {
  const fragments = Array.from(
    { length: levels },
    (_, i) => `fragment T${i} on __Type { a: ofType { ...T${i + 1} } b: ofType { ...T${i + 1} } }`,
  );
  return `{ __schema { types { ...T0 } } } ${fragments.join(' ')} fragment T${levels} on __Type { name }`;
}

describe('documents whose walks could explode', () => {
  it('decides the fragment chain that once blocked the event loop for seconds, and /healthz keeps answering', async () => {
    // 24 levels once took seconds; at 48 a walk that followed every spread would never answer (the test's timeout)
    const [chain, health] = await Promise.all([api.gql(fragmentChain(48)), fetch(`${api.url}/healthz`)]);
    // execution would merge the two spreads, but the cost counts each: 2^48 is refused, in one linear walk
    expect([chain.status, chain.code, chain.details?.cost]).toEqual([400, 'QUERY_TOO_COSTLY', 2 ** 48]);
    expect(health.status).toBe(200);
    const short = await api.gql(fragmentChain(6));
    expect(short.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses fragments that expand exponentially through fields with 400 QUERY_TOO_COSTLY', async () => {
    const res = await api.gql(aliasedFragmentChain(24), {}, { token: 'viewer' });
    expect([res.status, res.code]).toEqual([400, 'QUERY_TOO_COSTLY']);
    expect(res.details).toEqual({ maxExpandedFields: 20_000 });
  });

  it('refuses a selection set broader than 100 fields, written out or gathered from fragments, with 400 QUERY_TOO_COSTLY', async () => {
    const repeated = await api.gql(
      `{ runs(first: 1) { nodes { ${'events(last: 1) { eventId } '.repeat(500)} } } }`,
      {},
      { token: 'viewer' },
    );
    expect([repeated.status, repeated.code, repeated.details]).toEqual([400, 'QUERY_TOO_COSTLY', { maxSelectionBreadth: 100 }]);
    const spreads = Array.from({ length: 300 }, (_, i) => `...F${i}`).join(' ');
    const fragments = Array.from({ length: 300 }, (_, i) => `fragment F${i} on Run { runId }`).join(' ');
    const gathered = await api.gql(`{ runs(first: 1) { nodes { ${spreads} } } } ${fragments}`, {}, { token: 'viewer' });
    expect([gathered.status, gathered.code]).toEqual([400, 'QUERY_TOO_COSTLY']);
    // one fragment spread many times is merged by execution, and counted once
    const merged = await api.gql(
      `{ runs(first: 1) { nodes { ${'...R '.repeat(300)} } } } fragment R on Run { runId }`,
      {},
      { token: 'viewer' },
    );
    expect(merged.status).toBe(200);
  });

  it.each([
    ['a fragment spreading itself', 'query { ...A } fragment A on Query { __typename ...A }'],
    ['two fragments spreading each other', 'query { ...A } fragment A on Query { ...B } fragment B on Query { __typename ...A }'],
    [
      'a long cycle',
      `query { ...C0 } ${Array.from({ length: 30 }, (_, i) => `fragment C${i} on Query { __typename ...C${(i + 1) % 30} }`).join(' ')}`,
    ],
    [
      'a cycle inside a field',
      'query { runs(first: 1) { ...R } } fragment R on RunConnection { pageInfo { hasNextPage } ...S } fragment S on RunConnection { ...R }',
    ],
    ['a cycle no operation reaches', 'query { __typename } fragment A on Query { ...B } fragment B on Query { ...A }'],
  ])('answers %s with 400 BAD_REQUEST', async (_name, query) => {
    const res = await api.gql(query, {}, { token: 'viewer' });
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it.each([
    [
      'two root fields',
      (i: string) =>
        `mutation($a: CreateRunInput!, $b: CreateRunInput!) { createRun(input: $a) { runId } ${i}: createRun(input: $b) { runId } }`,
    ],
    [
      'a second root field in a named fragment',
      (i: string) =>
        `mutation($a: CreateRunInput!, $b: CreateRunInput!) { createRun(input: $a) { runId } ...M } fragment M on Mutation { ${i}: createRun(input: $b) { runId } }`,
    ],
    [
      'both root fields in a fragment',
      (i: string) =>
        `mutation($a: CreateRunInput!, $b: CreateRunInput!) { ...M } fragment M on Mutation { createRun(input: $a) { runId } ${i}: createRun(input: $b) { runId } }`,
    ],
    [
      'a second root field in an inline fragment',
      (i: string) =>
        `mutation($a: CreateRunInput!, $b: CreateRunInput!) { createRun(input: $a) { runId } ... on Mutation { ${i}: createRun(input: $b) { runId } } }`,
    ],
  ])('refuses a mutation with %s with 400 and executes none of it', async (_name, document) => {
    const before = await runCount();
    const res = await api.gql(document('second'), { a: createRunInput(), b: createRunInput() });
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
    expect(res.body.errors![0]!.message).toContain('exactly one root field');
    expect(await runCount()).toBe(before);
  });
});

describe('expensive requests', () => {
  const runFields = 'runId jobKey businessKey status sourceCount extractedCount startedAt heartbeatAt errorCode errorMessage';

  it('refuses twenty aliases of a full runs page with 400 QUERY_TOO_COSTLY before anything runs', async () => {
    const query = `{ ${Array.from({ length: 20 }, (_, i) => `a${i}: runs(first: 500) { nodes { ${runFields} events(last: 100) { eventId message } } }`).join(' ')} }`;
    const res = await api.gql(query, {}, { token: 'viewer' });
    expect([res.status, res.code, res.headers.get('x-error-code')]).toEqual([400, 'QUERY_TOO_COSTLY', 'QUERY_TOO_COSTLY']);
    expect(res.body.data).toBeUndefined();
    expect(res.details).toMatchObject({ maxCost: 250_000 });
  });

  it('counts a runs page once: nodes and edges hold the page runs(first) asked for', async () => {
    const scalars =
      'runId jobKey businessKey status snapshotScn sourceCount expectedPartitionCount successPartitionCount ' +
      'failedPartitionCount extractedCount stagingCount targetCount hdfsRunPath stageTable parameters idempotencyKey createdBy ' +
      'startedAt heartbeatAt extractCompletedAt publishStartedAt publishedAt completedAt cleanedAt errorStage errorCode errorMessage';
    const events = 'events(last: 10) { eventId eventTime level name partitionId processGroup errorCode message actor }';
    // 3 pages × 500 runs × (27 fields + 1 + 10 events × 9 fields) ≈ 177,000: within the limit
    const res = await api.gql(
      `{ ${['a', 'b', 'c'].map((alias) => `${alias}: runs(first: 500) { nodes { ${scalars} ${events} } }`).join(' ')} }`,
      {},
      { token: 'viewer' },
    );
    expect([res.status, res.code]).toEqual([200, undefined]);
  });

  it('counts a list by the page its variables ask for, request by request', async () => {
    const query = `query($n: Int) { runs(first: $n) { nodes { ${runFields} partitions { partitionId status } } } }`;
    const small = await api.gql(query, { n: 1 }, { token: 'viewer' });
    expect(small.status).toBe(200);
    const large = await api.gql(query, { n: 100 }, { token: 'viewer' });
    expect([large.status, large.code]).toEqual([400, 'QUERY_TOO_COSTLY']);
    // the same document with a small page again: the refusal was not cached for the document
    expect((await api.gql(query, { n: 1 }, { token: 'viewer' })).status).toBe(200);
  });

  it('costs a request without coercing its input-object variables, and still counts the page beside them', async () => {
    const query = `query($f: RunFilter, $n: Int) { runs(filter: $f, first: $n) { nodes { ${runFields} partitions { partitionId status } } } }`;
    const large = await api.gql(query, { f: { jobKey: JOB }, n: 100 }, { token: 'viewer' });
    expect([large.status, large.code]).toEqual([400, 'QUERY_TOO_COSTLY']);
    expect((await api.gql(query, { f: { jobKey: JOB }, n: 1 }, { token: 'viewer' })).status).toBe(200);
    // a malformed input object is still refused, by the executor's own coercion
    const malformed = await api.gql(query, { f: { jobKey: 7 }, n: 1 }, { token: 'viewer' });
    expect(malformed.status).toBe(400);
    // what makes leaving them out safe: no field whose cost reads its arguments has a required input-object one
    const schema = buildSchema();
    const costedByArguments: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type)) continue;
      for (const field of Object.values(type.getFields())) {
        if (typeof field.extensions?.complexity !== 'function') continue;
        costedByArguments.push(`${type.name}.${field.name}`);
        const required = field.args.filter((a) => isNonNullType(a.type) && isInputObjectType(getNamedType(a.type)));
        expect(required.map((a) => `${type.name}.${field.name}(${a.name})`)).toEqual([]);
      }
    }
    expect(costedByArguments).toEqual(expect.arrayContaining(['Query.runs', 'Run.events', 'Query.cleanupCandidates']));
  });

  it('caps every page: a larger page than a list allows is 422 naming the argument', async () => {
    await startRun(api, [1]);
    for (const [query, field] of [
      ['{ runs(first: 501) { nodes { runId } } }', 'args.first'],
      ['{ cleanupCandidates(limit: 501) { runId } }', 'args.limit'],
      ['{ monitorSummary(alertLimit: 501) { cleanupDue } }', 'alertLimit'],
      ['{ runs(first: 1) { nodes { events(last: 1001) { eventId } } } }', 'last'],
    ] as const) {
      const res = await api.gql(query, {}, { token: 'viewer' });
      expect([res.status, res.code, res.details?.field], query).toEqual([422, 'INVALID_INPUT', field]);
    }
  });

  it('lets every operation of the console through, the run page of a 10,000-partition run included', async () => {
    const run = await startRun(api, [1]);
    const started = await api.gql<{ startBackfill: { backfill: { backfillId: string } } }>(
      START_BACKFILL,
      { input: { jobKey: 'J', from: '2026-01-01', to: '2026-12-31', reprocess: 'ALL', maxConcurrent: 3, pushReadiness: true } },
      { token: 'operator' },
    );
    const { backfill } = started.body.data!.startBackfill;
    const variables: Record<string, Record<string, unknown>> = {
      RUN: { runId: run.runId, withPartitions: true },
      RUN_CHANGED: { runId: run.runId, withPartitions: true },
      RUNS: { first: 50 },
      READINESS: { consumer: 'C', businessDate: '2026-12-01' },
      READINESS_CHANGED: { consumer: 'C', businessDate: '2026-12-01' },
      PUBLICATION: { consumer: 'C', businessDate: '2026-12-01' },
      GATE: { consumer: 'C' },
      PUBLICATIONS: { consumer: 'C' },
      OBSERVATIONS: { jobId: 'J', businessDate: '2026-12-01' },
      PARTITION_PAGE: { runId: run.runId, first: 50 },
      JOB_PAUSE: { jobKey: 'J' },
      BACKFILL: { backfillId: backfill.backfillId },
      PLAN_BACKFILL: { jobKey: 'J', from: '2026-01-01', to: '2026-12-31', reprocess: 'ALL' },
      JOB_MATRIX: { jobKeys: ['J'], days: 31 },
    };
    for (const [name, operation] of Object.entries(consoleOperations)) {
      if (typeof operation !== 'object' || !('kind' in operation)) continue;
      const document = documentText(operation);
      if (!/^\s*(query|subscription)/.test(document)) continue;
      if (document.trimStart().startsWith('subscription')) {
        const sse = await subscribe(api.url, document, variables[name] ?? {});
        expect(sse.status, name).toBe(200);
        sse.close();
        continue;
      }
      const res = await api.gql(document, variables[name] ?? {}, { token: 'viewer' });
      expect(res.code, name).not.toBe('QUERY_TOO_COSTLY');
      expect(res.status === 200 || res.code === 'PUBLICATION_NOT_FOUND', name).toBe(true);
    }
  });

  it('refuses a costly subscription the same way, before it starts', async () => {
    const partitionFields = 'partitionId status workerNode errorCode errorMessage heartbeatAt attemptCount receivedRows';
    const aliases = ['p1', 'p2', 'p3', 'p4'].map((alias) => `${alias}: partitions { ${partitionFields} }`).join(' ');
    const sse = await subscribe(api.url, `subscription { runChanged { runId ${aliases} } }`);
    expect([sse.status, sse.headers.get('x-error-code')]).toEqual([400, 'QUERY_TOO_COSTLY']);
    sse.close();
  });
});

describe('strings PostgreSQL cannot store', () => {
  it.each([
    [
      'a lone high surrogate in a text field',
      { input: createRunInput({ idempotencyKey: 'key-\ud800' }) },
      'input.idempotencyKey',
      'surrogate',
    ],
    ['a lone low surrogate in JSON', { input: createRunInput({ parameters: { note: 'x\udc00y' } }) }, 'input.parameters.note', 'surrogate'],
    ['a reversed pair in a JSON key', { input: createRunInput({ parameters: { 'k\udc00\ud800': 1 } }) }, 'input.parameters', 'surrogate'],
    ['NUL in JSON', { input: createRunInput({ parameters: { list: ['ok', 'a\u0000b'] } }) }, 'input.parameters.list.1', 'NUL'],
  ])('refuses %s in variables with 422 naming the field; nothing is stored', async (_name, variables, field, reason) => {
    const before = await runCount();
    const res = await api.gql(CREATE_RUN, variables);
    expect([res.status, res.code, res.details?.field]).toEqual([422, 'INVALID_INPUT', field]);
    expect(String(res.details?.reason)).toContain(reason);
    expect(await runCount()).toBe(before);
  });

  it('refuses them in document literals too, and JSON literals nested too deep', async () => {
    const before = await runCount();
    const literal = (parameters: string) =>
      `mutation { createRun(input: { jobKey: "${JOB}", businessKey: "BK_LIT_${randomUUID().slice(0, 6)}", hdfsRoot: "${HDFS_ROOT}", stageTablePrefix: "T_", parameters: ${parameters} }) { runId } }`;
    const nul = await api.gql(literal('{ note: "a\\u0000b" }'));
    expect([nul.status, nul.code, nul.details?.field]).toEqual([422, 'INVALID_INPUT', 'input.parameters.note']);
    const deep = await api.gql(literal(`${'{ n: '.repeat(70)}1${' }'.repeat(70)}`));
    expect([deep.status, deep.code]).toEqual([422, 'INVALID_INPUT']);
    expect(String(deep.details?.reason)).toContain('nested');
    // nested deeper than graphql-js's recursive parser can go, and still under the token limit: 400, not a stack overflow
    const tooDeep = await api.gql(literal(`${'['.repeat(2400)}1${']'.repeat(2400)}`));
    expect([tooDeep.status, tooDeep.code]).toEqual([400, 'BAD_REQUEST']);
    // a lone surrogate escape in a literal is not even a GraphQL string: a schema-level 400
    const surrogate = await api.gql(literal('{ note: "\\ud800" }'));
    expect([surrogate.status, surrogate.code]).toEqual([400, 'BAD_REQUEST']);
    expect(await runCount()).toBe(before);
  });

  it('refuses variables nested ten thousand levels deep with 422, not a stack overflow', async () => {
    // written by hand: JSON.stringify itself overflows the stack at this depth
    const parameters = `${'{"n":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    const input = JSON.stringify(createRunInput()).replace(/}$/, `,"parameters":${parameters}}`);
    const res = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKENS.nifi}` },
      body: `{"query":${JSON.stringify(CREATE_RUN)},"variables":{"input":${input}}}`,
    });
    const body = (await res.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect([res.status, body.errors[0]!.extensions.code]).toEqual([422, 'INVALID_INPUT']);
  });

  it('accepts well-formed pairs: an emoji is stored as sent', async () => {
    const res = await api.gql<{ createRun: { runId: string } }>(CREATE_RUN, {
      input: createRunInput({ parameters: { note: 'load 🚚 done' } }),
    });
    expect(res.status).toBe(200);
    const { rows } = await api.sql.query('SELECT parameters FROM nifi_ops.load_run WHERE run_id = $1', [res.body.data!.createRun.runId]);
    expect(rows[0].parameters).toMatchObject({ note: 'load 🚚 done' });
  });
});

describe('CORS', () => {
  it('allows only the configured origins', async () => {
    const preflight = (origin: string) =>
      fetch(`${api.url}/graphql`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'authorization,content-type',
        },
      });
    const allowed = await preflight('https://console.example:8443');
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://console.example:8443');
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
    const post = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { Origin: 'https://evil.example', 'Content-Type': 'application/json', Authorization: `Bearer ${TOKENS.viewer}` },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(post.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
  });

  it('is off by default: no origin is ever allowed', async () => {
    const plain = await startTestApi();
    try {
      for (const method of ['OPTIONS', 'POST']) {
        const res = await fetch(`${plain.url}/graphql`, {
          method,
          headers: {
            Origin: 'https://console.example:8443',
            'Access-Control-Request-Method': 'POST',
            'Content-Type': 'application/json',
            Authorization: `Bearer ${TOKENS.viewer}`,
          },
          ...(method === 'POST' ? { body: JSON.stringify({ query: '{ __typename }' }) } : {}),
        });
        expect(res.headers.get('access-control-allow-origin'), method).toBeNull();
      }
    } finally {
      await plain.close();
    }
  });
});
