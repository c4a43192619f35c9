import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/client.js';
import { createApiServer } from '../../src/server/app.js';
import { createLogger } from '../../src/logging/logger.js';
import { createApiMetrics } from '../../src/server/metrics.js';
import { TOKENS, startTestApi, testConfig, type TestApi } from '../support/api.js';
import { CLAIM, FAIL_RUN, chunkInput, claim, createRun, report, startRun } from '../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

describe('health endpoints', () => {
  it('answers /healthz and /readyz with ok', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`${api.url}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    }
  });

  it('exposes Prometheus metrics including request counts by root field', async () => {
    await createRun(api);
    const text = await (await fetch(`${api.url}/metrics`)).text();
    expect(text).toMatch(/lc_requests_total\{operation="createRun",status="200"\} \d+/);
    expect(text).toContain('lc_process_resident_memory_bytes');
  });

  it('exposes chunk reports by effect and the size of each statement they were sent in', async () => {
    const metric = async (name: string) => {
      const text = await (await fetch(`${api.url}/metrics`)).text();
      return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    };
    const before = {
      sum: await metric('lc_chunk_report_batch_size_sum'),
      progress: await metric('lc_chunk_reports_total{result="progress"}'),
    };
    const run = await startRun(api, [100, 100]);
    const owners = [await claim(api, run.runId, '0000'), await claim(api, run.runId, '0001')];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        report(api, chunkInput(run, i % 2 ? '0001' : '0000', owners[i % 2]!.claimToken, Math.floor(i / 2), 20, 5)),
      ),
    );
    expect(results.map((r) => r.result?.partitionStatus)).toEqual(Array(12).fill('RUNNING'));
    // every report is counted in exactly one statement, alone or in a batch
    expect((await metric('lc_chunk_report_batch_size_sum')) - before.sum).toBe(12);
    expect((await metric('lc_chunk_reports_total{result="progress"}')) - before.progress).toBe(12);
  });

  it('answers unknown paths with 404 NOT_FOUND', async () => {
    const res = await fetch(`${api.url}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('serves GraphiQL offline: no CDN addresses in the page', async () => {
    const res = await fetch(`${api.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('GraphiQL');
    expect(html).not.toMatch(/https?:\/\/(unpkg|cdn|fonts\.googleapis|raw\.githubusercontent)/);
  });
});

describe('request ids', () => {
  it('echoes a valid X-Request-Id and replaces an invalid one; errors carry it', async () => {
    const kept = await api.gql(
      FAIL_RUN,
      {
        input: { runId: randomUUID(), expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'M', errorCode: 'E' },
      },
      { headers: { 'X-Request-Id': 'req-42' } },
    );
    expect(kept.headers.get('x-request-id')).toBe('req-42');
    expect(kept.body.errors![0]!.extensions!.requestId).toBe('req-42');
    const replaced = await api.gql('{ runs(first: 1) { nodes { runId } } }', {}, { headers: { 'X-Request-Id': 'has spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('error model', () => {
  it('keeps reserved-looking detail keys as plain keys', async () => {
    const run = await createRun(api);
    const res = await api.gql(FAIL_RUN, {
      input: { runId: run.runId, expectedStatus: 'EXTRACTING', failStatus: 'FAILED_EXTRACT', errorStage: 'X', errorCode: 'E' },
    });
    expect(res.details).toEqual({ runStatus: 'CREATED' });
    expect(res.body.errors![0]!.extensions).not.toHaveProperty('http');
  });

  it('answers schema-level problems with 400 BAD_REQUEST whatever the Accept header', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json', '*/*']) {
      const res = await fetch(`${api.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${TOKENS.nifi}` },
        body: JSON.stringify({ query: '{ runs(first: 1) { nodes { noSuchField } } }' }),
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-error-code')).toBe('BAD_REQUEST');
    }
    const syntax = await api.gql('{ runs(first: ', {});
    expect([syntax.status, syntax.code]).toEqual([400, 'BAD_REQUEST']);
    const wrongType = await api.gql('query($n: Int) { runs(first: $n) { nodes { runId } } }', { n: 'ten' });
    expect([wrongType.status, wrongType.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it('limits query depth, tokens and aliases', async () => {
    const nest = (depth: number) => `{ __schema { types { ${'ofType { '.repeat(depth)}name${' }'.repeat(depth)} } } }`;
    expect((await api.gql(nest(15))).status).toBe(200);
    const deep = await api.gql(nest(25));
    expect([deep.status, deep.code]).toEqual([400, 'BAD_REQUEST']);
    const tokens = await api.gql(`{ runs(first: 1) { nodes { ${'runId '.repeat(6000)} } } }`);
    expect([tokens.status, tokens.code]).toEqual([400, 'BAD_REQUEST']);
    const aliases = `{ ${Array.from({ length: 25 }, (_, i) => `a${i}: runs(first: 1) { nodes { runId } }`).join(' ')} }`;
    const res = await api.gql(aliases);
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it('refuses bodies over 16 MiB with 413 PAYLOAD_TOO_LARGE, by Content-Length or by counting a chunked body', async () => {
    const before = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    const variables = { input: { jobKey: 'BIG', businessKey: 'x'.repeat(17 * 1024 * 1024), hdfsRoot: '/h', stageTablePrefix: 'T_' } };
    const body = JSON.stringify({ query: 'mutation($input: CreateRunInput!) { createRun(input: $input) { runId } }', variables });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.nifi}` };
    const sized = await fetch(`${api.url}/graphql`, { method: 'POST', headers, body });
    expect(sized.status).toBe(413);
    expect(await sized.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    // a stream body goes out chunked, without Content-Length
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 1 << 20) controller.enqueue(bytes.subarray(offset, offset + (1 << 20)));
        controller.close();
      },
    });
    const chunked = await fetch(`${api.url}/graphql`, { method: 'POST', headers, body: stream, duplex: 'half' } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect((await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run')).rows).toEqual(before.rows);
    // a body just under the limit is read and judged as usual
    const fits = await api.gql('mutation($input: CreateRunInput!) { createRun(input: $input) { runId } }', {
      input: { ...variables.input, businessKey: 'x'.repeat(1024 * 1024) },
    });
    expect([fits.status, fits.code]).toEqual([422, 'INVALID_INPUT']);
  });

  it('refuses a mutation request with more than one root field', async () => {
    const two = `mutation { a: failRun(input: {runId: "${randomUUID()}", expectedStatus: CREATED, failStatus: FAILED_MANIFEST, errorStage: "M", errorCode: "E"}) { changed }
      b: failRun(input: {runId: "${randomUUID()}", expectedStatus: CREATED, failStatus: FAILED_MANIFEST, errorStage: "M", errorCode: "E"}) { changed } }`;
    const res = await api.gql(two);
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it('masks unexpected failures as 500 INTERNAL', async () => {
    const broken = await startTestApi();
    try {
      // the function claimPartition calls (claim_partition stays beside it for the previous release)
      await broken.sql.query('DROP FUNCTION nifi_ops.claim_partition_within_pool CASCADE');
      const res = await broken.gql(CLAIM, {
        input: { runId: randomUUID(), partitionId: '0000', claimToken: randomUUID(), workerNode: 'n' },
      });
      expect([res.status, res.code]).toEqual([500, 'INTERNAL']);
      expect(res.body.errors![0]!.message).toBe('Internal server error');
      expect(JSON.stringify(res.body)).not.toContain('claim_partition');
    } finally {
      await broken.close();
    }
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After when the database is unreachable, and /readyz fails', async () => {
    const config = testConfig();
    const db = createDb('postgresql://nobody@127.0.0.1:1/none', { poolSize: 2 });
    const server = createApiServer({ config, db, log: createLogger(config.logging, 'test'), metrics: createApiMetrics() });
    const { port } = await server.listen(0, '127.0.0.1');
    try {
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.nifi}` },
        body: JSON.stringify({
          query: CLAIM,
          variables: { input: { runId: randomUUID(), partitionId: '0000', claimToken: randomUUID(), workerNode: 'n' } },
        }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('x-error-code')).toBe('SERVICE_UNAVAILABLE');
      expect(res.headers.get('retry-after')).toBe('1');
      const viaPrisma = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.nifi}` },
        body: JSON.stringify({ query: `{ run(runId: "${randomUUID()}") { runId } }` }),
      });
      expect(viaPrisma.status).toBe(503);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: 'unavailable' });
    } finally {
      await server.close();
      await db.close();
    }
  });
});
