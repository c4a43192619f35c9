// The HTTP side of /graphql: the 401 decided from the headers before the body is read, and the body limit.
// A loopback server in front of Yoga on a small schema — no database.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../../src/auth/tokens.js';
import type { Actor } from '../../../src/graphql/builder.js';
import { announceBody, expectUnauthenticatedAnswer } from '../../support/announce-body.js';
import { capturingLogger, smallYoga } from '../../support/small-api.js';
import { until } from '../../support/until.js';
import { ProviderUnavailableError } from '../../../src/auth/provider.js';
import { loadStaticTokens } from '../../../src/auth/static-tokens.js';
import { createAuthenticator, useRootFieldAuth } from '../../../src/server/auth.js';
import { useErrorEnvelope } from '../../../src/server/error-envelope.js';
import { createGraphQLEndpoint, MAX_BODY_BYTES } from '../../../src/server/graphql-endpoint.js';
import { useRequestId } from '../../../src/server/request-id.js';

const TOKEN = 'viewer-token';
const yoga = smallYoga([useRequestId(), useRootFieldAuth(), useErrorEnvelope(capturingLogger().log)]);
const authenticate = createAuthenticator(
  loadStaticTokens({ tokens: [{ name: 'victor', sha256: hashToken(TOKEN), roles: ['viewer'] }], tokensFile: null }, capturingLogger().log),
);
const server = http.createServer(createGraphQLEndpoint(yoga, authenticate));
// What the endpoint hands on, recorded instead of parsed: the body limit is the endpoint's, not Yoga's
const received: Array<{ bytes: number; actor: Actor | null }> = [];
const bodyLimit = http.createServer(
  createGraphQLEndpoint(
    {
      handle(req, res, { actor }) {
        received.push({ bytes: (req as http.IncomingMessage & { body: { bytes: number } }).body.bytes, actor });
        res.end();
      },
    },
    authenticate,
  ),
);
let url: string;
let port: number;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => bodyLimit.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
  url = `http://127.0.0.1:${port}/graphql`;
});
afterAll(async () => {
  for (const listening of [server, bodyLimit]) {
    listening.closeAllConnections();
    await new Promise((resolve) => listening.close(resolve));
  }
});

const json = (query: string) => JSON.stringify({ query });

/** A GET of /graphql as it crosses the wire (fetch would ask for and undo compression itself). */
function wireGet(headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/graphql', headers }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes }));
      })
      .on('error', reject);
  });
}

