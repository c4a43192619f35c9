import { setTimeout as sleep } from 'node:timers/promises';
import { AggregatorRegistry } from 'prom-client';
import type { Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import { checkDatabase } from '../db/health.js';
import type { Realtime } from '../realtime/realtime.js';
import { createJwtVerifier } from '../auth/jwt.js';
import { loadStaticTokens } from '../auth/static-tokens.js';
import { createAuthenticator } from './auth.js';
import { createConsoleHandler } from './console.js';
import { answerWithoutSignIn, createSignIn } from './sign-in.js';
import { createEventStreams, EVENT_STREAM_PATH, type EventStreamLimits, type EventStreams } from './event-streams.js';
import type { ExecutionLane } from './execution-lane.js';
import { createGraphQLEndpoint, sendJson } from './graphql-endpoint.js';
import { createGraphQLServer } from './graphql-server.js';
import type { Logger } from '../logging/logger.js';
import type { ApiMetrics } from './metrics.js';
import { inRequestSpan } from './request-span.js';
import { createHttpServer, type HttpServer } from '../http/tls.js';
import { drainable, type OpenRequest } from '../http/drainable.js';

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
  /** Execution threads for queries and large bodies (server.executionThreads); without, all runs here. */
  lane?: ExecutionLane;
  /** Bounds of /graphql/stream's reservations (tests shorten them). */
  eventStreamLimits?: EventStreamLimits;
  /** Where `start` keeps the development tokens it made (embedded database only): the sign-in page says so. */
  devTokensFile?: string | null;
}

export interface ApiServer {
  server: HttpServer['server'];
  /** https with server.tls */
  protocol: HttpServer['protocol'];
  /** Re-reads server.tls's files (SIGHUP); a file that will not do is logged and the old ones stay. */
  reloadTls(): boolean;
  /** Re-reads auth.tokensFile (SIGHUP; a change to the file is noticed without it); a file that will not do is logged. */
  reloadTokens(): boolean;
  listen(port: number, host: string): Promise<{ port: number }>;
  /**
   * /readyz turns 503 at once; everything else is served as before for `delayMs` (server.shutdownDelay), so that a
   * load balancer takes the server out of rotation while it still listens; then as DrainableServer.drain.
   */
  drain(delayMs?: number): Promise<void>;
  /** The requests not yet answered. */
  open(): OpenRequest[];
  /** Cuts every connection off, open requests too. */
  close(): Promise<void>;
  /** /graphql/stream's single-connection streams (none without realtime). */
  eventStreams: EventStreams | null;
}

export function createApiServer(options: ApiServerOptions): ApiServer {
  const { config, db, log, metrics } = options;
  const tokens = loadStaticTokens(config.auth, log);
  const { oidc } = config.auth;
  const signIn =
    oidc?.clientId && oidc.publicUrl
      ? createSignIn({ ...oidc, clientId: oidc.clientId, publicUrl: oidc.publicUrl }, db, log, options.devTokensFile ?? null)
      : null;
  const authenticate = createAuthenticator(tokens, { verifyJwt: oidc && createJwtVerifier(oidc), session: signIn?.authenticate ?? null });
  const serveConsole = createConsoleHandler(options.consoleDir);
  const readinessChecks = [...(options.readinessChecks ?? []), ...(options.realtime ? [options.realtime.listening] : [])];

  const eventStreams = options.realtime ? createEventStreams(log, options.eventStreamLimits) : null;
  const yoga = createGraphQLServer({
    config,
    db,
    log,
    metrics,
    realtime: options.realtime ?? null,
    eventStreams: eventStreams ?? undefined,
  });
  const lane = options.lane ?? null;
  const graphqlEndpoint = createGraphQLEndpoint(yoga, authenticate, { lane });

  let stopping = false;
  async function ready(): Promise<boolean> {
    if (stopping || (lane && !lane.ready())) return false;
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

  /** The main thread's metrics with the execution threads' added up (their requests, chunk reports). */
  async function metricsText(): Promise<string> {
    if (!lane) return metrics.registry.metrics();
    const all = [await metrics.registry.getMetricsAsJSON(), ...(await lane.metrics())];
    return AggregatorRegistry.aggregate(all).metrics();
  }

  const {
    server,
    protocol,
    reload: reloadTls,
  } = createHttpServer(config.server.tls, log, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/graphql' || path === EVENT_STREAM_PATH) return inRequestSpan(req, res, protocol, () => graphqlEndpoint(req, res));
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (
      path?.startsWith('/auth/') &&
      (signIn ? signIn.handle(req, res, path) : answerWithoutSignIn(req, res, path, options.devTokensFile ?? null))
    )
      return;
    if (path === '/readyz') {
      void ready().then((ok) => sendJson(res, ok ? 200 : 503, { status: ok ? 'ok' : 'unavailable' }, ok ? {} : { 'Retry-After': '1' }));
      return;
    }
    if (path === '/metrics') {
      void metricsText().then((text) => {
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
    reloadTokens: () => tokens.reload(),
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const address = server.address();
          resolve({ port: typeof address === 'object' && address ? address.port : port });
        });
      });
    },
    async drain(delayMs = 0) {
      stopping = true;
      await sleep(delayMs);
      // single-connection streams end once their operations completed (realtime.endSubscriptions)
      eventStreams?.close();
      return lifecycle.drain();
    },
    open: () => lifecycle.open(),
    eventStreams,
    close() {
      tokens.close();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
