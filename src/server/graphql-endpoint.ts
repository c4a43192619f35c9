import type http from 'node:http';
import type { Actor } from '../graphql/builder.js';
import { ProviderUnavailableError } from '../auth/provider.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import type { Authenticate } from './auth.js';
import { leadingWithCode } from './error-envelope.js';
import { belongsOnLane, type ExecutionLane, LaneOverloadedError } from './execution-lane.js';
import { asksForGraphiQL, serveGraphiQL } from './graphiql.js';
import { currentTraceparent } from '../tracing/tracing.js';
import { requestIdFrom } from './request-id.js';

export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The Yoga instance behind /graphql, handed the actor the HTTP layer authenticated. */
export interface GraphQLHandler {
  handle(req: http.IncomingMessage, res: http.ServerResponse, context: { actor: Actor | null }): unknown;
}

/**
 * Reads the whole body, refusing one longer than MAX_BODY_BYTES whatever its framing (a chunked body has no
 * Content-Length). Yoga takes a body already read as is; otherwise it pipes the stream through a byte
 * counter of its own, which costs more per request than the rest of its HTTP handling.
 */
function readBody(req: http.IncomingMessage): Promise<Buffer | 'too large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.pause();
        resolve('too large');
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length)));
    req.on('error', reject);
  });
}

/**
 * The body as Yoga's adapter (@whatwg-node/server) takes a body already read: it first asks whether
 * Object.keys() of it is empty, and a Buffer's keys are every byte's index (a 1 MiB manifest: 375 ms of
 * one synchronous stretch, 16 MiB: 15 s). An async iterable of the one Buffer has a single key.
 */
function asReadBody(body: Buffer): { bytes: number; [Symbol.asyncIterator](): AsyncGenerator<Buffer> } {
  return {
    bytes: body.length,
    async *[Symbol.asyncIterator]() {
      yield body;
    },
  };
}

function sendPayloadTooLarge(res: http.ServerResponse): void {
  // the rest of the body is not read: the connection cannot carry another request
  sendJson(
    res,
    413,
    { code: 'PAYLOAD_TOO_LARGE', message: `request bodies are limited to ${MAX_BODY_BYTES} bytes` },
    { Connection: 'close' },
  );
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * How long the rest of a refused request's body is read and thrown away before the connection is cut (see
 * discardBody): long enough for a client on a slow link to send 16 MiB, short enough that a client that never
 * sends what it announced holds nothing for long.
 */
const DISCARD_BODY_MS = 5_000;

/**
 * What is left of a refused request's body is read and thrown away, up to MAX_BODY_BYTES and for at most
 * `discardMs`, instead of closing the connection at once: a socket closed with unread bytes makes the kernel
 * answer with a reset, and a client still sending its body may see the reset before it reads the answer (40 in
 * 1,000 anonymous 2 MB posts did, with `Connection: close`). Nothing is kept, and the connection serves the
 * client's next request.
 */
function discardBody(req: http.IncomingMessage, discardMs: number): void {
  let discarded = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, discardMs);
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_BODY_BYTES) cut();
  });
  req.once('close', () => clearTimeout(timer));
}

/** The contract's error envelope for an answer the HTTP layer gives itself, before or instead of Yoga. */
function sendError(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  status: number,
  error: { code: string; message: string },
  headers: Record<string, string> = {},
): void {
  const incoming = req.headers['x-request-id'];
  const requestId = requestIdFrom(Array.isArray(incoming) ? incoming[0] : incoming);
  sendJson(
    res,
    status,
    { errors: [leadingWithCode({ message: error.message, extensions: { code: error.code, requestId } })] },
    { 'X-Error-Code': error.code, 'X-Request-Id': requestId, ...headers },
  );
}

/** 401 from the headers alone: the body is never parsed, and what arrives of it is thrown away (discardBody). */
function sendUnauthenticated(req: http.IncomingMessage, res: http.ServerResponse, discardMs: number): void {
  discardBody(req, discardMs);
  sendError(req, res, 401, { code: 'UNAUTHENTICATED', message: 'Unauthorized' }, { 'WWW-Authenticate': 'Bearer' });
}

