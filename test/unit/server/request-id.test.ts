// Request ids alone, through yoga.fetch on a small schema: no database, no HTTP server.
import { describe, expect, it } from 'vitest';
import { capturingLogger, post, smallYoga } from '../../support/small-api.js';
import { useErrorEnvelope } from '../../../src/server/error-envelope.js';
import { requestIdFrom, requestIdOf, useRequestId } from '../../../src/server/request-id.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const yoga = smallYoga([useRequestId(), useErrorEnvelope(capturingLogger().log)]);

describe('requestIdFrom', () => {
  it.each(['req-42', 'A.b_c-9', 'x'.repeat(100)])('keeps %s', (id) => {
    expect(requestIdFrom(id)).toBe(id);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['with spaces', 'has spaces'],
    ['too long', 'x'.repeat(101)],
    ['with a newline', 'a\nb'],
    ['not ASCII', 'zäh'],
  ])('replaces one %s with a new UUID', (_name, id) => {
    expect(requestIdFrom(id)).toMatch(UUID);
  });

  it('gives one request the same id however often it is asked', () => {
    const request = new Request('http://test/graphql');
    expect(requestIdOf(request)).toMatch(UUID);
    expect(requestIdOf(request)).toBe(requestIdOf(request));
    expect(requestIdOf(new Request('http://test/graphql'))).not.toBe(requestIdOf(request));
  });
});

describe('the X-Request-Id header', () => {
  it('is echoed when valid, on success and on error, and the errors carry it', async () => {
    const ok = await post(yoga, '{ hello }', { headers: { 'X-Request-Id': 'req-42' } });
    expect([ok.status, ok.headers.get('x-request-id')]).toEqual([200, 'req-42']);
    const failed = await post(yoga, '{ domainError(code: "RUN_NOT_FOUND") }', { headers: { 'X-Request-Id': 'req-43' } });
    expect([failed.status, failed.headers.get('x-request-id'), failed.body.errors![0]!.extensions!.requestId]).toEqual([
      404,
      'req-43',
      'req-43',
    ]);
  });

  it('is generated when absent or invalid, and the errors carry the generated one', async () => {
    const replaced = await post(yoga, '{ hello }', { headers: { 'X-Request-Id': 'has spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(UUID);
    const generated = await post(yoga, '{ noSuchField }');
    expect(generated.headers.get('x-request-id')).toMatch(UUID);
    expect(generated.body.errors![0]!.extensions!.requestId).toBe(generated.headers.get('x-request-id'));
    const another = await post(yoga, '{ noSuchField }');
    expect(another.headers.get('x-request-id')).not.toBe(generated.headers.get('x-request-id'));
  });
});
