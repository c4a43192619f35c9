import http from 'node:http';
import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { maxTokensPlugin } from '@escape.tech/graphql-armor-max-tokens';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { getOperationAST, type OperationDefinitionNode } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import type { Config } from '../config/config.js';
import { createChunkReporter } from '../db/chunk-reporter.js';
import type { Db } from '../db/client.js';
import { checkDatabase } from '../db/health.js';
import type { Actor, GraphQLContext } from '../graphql/builder.js';
import { buildSchema } from '../graphql/schema.js';
import type { Realtime } from '../realtime/realtime.js';
import { createAuthenticator, useRootFieldAuth } from './auth.js';
import { createConsoleHandler } from './console.js';
import { useErrorEnvelope, useUnsupportedMediaType } from './error-envelope.js';
import type { Logger } from './logger.js';
import type { ApiMetrics } from './metrics.js';
import { DOCUMENT_LIMITS, useNestingLimitedParse } from './operation-shape.js';
import { useQueryCost } from './query-cost.js';
import { useStorableInputs } from './storable-inputs.js';
import { requestIdFrom, requestIdOf, useRequestId } from './request-id.js';
import type { Services } from './services.js';
import { createHttpServer, type HttpServer } from './tls.js';
import { drainable, type OpenRequest } from './shutdown.js';

export interface ApiServerOptions {
  config: Config;
  db: Db;
  log: Logger;
  metrics: ApiMetrics;
  /** Extra readiness checks (e.g. the LISTEN connection); the database is always checked. */
  readinessChecks?: Array<() => boolean | Promise<boolean>>;
  /** The process's realtime (LISTEN connection and feeds) for subscriptions; its connection is part of /readyz. */
  realtime?: Realtime;
  /** The built console (default web/dist). */
  consoleDir?: string;
}

