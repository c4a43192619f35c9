// A client span per SQL statement a traced request (or dispatch) runs, whether sent by Prisma's pg adapter or
// by the hot paths on the pool directly: both go through our pg client class (client.ts).
import { type Context, context, type Span, SpanKind, trace } from '@opentelemetry/api';
import {
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_TEXT,
  ATTR_DB_RESPONSE_STATUS_CODE,
  ATTR_DB_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '@opentelemetry/semantic-conventions';
import { activeTracer, failSpan } from '../tracing/tracing.js';

/** Statement text kept on a span; the rest is cut (a reportChunks batch's text is long). */
const MAX_STATEMENT_TEXT = 2000;

/**
 * The statement as recorded: values are sent apart ($1, $2…), and the literals written into a statement's text
 * are replaced by `?` as well, then it is cut at MAX_STATEMENT_TEXT.
 */
export function statementText(text: string): string {
  const literalFree = text.replace(/'(?:[^']|'')*(?:'|$)/g, "'?'");
  return literalFree.length <= MAX_STATEMENT_TEXT ? literalFree : `${literalFree.slice(0, MAX_STATEMENT_TEXT)}…`;
}

interface Connection {
  database?: string | undefined;
  host: string;
  port: number;
}

/**
 * The span of a statement about to be sent on `connection`, or null: without tracing, and for statements no
 * traced work asked for (the sweeper's, the heartbeat's, the dispatcher's polls), which would each start a trace
 * of one span.
 */
export function startStatementSpan(connection: Connection, statement: unknown): Span | null {
  const tracer = activeTracer();
  if (!tracer || !trace.getSpan(context.active())?.isRecording()) return null;
  const text = typeof statement === 'string' ? statement : (statement as { text?: unknown } | null)?.text;
  if (typeof text !== 'string') return null;
  const operation = /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
  return tracer.startSpan(operation, {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR_DB_SYSTEM_NAME]: 'postgresql',
      [ATTR_DB_OPERATION_NAME]: operation,
      [ATTR_DB_QUERY_TEXT]: statementText(text),
      ...(connection.database ? { [ATTR_DB_NAMESPACE]: connection.database } : {}),
      [ATTR_SERVER_ADDRESS]: connection.host,
      [ATTR_SERVER_PORT]: connection.port,
    },
  });
}

/** Ends a statement's span: its row count, or its SQLSTATE (or the client's error) as the failure. */
export function endStatementSpan(span: Span, error: unknown, result: unknown): void {
  if (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') span.setAttribute(ATTR_DB_RESPONSE_STATUS_CODE, code);
    failSpan(span, typeof code === 'string' ? code : 'CLIENT_ERROR', error instanceof Error ? error.message : String(error));
  } else {
    const rows = (result as { rowCount?: unknown } | undefined)?.rowCount;
    if (typeof rows === 'number') span.setAttribute('db.response.returned_rows', rows);
  }
  span.end();
}

/**
 * pg's pool hands a connection to the caller waiting longest through a callback run in the releasing caller's
 * context; pool.query's statement would be a child of someone else's request. Bound to the caller's context, it
 * is not.
 */
export function inCallersContext<F extends (...args: never[]) => unknown>(callback: F): F {
  if (!activeTracer()) return callback;
  const callers: Context = context.active();
  return context.bind(callers, callback);
}