describe('requests without a valid token', () => {
  it('are answered 401 from the headers, before the body arrives', async () => {
    for (const authorization of [undefined, 'Bearer not-a-token', 'Basic dXNlcjpwdw==']) {
      // 15 MB announced, 20 bytes sent: the answer cannot have waited for the rest
      const { answer, socket } = await announceBody(
        port,
        authorization ? { Authorization: authorization } : {},
        15_000_000,
        '{"query":"{ items { ',
      );
      expectUnauthenticatedAnswer(answer);
      socket.destroy();
    }
  });

  it('get the error envelope with the request id, for every kind of request, introspection included', async () => {
    const requests: Array<[string, RequestInit]> = [
      [
        'POST introspection',
        { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: json('{ __schema { types { name } } }') },
      ],
      ['POST __typename', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: json('{ __typename }') }],
      ['GET query', { method: 'GET' }],
      ['GET event stream', { method: 'GET', headers: { Accept: 'text/event-stream' } }],
    ];
    for (const [name, init] of requests) {
      const res = await fetch(`${url}${init.method === 'GET' ? '?query=%7B__typename%7D' : ''}`, {
        ...init,
        headers: { ...init.headers, 'X-Request-Id': 'anon-1' },
      });
      expect(res.status, name).toBe(401);
      expect(res.headers.get('x-request-id'), name).toBe('anon-1');
      // the rest of a body is thrown away and the connection kept, so a client still sending it is not reset
      expect(res.headers.get('connection'), name).toBe('keep-alive');
      expect(await res.json(), name).toEqual({
        errors: [{ message: 'Unauthorized', extensions: { code: 'UNAUTHENTICATED', requestId: 'anon-1' } }],
      });
    }
  });

  it('leave a client that sends its whole body the answer and a connection that serves its next request', async () => {
    const socket = net.connect(port, '127.0.0.1');
    const answers: string[] = [];
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      for (;;) {
        const head = text.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(text.slice(0, head))?.[1]);
        if (head < 0 || text.length < head + 4 + length) break;
        answers.push(text.slice(0, head + 4 + length));
        text = text.slice(head + 4 + length);
      }
    });
    const body = JSON.stringify({ query: '{ items { id } }', variables: { pad: 'p'.repeat(2_000_000) } });
    const post = (authorization: string) =>
      `POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${authorization}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    socket.write(post(''));
    socket.write(post(`Authorization: Bearer ${TOKEN}\r\n`));
    await until('two answers', () => answers.length === 2);
    socket.destroy();
    expect(answers[0]).toMatch(/^HTTP\/1\.1 401 [\s\S]*"UNAUTHENTICATED"/);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 200 [\s\S]*"items":\[/);
  });

  it('close a connection whose announced body does not come within the time given, or goes past the limit', async () => {
    const impatient = http.createServer(createGraphQLEndpoint(yoga, authenticate, { discardBodyMs: 200 }));
    await new Promise<void>((resolve) => impatient.listen(0, '127.0.0.1', resolve));
    try {
      const impatientPort = (impatient.address() as net.AddressInfo).port;
      const stalled = await announceBody(impatientPort, {}, 1_000, '{"query":');
      expectUnauthenticatedAnswer(stalled.answer);
      await stalled.closed;
      // chunked, with no length announced: thrown away up to the limit, then cut
      const endless = net.connect(impatientPort, '127.0.0.1');
      const cut = new Promise<string>((resolve) => {
        endless.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
        endless.on('close', () => resolve('closed'));
      });
      endless.write('POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
      const chunk = `${(1 << 20).toString(16)}\r\n${' '.repeat(1 << 20)}\r\n`;
      let sent = 0;
      while (!endless.destroyed && sent <= 2 * MAX_BODY_BYTES) {
        if (!endless.write(chunk)) await new Promise((resolve) => endless.once('drain', resolve).once('close', resolve));
        sent += 1 << 20;
      }
      expect(await cut).toMatch(/closed|ECONNRESET|EPIPE/);
      expect(sent).toBeLessThanOrEqual(2 * MAX_BODY_BYTES);
    } finally {
      impatient.closeAllConnections();
      await new Promise((resolve) => impatient.close(resolve));
    }
  });

  it("still get GraphiQL's page (it holds no data), compressed and revalidated, and CORS preflights", async () => {
    const page = await fetch(url, { headers: { Accept: 'text/html' } });
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    expect(await page.text()).toContain('renderYogaGraphiQL');
    // on the wire: 9 MB of inline bundle sent as about 2 MB of br, then a 304 for the browser's cached copy
    const first = await wireGet({ Accept: 'text/html', 'Accept-Encoding': 'gzip, br' });
    expect([first.status, first.headers['content-encoding'], first.headers['cache-control']]).toEqual([200, 'br', 'no-cache']);
    expect(first.bytes).toBeLessThan(2_500_000);
    const repeat = await wireGet({ Accept: 'text/html', 'Accept-Encoding': 'gzip, br', 'If-None-Match': first.headers.etag! });
    expect([repeat.status, repeat.bytes]).toEqual([304, 0]);
    const preflight = await fetch(url, {
      method: 'OPTIONS',
      headers: { Origin: 'https://console.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.status).toBe(204);
  });
});

describe('requests with a valid token', () => {
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` };

  it("reach Yoga with the token's actor, by POST and by GET", async () => {
    const posted = await fetch(url, { method: 'POST', headers, body: json('{ hello }') });
    expect([posted.status, await posted.json()]).toEqual([200, { data: { hello: 'world' } }]);
    const got = await fetch(`${url}?query=%7Bhello%7D`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect([got.status, await got.json()]).toEqual([200, { data: { hello: 'world' } }]);
    const forbidden = await fetch(url, { method: 'POST', headers, body: json('{ operatorOnly }') });
    expect([forbidden.status, forbidden.headers.get('x-error-code')]).toEqual([403, 'FORBIDDEN']);
  });

  it(`refuse bodies over ${MAX_BODY_BYTES} bytes with 413 PAYLOAD_TOO_LARGE, by Content-Length or by counting a chunked body`, async () => {
    const limitUrl = `http://127.0.0.1:${(bodyLimit.address() as net.AddressInfo).port}/graphql`;
    const over = new Uint8Array(MAX_BODY_BYTES + 1).fill(0x20);
    const sized = await fetch(limitUrl, { method: 'POST', headers, body: over });
    expect([sized.status, sized.headers.get('connection')]).toEqual([413, 'close']);
    expect(await sized.json()).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: `request bodies are limited to ${MAX_BODY_BYTES} bytes` });
    // a stream body goes out chunked, without Content-Length
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < over.length; offset += 1 << 20) controller.enqueue(over.subarray(offset, offset + (1 << 20)));
        controller.close();
      },
    });
    const chunked = await fetch(limitUrl, { method: 'POST', headers, body: stream, duplex: 'half' } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(received).toEqual([]);
    // a body of exactly the limit is read whole and handed on with the actor
    const fits = await fetch(limitUrl, { method: 'POST', headers, body: over.subarray(1) });
    expect(fits.status).toBe(200);
    expect(received).toEqual([
      { bytes: MAX_BODY_BYTES, actor: { name: 'victor', roles: ['viewer'], method: 'TOKEN', issuer: null, subject: null } },
    ]);
  });

  it('hand Yoga a large body as one chunk it reads as is, with a single key for its adapter to count (not one per byte)', async () => {
    const seen: Array<{ keys: number; text: string }> = [];
    const recording = http.createServer(
      createGraphQLEndpoint(
        {
          async handle(req, res) {
            const body = (req as http.IncomingMessage & { body: AsyncIterable<Buffer> }).body;
            const chunks: Buffer[] = [];
            for await (const chunk of body) chunks.push(chunk);
            seen.push({ keys: Object.keys(body).length, text: Buffer.concat(chunks).toString('utf8') });
            res.end();
          },
        },
        authenticate,
      ),
    );
    await new Promise<void>((resolve) => recording.listen(0, '127.0.0.1', resolve));
    try {
      const large = JSON.stringify({ query: '{ hello }', variables: { pad: 'é'.repeat(2 << 20) } });
      const sent = await fetch(`http://127.0.0.1:${(recording.address() as net.AddressInfo).port}/graphql`, {
        method: 'POST',
        headers,
        body: large,
      });
      expect(sent.status).toBe(200);
      expect(seen).toEqual([{ keys: 1, text: large }]);
    } finally {
      recording.closeAllConnections();
      await new Promise((resolve) => recording.close(resolve));
    }
    // and through Yoga itself, the same body is parsed and answered
    const answered = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: '{ hello }', variables: { pad: 'x'.repeat(4 << 20) } }),
    });
    expect([answered.status, await answered.json()]).toEqual([200, { data: { hello: 'world' } }]);
  });
});

