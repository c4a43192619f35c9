// The server span of one /graphql request: the root of the request's trace, or the child of the caller's
// span when it sent a valid traceparent.
import type http from 'node:http';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import { activeTracer, contextFromHeaders, failSpan, LC_ATTRIBUTES } from '../tracing/tracing.js';

const KNOWN_METHODS = new Set(['GET', 'POST', 'OPTIONS', 'HEAD', 'PUT', 'DELETE', 'PATCH']);

type WriteHeadArgs = [status: number, ...rest: unknown[]];

/** A header among writeHead's arguments: its headers come as an object or as a flat [name, value, …] list. */
function headerInWriteHead(args: unknown[], name: string): string | undefined {
  const headers = args.at(-1);
  if (Array.isArray(headers)) {
    const at = headers.findIndex((value, i) => i % 2 === 0 && String(value).toLowerCase() === name);
    return at < 0 ? undefined : String(headers[at + 1]);
  }
  if (headers && typeof headers === 'object') {
    const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
    return entry === undefined ? undefined : String(entry[1]);
  }
  return undefined;
}

/**
 * Runs handle inside a server span for the request, ended when the response closes. The span keeps the
 * status, the request id and the contract's error code (X-Error-Code); 5xx marks it failed, 4xx does not (the
 * server did its job), but carries the code as error.type.
 */
export function inRequestSpan(req: http.IncomingMessage, res: http.ServerResponse, scheme: string, handle: () => void): void {
  const tracer = activeTracer();
  // a subscription's stream lives for hours: neither it nor its events are traced
  if (!tracer || req.headers.accept?.includes('text/event-stream')) {
    handle();
    return;
  }
  const method = req.method && KNOWN_METHODS.has(req.method) ? req.method : '_OTHER';
  const parent = contextFromHeaders(req.headers);
  const span = tracer.startSpan(
    `${method} /graphql`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        [ATTR_HTTP_ROUTE]: '/graphql',
        [ATTR_URL_PATH]: '/graphql',
        [ATTR_URL_SCHEME]: scheme,
        [ATTR_CLIENT_ADDRESS]: req.socket.remoteAddress ?? '',
      },
    },
    parent,
  );
  let errorCode: string | undefined;
  let requestId: string | undefined;
  const writeHead = res.writeHead;
  res.writeHead = function (this: http.ServerResponse, ...args: WriteHeadArgs) {
    errorCode = String(res.getHeader('x-error-code') ?? headerInWriteHead(args, 'x-error-code') ?? '') || undefined;
    requestId = String(res.getHeader('x-request-id') ?? headerInWriteHead(args, 'x-request-id') ?? '') || undefined;
    return (writeHead as (...a: WriteHeadArgs) => http.ServerResponse).apply(this, args);
  } as typeof res.writeHead;
  res.once('close', () => {
    if (res.headersSent) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.statusCode);
    if (requestId) span.setAttribute(LC_ATTRIBUTES.requestId, requestId);
    if (errorCode) span.setAttribute(LC_ATTRIBUTES.errorCode, errorCode);
    if (res.headersSent && res.statusCode >= 500) failSpan(span, errorCode ?? String(res.statusCode));
    else if (!res.writableFinished)
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the connection closed before the answer was sent' });
    else if (errorCode) span.setAttribute(ATTR_ERROR_TYPE, errorCode);
    span.end();
  });
  context.with(trace.setSpan(parent, span), handle);
}
