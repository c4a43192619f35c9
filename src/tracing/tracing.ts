// OpenTelemetry tracing (config `tracing`): spans for each /graphql request, its GraphQL operation, the SQL
// statements it runs and each call the dispatcher makes, exported over OTLP/HTTP (JSON) in batches. Without
// tracing.endpoint the SDK is never imported, and every hook below costs one null check.
import { readFileSync } from 'node:fs';
import {
  type Context,
  context,
  type DiagLogger,
  DiagLogLevel,
  diag,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type TextMapGetter,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Our attributes' names, beside OpenTelemetry's semantic conventions. */
export const LC_ATTRIBUTES = {
  runId: 'lc.run_id',
  partitionId: 'lc.partition_id',
  jobKey: 'lc.job_key',
  dispatchId: 'lc.dispatch_id',
  dispatchType: 'lc.dispatch.type',
  dispatchAttempt: 'lc.dispatch.attempt',
  dispatchBatchSize: 'lc.dispatch.batch_size',
  alertReceiver: 'lc.alert.receiver',
  requestId: 'lc.request_id',
  errorCode: 'lc.error_code',
} as const;

/**
 * A longer traceparent or tracestate is ignored: a valid traceparent of version 00 has 55 characters, and W3C
 * caps a tracestate at 512.
 */
const MAX_TRACE_HEADER = 512;

/** The spans' one tracer while tracing runs in this process (or execution thread), else null. */
let tracer: Tracer | null = null;

export function activeTracer(): Tracer | null {
  return tracer;
}

export interface Tracing {
  /** Exports the spans ended so far. */
  flush(): Promise<void>;
  /** Exports what is left and stops making spans. */
  shutdown(): Promise<void>;
}

/** The exporter's own troubles (a collector that does not answer) as log lines, not on stderr. */
function diagnosticsTo(log: Logger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) =>
    log.warn({ detail: [message, ...args.map(String)].join(' ') }, 'tracing_diagnostic');
  const ignore = () => undefined;
  return { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
}

/**
 * Starts tracing when tracing.endpoint is set: loads the SDK, registers it for this process (or execution
 * thread) and returns how to flush and stop it; null, having loaded nothing, without an endpoint.
 */
export async function startTracing(settings: Config['tracing'], options: { role: string; log: Logger }): Promise<Tracing | null> {
  if (!settings.endpoint) return null;
  const [sdk, { OTLPTraceExporter }, { defaultResource, resourceFromAttributes }, { W3CTraceContextPropagator }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  diag.setLogger(diagnosticsTo(options.log), DiagLogLevel.WARN);
  const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: settings.headers, timeoutMillis: 10_000 });
  const provider = new sdk.NodeTracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: settings.serviceName,
        [ATTR_SERVICE_VERSION]: VERSION,
        'process.pid': process.pid,
        'lc.process.role': options.role,
      }),
    ),
    // a caller's sampled traceparent is followed; the ratio decides the traces that start here
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanLimits: { attributeValueLengthLimit: 2048, attributeCountLimit: 64, eventCountLimit: 16, linkCountLimit: 64 },
    // at most 2,048 spans wait for export: beyond, new ones are dropped rather than memory growing
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 2000 })],
  });
  // W3C trace context only, whatever OTEL_PROPAGATORS says: traceparent is what we read and send
  provider.register({ propagator: new W3CTraceContextPropagator() });
  tracer = provider.getTracer('load-control', VERSION);
  options.log.info({ endpoint: new URL(settings.endpoint).origin, sampleRatio: settings.sampleRatio }, 'tracing_started');
  let stopped: Promise<void> | undefined;
  return {
    flush: () => provider.forceFlush(),
    shutdown() {
      stopped ??= (async () => {
        tracer = null;
        await provider.shutdown();
        trace.disable();
        context.disable();
        propagation.disable();
        diag.disable();
      })();
      return stopped;
    },
  };
}

const traceHeaders: TextMapGetter<Record<string, string | string[] | undefined>> = {
  keys: () => ['traceparent', 'tracestate'],
  get(carrier, key) {
    const value = carrier[key];
    // a repeated header is not one trace context (W3C: ignore it), nor is an overlong one
    return typeof value === 'string' && value.length <= MAX_TRACE_HEADER ? value : undefined;
  },
};

/**
 * The trace context a caller sent in its traceparent/tracestate headers (node's lower-cased header names);
 * a missing, malformed, repeated or overlong one gives the root context: the request starts a new trace.
 */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers, traceHeaders);
}

/** The current span's context as a traceparent header (for a receiver, or an execution thread), if traced. */
export function currentTraceparent(): string | undefined {
  if (!tracer) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** Runs fn in the trace context a traceparent names (one the main thread passed to an execution thread). */
export function inTraceparent<T>(traceparent: string | undefined, fn: () => T): T {
  if (!tracer || traceparent === undefined) return fn();
  return context.with(contextFromHeaders({ traceparent }), fn);
}

/** The active context, to resume later in work that another caller's turn runs (a group commit); undefined when off. */
export function captureContext(): Context | undefined {
  return tracer ? context.active() : undefined;
}

export function inContext<T>(captured: Context | undefined, fn: () => T): T {
  return captured === undefined ? fn() : context.with(captured, fn);
}

/** Does nothing: what inSpan hands fn when tracing is off or the trace is not sampled. */
const UNTRACED: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Marks a span failed with the error code that says why (a contract code, an SQLSTATE, an HTTP status). */
export function failSpan(span: Span, code: string, message?: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ? `${code}: ${message}` : code });
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'Error';
}

/**
 * Runs fn in a new span, active for all fn awaits, ended when fn settles; a throw marks it failed with the
 * error's code. Without tracing, fn runs as is and gets a span that records nothing (and options, when a
 * function, are never made).
 */
export async function inSpan<T>(name: string, options: SpanOptions | (() => SpanOptions), fn: (span: Span) => Promise<T>): Promise<T> {
  if (!tracer) return fn(UNTRACED);
  const span = tracer.startSpan(name, typeof options === 'function' ? options() : options);
  try {
    return await context.with(trace.setSpan(context.active(), span), () => fn(span));
  } catch (error) {
    if (error instanceof Error) span.recordException(error);
    failSpan(span, errorCode(error), error instanceof Error ? error.message : undefined);
    throw error;
  } finally {
    span.end();
  }
}