describe('credentials decided later (a JWT, a session)', () => {
  /** An endpoint whose authenticator answers after `ms`, with the actor or by throwing `error`. */
  async function delayed(answer: () => Actor | null) {
    const server = http.createServer(
      createGraphQLEndpoint(
        yoga,
        () =>
          new Promise((resolve, reject) =>
            setTimeout(() => {
              try {
                resolve(answer());
              } catch (error) {
                reject(error);
              }
            }, 50),
          ),
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/graphql`,
      close: () => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(resolve));
      },
    };
  }
  const victor: Actor = { name: 'victor', roles: ['viewer'], method: 'JWT', issuer: 'https://idp.test', subject: 'v' };

  it('keep the body that arrived while they were decided', async () => {
    const endpoint = await delayed(() => victor);
    try {
      const body = JSON.stringify({ query: '{ hello }', variables: { pad: 'x'.repeat(1 << 20) } });
      const res = await fetch(endpoint.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      expect([res.status, await res.json()]).toEqual([200, { data: { hello: 'world' } }]);
    } finally {
      await endpoint.close();
    }
  });

  it('are answered 503 SERVICE_UNAVAILABLE with Retry-After when the provider cannot be asked, 401 when refused', async () => {
    const unavailable = await delayed(() => {
      throw new ProviderUnavailableError('down');
    });
    const refused = await delayed(() => null);
    try {
      const res = await fetch(unavailable.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: json('{ hello }'),
      });
      expect([res.status, res.headers.get('x-error-code'), res.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '5']);
      const no = await fetch(refused.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: json('{ hello }') });
      expect([no.status, no.headers.get('x-error-code')]).toEqual([401, 'UNAUTHENTICATED']);
    } finally {
      await unavailable.close();
      await refused.close();
    }
  });
});
