// GraphQL over SSE on /graphql/stream (graphql-sse's protocol), whose single connection mode lets a browser tab
// carry all its subscriptions on one HTTP connection: Chromium allows six per host, and a dashboard alone held
// three in distinct connections mode. /graphql keeps Yoga's distinct connections mode for existing clients.
import { randomUUID } from 'node:crypto';
import { type ExecutionResult, getOperationAST, GraphQLError } from 'graphql';
import { TOKEN_HEADER_KEY, TOKEN_QUERY_KEY } from 'graphql-sse';
import { createHandler } from 'graphql-sse/lib/use/fetch';
import type { Plugin, YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { GraphQLContext } from '../graphql/builder.js';
import { envelopedResult } from './error-envelope.js';
import { requestIdOf } from './request-id.js';

export const EVENT_STREAM_PATH = '/graphql/stream';

const EVENT_LINE = 'e'.charCodeAt(0);
const NEXT_EVENT = 'n'.charCodeAt(0);

/** Operations one stream may carry at once: the console's busiest page needs three. */
export const MAX_STREAM_OPERATIONS = 50;
/** Reservations (PUT) not yet connected that the process holds at once; more are refused with 503. */
const MAX_PENDING_RESERVATIONS = 1000;
/** A reservation not connected within this time is dropped with whatever was posted to it. */
const RESERVATION_MS = 30_000;
/**
 * Events a stream's client may leave unread (queued in the process) before the stream is cut: graphql-sse reads its
 * operations' events eagerly, so a client that stops reading would otherwise make it queue without end. The
 * client re-opens the stream and re-reads; the console's busiest page gets a few events a second.
 */
const MAX_UNSENT_EVENTS = 100;
/** At shutdown, how long streams wait for their operations' `complete` before they are ended anyway. */
const END_GRACE_MS = 2_000;

interface StreamEntry {
  operations: number;
  /** Events handed to graphql-sse for this stream, and those its response has sent. */
  queued: number;
  sent: number;
  connected: boolean;
  expiry: NodeJS.Timeout | undefined;
  /** Ends the stream's response after what is queued on it was sent. */
  end: AbortController | undefined;
}

/** The request as graphql-sse's fetch handler reads it, with a signal that shutdown can abort too. */
interface StreamRequest {
  method: string;
  url: string;
  headers: Headers;
  text(): Promise<string>;
  signal: AbortSignal;
  original: Request;
  serverContext: Record<string, unknown>;
  end: AbortController;
}

export interface EventStreams {
  /** The Yoga plugin serving EVENT_STREAM_PATH. */
  plugin: Plugin;
  /** Single-connection streams open or reserved now. */
  streamCount(): number;
  /**
   * Shutdown: no new stream is reserved, and each open one ends (after its operations' `complete`, which
   * realtime.endSubscriptions() brings about) so that the server's drain can finish.
   */
  close(): void;
}

function refusal(
  status: number,
  code: string,
  message: string,
): [string, { status: number; statusText: string; headers: Record<string, string> }] {
  const body = JSON.stringify({ errors: [{ extensions: { code }, message }] });
  return [body, { status, statusText: code, headers: { 'content-type': 'application/json; charset=utf-8', 'x-error-code': code } }];
}

function tokenOf(req: { headers: { get(key: string): string | null | undefined }; url: string }): string | null {
  return req.headers.get(TOKEN_HEADER_KEY) || new URL(req.url, 'http://load-control').searchParams.get(TOKEN_QUERY_KEY);
}

/**
 * The transport. Everything GraphQL runs through Yoga's envelop as on /graphql (document limits, root-field
 * auth, cost, input checks); a refusal is the operation's result (`next` with the error in the contract's
 * envelope, then `complete`), so a client does not retry what will never be accepted. The token was checked
 * by the HTTP layer before anything here runs.
 */
export interface EventStreamLimits {
  /** How long a stream may stay reserved and not connected. */
  reservationMs?: number;
  /** Streams reserved and not connected at once. */
  maxPendingReservations?: number;
  /** Events a client may leave unread before its stream is cut. */
  maxUnsentEvents?: number;
}

export function createEventStreams(
  log: Logger,
  {
    reservationMs = RESERVATION_MS,
    maxPendingReservations = MAX_PENDING_RESERVATIONS,
    maxUnsentEvents = MAX_UNSENT_EVENTS,
  }: EventStreamLimits = {},
): EventStreams {
  const streams = new Map<string, StreamEntry>();
  const requests = new WeakMap<object, StreamRequest>();
  let closing = false;
  let yoga: YogaServerInstance<Record<string, unknown>, GraphQLContext> | undefined;

  const pendingReservations = () => [...streams.values()].filter((s) => !s.connected).length;

  const endStream = (token: string) => {
    const entry = streams.get(token);
    if (!entry) return;
    clearTimeout(entry.expiry);
    streams.delete(token);
    entry.end?.abort();
  };

  const handler = createHandler({
    authenticate(req) {
      const token = tokenOf(req);
      if (token) {
        const entry = streams.get(token);
        if (entry && req.method === 'POST' && entry.operations >= MAX_STREAM_OPERATIONS) {
          return refusal(400, 'BAD_REQUEST', `a stream carries at most ${MAX_STREAM_OPERATIONS} operations at once`);
        }
        return token;
      }
      const fresh = randomUUID();
      if (req.method !== 'PUT') return fresh; // distinct connections mode: the token names nothing
      if (closing) return refusal(503, 'SERVICE_UNAVAILABLE', 'the server is stopping');
      if (pendingReservations() >= maxPendingReservations) {
        return refusal(503, 'SERVICE_UNAVAILABLE', 'too many event streams reserved and not connected; retry later');
      }
      const entry: StreamEntry = { operations: 0, queued: 0, sent: 0, connected: false, expiry: undefined, end: undefined };
      entry.expiry = setTimeout(() => expire(fresh), reservationMs);
      entry.expiry.unref();
      streams.set(fresh, entry);
      return fresh;
    },
    onConnect(req) {
      const token = tokenOf(req);
      const entry = token ? streams.get(token) : undefined;
      const request = requests.get(req.raw);
      if (!token || !entry || !request || entry.connected) return;
      entry.connected = true;
      clearTimeout(entry.expiry);
      entry.end = request.end;
      if (closing) queueMicrotask(() => endStream(token));
    },
    async onSubscribe(req, params) {
      const request = requests.get(req.raw)!;
      const token = tokenOf(req);
      const entry = token ? streams.get(token) : undefined;
      if (entry) entry.operations += 1;
      const enveloped = yoga!.getEnveloped({ ...request.serverContext, request: request.original, params });
      // graphql-sse takes a result for one only with a `data` key; onNext puts the errors in the envelope
      const refused = (error: unknown): ExecutionResult => ({
        data: null,
        errors: [error instanceof GraphQLError ? error : new GraphQLError(String(error), { originalError: error as Error })],
      });
      try {
        const document = enveloped.parse(params.query);
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return { data: null, errors: [...errors] };
        const contextValue = await enveloped.contextFactory();
        const args = {
          schema: enveloped.schema,
          document,
          contextValue,
          variableValues: params.variables,
          operationName: params.operationName,
        };
        const operation = getOperationAST(document, params.operationName)?.operation;
        if (operation === 'mutation' && req.method === 'GET') {
          return refused(new GraphQLError('mutations are not accepted over GET', { extensions: { code: 'BAD_REQUEST' } }));
        }
        const result = await (operation === 'subscription' ? enveloped.subscribe(args) : enveloped.execute(args));
        return Symbol.asyncIterator in result ? result : { data: null, ...result };
      } catch (error) {
        return refused(error);
      }
    },
    onNext(_ctx, req, result) {
      const token = tokenOf(req);
      const entry = token ? streams.get(token) : undefined;
      if (entry && token && ++entry.queued - entry.sent > maxUnsentEvents) {
        log.warn({ queued: entry.queued, sent: entry.sent }, 'event_stream_cut_unread');
        endStream(token);
      }
      const request = requests.get(req.raw);
      if (!request || !('errors' in result) || !result.errors?.length) return;
      return envelopedResult(result as ExecutionResult, log, requestIdOf(request.original));
    },
    onComplete(_ctx, req) {
      const token = tokenOf(req);
      const entry = token ? streams.get(token) : undefined;
      if (!entry || !token) return;
      entry.operations -= 1;
      if (closing && entry.operations <= 0) endStream(token);
    },
  });

  /** A reservation never connected: connecting it with an aborted request makes graphql-sse drop it. */
  function expire(token: string): void {
    const entry = streams.get(token);
    if (!entry || entry.connected) return;
    streams.delete(token);
    const headers = new Headers({ accept: 'text/event-stream', [TOKEN_HEADER_KEY]: token });
    const stub = {
      method: 'GET',
      url: `http://load-control${EVENT_STREAM_PATH}`,
      headers,
      text: async () => '',
      signal: AbortSignal.abort(),
    };
    handler(stub as unknown as Request).then(
      (response) => response.body?.cancel(),
      (error: unknown) => log.warn({ err: error }, 'event_stream_expiry_failed'),
    );
  }

  /** A single-connection stream's response, which forgets the stream when it ends or its client goes away. */
  function untilGone(response: Response, request: StreamRequest): Response {
    const token = tokenOf(request);
    if (!token || streams.get(token)?.end !== request.end || !response.body) return response;
    const reader = response.body.getReader();
    const entry = streams.get(token)!;
    const gone = () => {
      if (streams.get(token)?.end === request.end) endStream(token);
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          gone();
          controller.close();
          return;
        }
        // graphql-sse enqueues one message per chunk: pings are comments (':'), events 'event: next' or 'complete'
        if (value[0] === EVENT_LINE && value[7] === NEXT_EVENT) entry.sent += 1;
        controller.enqueue(value);
      },
      cancel(reason) {
        gone();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  }

  const plugin: Plugin = {
    onYogaInit({ yoga: instance }) {
      yoga = instance as unknown as YogaServerInstance<Record<string, unknown>, GraphQLContext>;
    },
    onRequest({ request, serverContext, endResponse }) {
      if (new URL(request.url).pathname !== EVENT_STREAM_PATH) return;
      const end = new AbortController();
      // the client going away ends the stream too; the request's signal is @whatwg-node/server's own class, which
      // Node 24's AbortSignal.any refuses (not an AbortSignal to WebIDL), so its abort is forwarded by a listener
      const requestSignal = request.signal;
      if (requestSignal.aborted) end.abort(requestSignal.reason);
      else requestSignal.addEventListener('abort', () => end.abort(requestSignal.reason), { once: true });
      const streamRequest: StreamRequest = {
        method: request.method,
        url: request.url,
        headers: request.headers,
        text: () => request.text(),
        signal: end.signal,
        original: request,
        serverContext: serverContext as Record<string, unknown>,
        end,
      };
      requests.set(streamRequest, streamRequest);
      return handler(streamRequest as unknown as Request).then(
        (response) => endResponse(untilGone(response, streamRequest)),
        (error: unknown) => {
          log.error({ err: error }, 'event_stream_failed');
          endResponse(new Response(...refusal(500, 'INTERNAL', 'Internal server error')));
        },
      );
    },
  };

  return {
    plugin,
    streamCount: () => streams.size,
    close() {
      closing = true;
      for (const [token, entry] of streams) {
        if (!entry.connected || entry.operations <= 0) endStream(token);
      }
      setTimeout(() => {
        for (const token of [...streams.keys()]) endStream(token);
      }, END_GRACE_MS).unref();
    },
  };
}
