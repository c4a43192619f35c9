// The GraphQL server itself (Yoga with its plugins) over a process's or a thread's services: built once on the
// main thread (mutations, subscriptions) and once in each execution thread (queries, large bodies).
import { getOperationAST } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Config } from '../config/config.js';
import { createChunkReporter } from '../domain/chunks/chunk-reporter.js';
import type { Db } from '../db/client.js';
import type { Actor, GraphQLContext } from '../graphql/builder.js';
import { buildSchema } from '../graphql/schema.js';
import type { Realtime } from '../realtime/realtime.js';
import { useRootFieldAuth } from './auth.js';
import { useBooleanStrings } from './boolean-strings.js';
import { useErrorEnvelope, useUnsupportedMediaType } from './error-envelope.js';
import type { EventStreams } from './event-streams.js';
import type { Logger } from '../logging/logger.js';
import type { ApiMetrics } from './metrics.js';
import { useDocumentLimits } from './operation-shape.js';
import { rootField, useOperationSpans } from './operation-span.js';
import { useQueryCost } from './query-cost.js';
import { requestIdOf, useRequestId } from './request-id.js';
import type { Services } from '../graphql/services.js';
import { useStorableInputs } from './storable-inputs.js';

interface RequestFacts {
  operation: string;
  runId?: unknown;
  partitionId?: unknown;
}

/** `text` cut to `max` characters, saying how many were left out. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}...(+${text.length - max} chars)`;
}

/**
 * One access-log line and the request metrics per GraphQL request: 2xx at debug (the hot paths are hot), unless
 * logging.requests asks for every request at info with its bodies, cut at logging.bodyMax.
 */
function useAccessLog(metrics: ApiMetrics, log: Logger, logging: Config['logging']): Plugin {
  const facts = new WeakMap<Request, RequestFacts>();
  const started = new WeakMap<Request, number>();
  const bodies = new WeakMap<Request, { requestBody?: string; responseBody?: string }>();
  return {
    onRequest({ request }) {
      started.set(request, performance.now());
    },
    onParams({ request, params }) {
      if (logging.requests) bodies.set(request, { requestBody: clip(JSON.stringify(params), logging.bodyMax) });
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
    onResultProcess({ request, result }) {
      // a subscription's result is a stream: its events are not logged
      if (!logging.requests || Symbol.asyncIterator in result) return;
      const logged = bodies.get(request) ?? {};
      logged.responseBody = clip(JSON.stringify(result), logging.bodyMax);
      bodies.set(request, logged);
    },
    onResponse({ request, response }) {
      const fact = facts.get(request) ?? { operation: 'none' };
      const seconds = (performance.now() - (started.get(request) ?? performance.now())) / 1000;
      metrics.requests.inc({ operation: fact.operation, status: String(response.status) });
      metrics.requestSeconds.observe({ operation: fact.operation }, seconds);
      const level = response.status >= 500 ? 'error' : response.status >= 400 || logging.requests ? 'info' : 'debug';
      log[level](
        {
          requestId: requestIdOf(request),
          operation: fact.operation,
          runId: fact.runId,
          partitionId: fact.partitionId,
          httpStatus: response.status,
          errorCode: response.headers.get('x-error-code') ?? undefined,
          durationMs: Math.round(seconds * 1000),
          ...bodies.get(request),
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

export type GraphQLServer = YogaServerInstance<Record<string, unknown>, GraphQLContext>;

export interface GraphQLServerOptions {
  config: Config;
  db: Db;
  log: Logger;
  metrics: ApiMetrics;
  /** Subscriptions' feeds; null where no subscription is served (an execution thread). */
  realtime: Realtime | null;
  /** GraphQL over SSE on /graphql/stream (single connection mode), where subscriptions are served. */
  eventStreams?: EventStreams;
}

export function createGraphQLServer({ config, db, log, metrics, realtime, eventStreams }: GraphQLServerOptions): GraphQLServer {
  const chunkReporter = createChunkReporter(db, { onBatch: (size) => metrics.chunkReportBatchSize.observe(size) });
  const services: Services = { db, config, metrics, chunkReporter, realtime };
  return createYoga<Record<string, unknown>, GraphQLContext>({
    schema: buildSchema(),
    graphqlEndpoint: '/graphql',
    // bodies are read and limited before Yoga sees them (readBody)
    maxRequestBodySize: false,
    landingPage: false,
    maskedErrors: false,
    logging: false,
    // the HTTP layer serves GraphiQL's page, compressed (src/server/graphiql.ts)
    graphiql: false,
    // the HTTP layer authenticated the request before reading its body and passes the actor in
    context: ({ request, actor }: { request: Request; actor?: Actor | null }) => ({
      actor: actor ?? null,
      requestId: requestIdOf(request),
      services,
    }),
    cors:
      config.server.corsOrigins.length > 0
        ? {
            origin: config.server.corsOrigins,
            credentials: false,
            allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'X-GraphQL-Event-Stream-Token'],
          }
        : false,
    plugins: [
      useRequestId(),
      useAccessLog(metrics, log, config.logging),
      useOperationSpans(),
      ...useDocumentLimits(),
      useRootFieldAuth(),
      useQueryCost(),
      useStorableInputs(),
      useBooleanStrings(),
      useSubscriptionInputErrors(),
      useErrorEnvelope(log),
      useUnsupportedMediaType(),
      ...(eventStreams ? [eventStreams.plugin] : []),
    ],
  });
}
