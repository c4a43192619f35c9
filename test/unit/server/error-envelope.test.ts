// The error envelope alone, through yoga.fetch on a small schema: no database, no HTTP server.
import { beforeEach, describe, expect, it } from 'vitest';
import { ERROR_HTTP_STATUS, type ErrorCode } from '../../../src/contract/errors.js';
import { ACTORS, capturingLogger, post, smallYoga } from '../../support/small-api.js';
import { useErrorEnvelope, useUnsupportedMediaType } from '../../../src/server/error-envelope.js';
import { useRequestId } from '../../../src/server/request-id.js';

const logged = capturingLogger();
const yoga = smallYoga([useRequestId(), useErrorEnvelope(logged.log), useUnsupportedMediaType()]);
beforeEach(() => {
  logged.lines.length = 0;
});

describe('domain errors', () => {
  it.each(Object.entries(ERROR_HTTP_STATUS) as Array<[ErrorCode, number]>)(
    '%s is HTTP %i with its code in X-Error-Code and the body',
    async (code, status) => {
      const res = await post(yoga, 'query($code: String!) { domainError(code: $code) }', {
        variables: { code },
        headers: { 'X-Request-Id': 'req-1' },
      });
      expect(res.status).toBe(status);
      expect(res.headers.get('x-error-code')).toBe(code);
      expect(res.body.errors).toEqual([
        {
          message: `refused with ${code}`,
          locations: [{ line: 1, column: 25 }],
          path: ['domainError'],
          extensions: { code, details: { asked: code }, requestId: 'req-1' },
        },
      ]);
      expect(res.headers.get('www-authenticate')).toBe(code === 'UNAUTHENTICATED' ? 'Bearer' : null);
      expect(res.headers.get('retry-after')).toBe(status === 503 ? '1' : null);
    },
  );

  it("keeps a GraphQLError's own contract code and details (the scalars' 422)", async () => {
    const res = await post(yoga, '{ invalidInput }');
    expect([res.status, res.code, res.headers.get('x-error-code')]).toEqual([422, 'INVALID_INPUT', 'INVALID_INPUT']);
    expect(res.details).toEqual({ field: 'input.jobKey', reason: 'must match ^[A-Z]' });
    expect(res.body.errors![0]!.extensions).not.toHaveProperty('http');
  });

  it('answers with the highest status among the errors, and every error names the code that decided it', async () => {
    const res = await post(yoga, '{ a: domainError(code: "RUN_NOT_FOUND") b: domainError(code: "CHUNK_CONFLICT") hello }');
    expect(res.status).toBe(409);
    expect(res.headers.get('x-error-code')).toBe('CHUNK_CONFLICT');
    expect(res.body.errors!.map((e) => e.extensions!.code)).toEqual(['RUN_NOT_FOUND', 'CHUNK_CONFLICT']);
    expect(res.body.data).toEqual({ a: null, b: null, hello: 'world' });
  });
});