/** 503 when the identity provider (its keys, its discovery) or a session's row could not be had; anything else is a bug, 500. */
function refuseUnavailable(req: http.IncomingMessage, res: http.ServerResponse, error: unknown, discardMs: number): void {
  discardBody(req, discardMs);
  if (error instanceof ProviderUnavailableError) {
    sendError(
      req,
      res,
      503,
      { code: 'SERVICE_UNAVAILABLE', message: 'the identity provider cannot be reached; retry later' },
      { 'Retry-After': '5' },
    );
  } else if (isDatabaseUnavailable(error)) {
    sendError(req, res, 503, { code: 'SERVICE_UNAVAILABLE', message: 'database unavailable, retry later' }, { 'Retry-After': '1' });
  } else {
    sendError(req, res, 500, { code: 'INTERNAL', message: 'Internal server error' });
  }
}

/** Response headers that describe the connection between the thread's Yoga and us, not the one to the client. */
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length']);

/** Runs the request on an execution thread and sends its answer as Yoga there made it. */
function executeOnLane(lane: ExecutionLane, req: http.IncomingMessage, res: http.ServerResponse, body: Buffer | null, actor: Actor): void {
  const headers: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.push([name, Array.isArray(value) ? value.join(', ') : value]);
  }
  // the body's memory moves to the thread, so it must own its whole buffer (a small one is a slice of a shared pool)
  const owned = body && (body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : Uint8Array.from(body));
  const traceparent = currentTraceparent();
  lane.execute({ method: req.method ?? 'GET', url: req.url ?? '/graphql', headers, body: owned, actor, traceparent }).then(
    (answer) => {
      res.writeHead(answer.status, [
        ...answer.headers.filter(([name]) => !NOT_FORWARDED.has(name.toLowerCase())).flat(),
        'Content-Length',
        String(answer.body.byteLength),
      ]);
      res.end(answer.body);
    },
    (error: unknown) => {
      if (error instanceof LaneOverloadedError) {
        sendError(req, res, 503, { code: 'SERVICE_UNAVAILABLE', message: error.message }, { 'Retry-After': '1' });
      } else {
        sendError(req, res, 500, { code: 'INTERNAL', message: 'Internal server error' });
      }
    },
  );
}

/**
 * The HTTP side of /graphql: the token is checked from the headers before the body is read (401 otherwise),
 * the body is read within MAX_BODY_BYTES (413 otherwise), and only then does Yoga see the request: on an
 * execution thread when `lane` is given and the request belongs there (belongsOnLane), else on this thread.
 */
export function createGraphQLEndpoint(
  yoga: GraphQLHandler,
  authenticate: Authenticate,
  { discardBodyMs = DISCARD_BODY_MS, lane = null }: { discardBodyMs?: number; lane?: ExecutionLane | null } = {},
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const onLane = (req: http.IncomingMessage, body: Buffer | null) =>
    lane !== null && belongsOnLane({ method: req.method ?? 'GET', accept: req.headers.accept ?? '', url: req.url ?? '', body });
  const proceed = (req: http.IncomingMessage, res: http.ServerResponse, actor: Actor | null) => {
    if (!actor) return sendUnauthenticated(req, res, discardBodyMs);
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return sendPayloadTooLarge(res);
    if (req.method !== 'POST') {
      if (lane && onLane(req, null)) return executeOnLane(lane, req, res, null, actor);
      void yoga.handle(req, res, { actor });
      return;
    }
    readBody(req).then(
      (body) => {
        if (body === 'too large') return sendPayloadTooLarge(res);
        if (lane && onLane(req, body)) return executeOnLane(lane, req, res, body, actor);
        void yoga.handle(Object.assign(req, { body: asReadBody(body) }), res, { actor });
      },
      () => res.destroy(),
    );
  };
  return (req, res) => {
    if (asksForGraphiQL(req)) {
      serveGraphiQL(req, res).catch(() => res.destroy());
      return;
    }
    // CORS preflights carry no credentials by design; Yoga answers them from server.corsOrigins
    if (req.method === 'OPTIONS') {
      void yoga.handle(req, res, { actor: null });
      return;
    }
    let answer: ReturnType<Authenticate>;
    try {
      answer = authenticate(req);
    } catch (error) {
      return refuseUnavailable(req, res, error, discardBodyMs);
    }
    if (answer instanceof Promise) {
      // the body waits in the socket's buffer (no reader yet) while a key or a session row is looked up
      answer.then(
        (actor) => proceed(req, res, actor),
        (error: unknown) => refuseUnavailable(req, res, error, discardBodyMs),
      );
      return;
    }
    proceed(req, res, answer);
  };
}
