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
import { useBooleanStrings } from './boolean-strings.js';
import { createConsoleHandler } from './console.js';
import { useErrorEnvelope, useUnsupportedMediaType } from './error-envelope.js';
import { createGraphQLEndpoint, sendJson } from './graphql-endpoint.js';
import type { Logger } from './logger.js';
import type { ApiMetrics } from './metrics.js';
import { useDocumentLimits } from './operation-shape.js';
import { useQueryCost } from './query-cost.js';
import { useStorableInputs } from './storable-inputs.js';
import { requestIdOf, useRequestId } from './request-id.js';
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
      log[level](
        {
          requestId: requestIdOf(request),
          operation: fact.operation,
          runId: fact.runId,
          partitionId: fact.partitionId,
          httpStatus: response.status,
          errorCode: response.headers.get('x-error-code') ?? undefined,
          durationMs: Math.round(seconds * 1000),
        },
        'api_response',
      );
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
    context: ({ request, actor }: { request: Request; actor?: Actor | null }) => ({
      actor: actor ?? null,
      requestId: requestIdOf(request),
      services,
    }),
    cors:
      config.server.corsOrigins.length > 0
        ? { origin: config.server.corsOrigins, credentials: false, allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'] }
        : false,
    plugins: [
      useRequestId(),
      useAccessLog(metrics, log),
      ...useDocumentLimits(),
      useRootFieldAuth(),
      useQueryCost(),
      useStorableInputs(),
      useBooleanStrings(),
      useSubscriptionInputErrors(),
      useErrorEnvelope(log),
      useUnsupportedMediaType(),
    ],
  });

  const graphqlEndpoint = createGraphQLEndpoint(yoga, authenticate);

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

  const {
    server,
    protocol,
    reload: reloadTls,
  } = createHttpServer(config.server.tls, log, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/graphql') return graphqlEndpoint(req, res);
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