describe('error bodies lead with their code', () => {
  /** What InvokeHTTP keeps of an error body by default: its first 256 bytes. */
  const first256 = async (res: Response) =>
    Buffer.from(await res.arrayBuffer())
      .subarray(0, 256)
      .toString('latin1');
  const fetchRaw = (query: string, variables: Record<string, unknown> = {}) =>
    yoga.fetch(
      'http://test/graphql',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) },
      { actor: ACTORS.viewer },
    );

  it.each(Object.keys(ERROR_HTTP_STATUS) as ErrorCode[])(
    '%s: the code is in the first 256 bytes, before a long message and details',
    async (code) => {
      const res = await fetchRaw('query($code: String!) { domainError(code: $code, padding: 3000) }', { code });
      const head = await first256(res);
      expect(head.startsWith(`{"errors":[{"extensions":{"code":"${code}","requestId":"`), head).toBe(true);
    },
  );

  it('so do schema-level errors with long messages, and the 415 of an unknown content type', async () => {
    const unknownField = await fetchRaw(`{ items { ${'x'.repeat(2000)} } }`);
    expect(unknownField.status).toBe(400);
    expect(await first256(unknownField)).toMatch(/^\{"errors":\[\{"extensions":\{"code":"BAD_REQUEST"/);
    const unsupported = await yoga.fetch(
      'http://test/graphql',
      { method: 'POST', headers: { 'content-type': `text/${'x'.repeat(2000)}` }, body: '{}' },
      { actor: null },
    );
    expect(unsupported.status).toBe(415);
    expect(await first256(unsupported)).toMatch(/^\{"errors":\[\{"extensions":\{"code":"BAD_REQUEST"/);
  });

  it('keeps every field of the error, and the data after the errors', async () => {
    const res = await fetchRaw('{ a: domainError(code: "RUN_NOT_FOUND") hello }');
    const text = await res.text();
    expect(text.indexOf('"errors"')).toBeLessThan(text.indexOf('"data"'));
    expect(JSON.parse(text)).toEqual({
      errors: [
        {
          extensions: { code: 'RUN_NOT_FOUND', requestId: expect.any(String), details: { asked: 'RUN_NOT_FOUND' } },
          message: 'refused with RUN_NOT_FOUND',
          locations: [{ line: 1, column: 3 }],
          path: ['a'],
        },
      ],
      data: { a: null, hello: 'world' },
    });
  });
});

describe('unexpected errors', () => {
  it('are 500 INTERNAL with a masked message and the request id; the log has what the body hides', async () => {
    const res = await post(yoga, '{ bug }', { headers: { 'X-Request-Id': 'req-500' } });
    expect([res.status, res.code, res.headers.get('x-error-code')]).toEqual([500, 'INTERNAL', 'INTERNAL']);
    expect(res.body.errors).toEqual([
      {
        message: 'Internal server error',
        locations: [{ line: 1, column: 3 }],
        path: ['bug'],
        extensions: { code: 'INTERNAL', requestId: 'req-500' },
      },
    ]);
    expect(JSON.stringify(res.body)).not.toContain('claim_partition');
    expect(JSON.stringify(res.body)).not.toMatch(/\bat .+:\d+:\d+/);
    const line = logged.lines.find((l) => l.msg === 'unexpected error');
    expect(line).toMatchObject({
      level: 50,
      requestId: 'req-500',
      path: ['bug'],
      err: { message: 'function nifi_ops.claim_partition(uuid) does not exist' },
    });
    expect(line!.err.stack).toContain('claim_partition');
  });

  it('are 503 SERVICE_UNAVAILABLE with Retry-After when the database is unavailable, and not logged as bugs', async () => {
    const res = await post(yoga, '{ databaseDown }');
    expect([res.status, res.code, res.headers.get('x-error-code'), res.headers.get('retry-after')]).toEqual([
      503,
      'SERVICE_UNAVAILABLE',
      'SERVICE_UNAVAILABLE',
      '1',
    ]);
    expect(res.body.errors![0]!.message).toBe('database unavailable, retry later');
    expect(logged.lines.filter((l) => l.msg === 'unexpected error')).toEqual([]);
  });
});

describe('schema-level problems', () => {
  it('are 400 BAD_REQUEST whatever the Accept header', async () => {
    for (const accept of ['application/json', 'application/graphql-response+json', '*/*']) {
      const res = await post(yoga, '{ items { noSuchField } }', { headers: { accept } });
      expect([res.status, res.headers.get('x-error-code')], accept).toEqual([400, 'BAD_REQUEST']);
    }
    const syntax = await post(yoga, '{ items(first: ');
    expect([syntax.status, syntax.code]).toEqual([400, 'BAD_REQUEST']);
    const wrongType = await post(yoga, 'query($n: Int) { items(first: $n) { id } }', { variables: { n: 'ten' } });
    expect([wrongType.status, wrongType.code]).toEqual([400, 'BAD_REQUEST']);
    expect(wrongType.body.errors![0]!.extensions).toEqual({ code: 'BAD_REQUEST', requestId: expect.any(String) });
  });

  it('a body no parser accepts is 415 with the envelope and X-Error-Code', async () => {
    const res = await yoga.fetch(
      'http://test/graphql',
      {
        method: 'POST',
        headers: { 'content-type': 'application/octet-stream', 'x-request-id': 'req-415' },
        body: '{"query":"{ hello }"}',
      },
      { actor: null },
    );
    expect([res.status, res.headers.get('x-error-code')]).toEqual([415, 'BAD_REQUEST']);
    expect(await res.json()).toEqual({
      errors: [
        {
          message: 'unsupported Content-Type "application/octet-stream": send application/json',
          extensions: { code: 'BAD_REQUEST', requestId: 'req-415' },
        },
      ],
    });
  });
});

it('leaves a successful result as it is', async () => {
  const res = await post(yoga, '{ hello }');
  expect([res.status, res.headers.get('x-error-code'), res.body]).toEqual([200, null, { data: { hello: 'world' } }]);
});