export interface ApiServer {
  server: HttpServer['server'];
  /** https with server.tls */
  protocol: HttpServer['protocol'];
  /** Re-reads server.tls's files (SIGHUP); a file that will not do is logged and the old ones stay. */
  reloadTls(): boolean;
  listen(port: number, host: string): Promise<{ port: number }>;
  /** /readyz turns 503 at once; then as DrainableServer.drain. */
  drain(): Promise<void>;
  /** The requests not yet answered. */
  open(): OpenRequest[];
  /** Cuts every connection off, open requests too. */
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

function rootField(operation: OperationDefinitionNode | null | undefined): string {
  const first = operation?.selectionSet.selections[0];
  return first?.kind === 'Field' ? first.name.value : 'unknown';
}

interface RequestFacts {
  operation: string;
  runId?: unknown;
  partitionId?: unknown;
}

/** One access-log line and the request metrics per GraphQL request (2xx at debug: the hot paths are hot). */
function useAccessLog(metrics: ApiMetrics, log: Logger): Plugin {
  const facts = new WeakMap<Request, RequestFacts>();
  const started = new WeakMap<Request, number>();
  return {
    onRequest({ request }) {
      started.set(request, performance.now());
    },
    onValidate({ params, context }) {
      const ctx = context as { request: Request; params?: { operationName?: string; variables?: Record<string, unknown> } };
      const variables = ctx.params?.variables ?? {};
      const input = (variables.input ?? variables) as Record<string, unknown>;
      facts.set(ctx.request, {
        operation: rootField(getOperationAST(params.documentAST, ctx.params?.operationName)),
        runId: input?.runId,
        partitionId: input?.partitionId,
      });
    },
    onResponse({ request, response }) {
      const fact = facts.get(request) ?? { operation: 'none' };
      const seconds = (performance.now() - (started.get(request) ?? performance.now())) / 1000;
      metrics.requests.inc({ operation: fact.operation, status: String(response.status) });
      metrics.requestSeconds.observe({ operation: fact.operation }, seconds);
      const level = response.status >= 500 ? 'error' : response.status >= 400 ? 'info' : 'debug';
      log[level]({
        requestId: requestIdOf(request),
        operation: fact.operation,
        runId: fact.runId,
        partitionId: fact.partitionId,
        httpStatus: response.status,
        errorCode: response.headers.get('x-error-code') ?? undefined,
        durationMs: Math.round(seconds * 1000),
      }, 'api_response');
    },
  };
}

/**
 * graphql-tools' subscribe() relabels every variable-coercion error BAD_USER_INPUT; ours carry the
 * scalars' details {field, reason} and are INVALID_INPUT (422), as in queries and mutations.
 */
function useSubscriptionInputErrors(): Plugin {
  return {
    onSubscribe: () => ({
      onSubscribeResult({ result }) {
        if (!('errors' in result)) return;
        for (const error of result.errors ?? []) {
          const extensions = error.extensions as Record<string, unknown> | undefined;
          const details = extensions?.details as { field?: unknown; reason?: unknown } | undefined;
          if (extensions?.code === 'BAD_USER_INPUT' && details?.field && details.reason) extensions.code = 'INVALID_INPUT';
        }
      },
    }),
  };
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

function sendPayloadTooLarge(res: http.ServerResponse): void {
  // the rest of the body is not read: the connection cannot carry another request
  sendJson(res, 413, { code: 'PAYLOAD_TOO_LARGE', message: `request bodies are limited to ${MAX_BODY_BYTES} bytes` }, { Connection: 'close' });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * 401 from the headers alone: the body is never read or parsed. A request that has one gets
 * `Connection: close`, so Node discards the rest with the connection instead of reading it to reuse it.
 */
function sendUnauthenticated(req: http.IncomingMessage, res: http.ServerResponse): void {
  const incoming = req.headers['x-request-id'];
  const requestId = requestIdFrom(Array.isArray(incoming) ? incoming[0] : incoming);
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  sendJson(res, 401, { errors: [{ message: 'Unauthorized', extensions: { code: 'UNAUTHENTICATED', requestId } }] }, {
    'WWW-Authenticate': 'Bearer',
    'X-Error-Code': 'UNAUTHENTICATED',
    'X-Request-Id': requestId,
    ...(hasBody ? { Connection: 'close' } : {}),
  });
}

/** Yoga's own rule for rendering GraphiQL (a browser's GET); the page holds no data and needs no token. */
function asksForGraphiQL(req: http.IncomingMessage): boolean {
  return req.method === 'GET' && (req.headers.accept ?? '').includes('text/html');
}

export function createApiServer(options: ApiServerOptions): ApiServer {
  const { config, db, log, metrics } = options;
  const authenticate = createAuthenticator(config.auth.tokens);
  const chunkReporter = createChunkReporter(db, { onBatch: (size) => metrics.chunkReportBatchSize.observe(size) });
  const services: Services = { db, config, metrics, chunkReporter, realtime: options.realtime ?? null };
  const serveConsole = createConsoleHandler(options.consoleDir);
  const readinessChecks = [...(options.readinessChecks ?? []), ...(options.realtime ? [options.realtime.listening] : [])];

  const yoga = createYoga<Record<string, unknown>, GraphQLContext>({
    schema: buildSchema(),
    graphqlEndpoint: '/graphql',
    // bodies are read and limited before Yoga sees them (readBody)
    maxRequestBodySize: false,
    landingPage: false,
    maskedErrors: false,
    logging: false,
    graphiql: { title: 'Load Control', defaultQuery: '{ runs(first: 10) { nodes { runId jobKey businessKey status } } }' },
    renderGraphiQL,
    // the HTTP layer authenticated the request before reading its body and passes the actor in
    context: ({ request, actor }: { request: Request; actor?: Actor | null }) => ({ actor: actor ?? null, requestId: requestIdOf(request), services }),
    cors: config.server.corsOrigins.length > 0
      ? { origin: config.server.corsOrigins, credentials: false, allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'] }
      : false,
    plugins: [
      useRequestId(),
      useAccessLog(metrics, log),
      maxTokensPlugin({ n: DOCUMENT_LIMITS.tokens }),
      useNestingLimitedParse(),
      // introspection counts too: GraphiQL's own introspection query is 13 levels deep
      maxDepthPlugin({ n: DOCUMENT_LIMITS.depth, ignoreIntrospection: false, flattenFragments: true }),
      maxAliasesPlugin({ n: DOCUMENT_LIMITS.aliases }),
      useRootFieldAuth(),
      useQueryCost(),
      useStorableInputs(),
      useSubscriptionInputErrors(),
      useErrorEnvelope(log),
      useUnsupportedMediaType(),
    ],
  });

  async function ready(): Promise<boolean> {
    if (lifecycle.draining) return false;
    const database = await checkDatabase(db.pool);
    if (!database.ok) {
      log.warn({ reason: database.reason }, 'readyz_database_not_ready');
      return false;
    }
    try {
      for (const check of readinessChecks) if (!(await check())) return false;
      return true;
    } catch (error) {
      log.warn({ err: error }, 'readyz_failed');
      return false;
    }
  }

  const { server, protocol, reload: reloadTls } = createHttpServer(config.server.tls, log, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/graphql') {
      // CORS preflights carry no credentials by design; Yoga answers them from server.corsOrigins
      if (req.method === 'OPTIONS' || asksForGraphiQL(req)) {
        void yoga.handle(req, res, { actor: null });
        return;
      }
      const actor = authenticate(req.headers.authorization ?? null);
      if (!actor) return sendUnauthenticated(req, res);
      if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return sendPayloadTooLarge(res);
      if (req.method !== 'POST') {
        void yoga.handle(req, res, { actor });
        return;
      }
      readBody(req).then(
        (body) => {
          if (body === 'too large') return sendPayloadTooLarge(res);
          void yoga.handle(Object.assign(req, { body }), res, { actor });
        },
        () => res.destroy(),
      );
      return;
    }
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      void ready().then((ok) => sendJson(res, ok ? 200 : 503, { status: ok ? 'ok' : 'unavailable' }, ok ? {} : { 'Retry-After': '1' }));
      return;
    }
    if (path === '/metrics') {
      void metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
        res.end(text);
      });
      return;
    }
    void serveConsole(req, res, path ?? '/').then((served) => {
      if (!served) sendJson(res, 404, { code: 'NOT_FOUND', message: 'Not Found' });
    });
  });
  const lifecycle = drainable(server);

  return {
    server,
    protocol,
    reloadTls,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const address = server.address();
          resolve({ port: typeof address === 'object' && address ? address.port : port });
        });
      });
    },
    drain: () => lifecycle.drain(),
    open: () => lifecycle.open(),
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
