import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/errors.js';
import { DomainError, ERROR_HTTP_STATUS, type ErrorCode } from '../contract/errors.js';
import { requestIdOf } from './request-id.js';

interface Envelope {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  status: number;
  /** An error none of ours: logged, and answered INTERNAL. */
  unexpected?: Error;
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code in ERROR_HTTP_STATUS;
}

/** One mapping from any error to the contract's envelope: code, HTTP status, masked internals. */
function envelopeOf(error: GraphQLError): Envelope {
  const original = error.originalError;
  if (original instanceof DomainError) {
    return { code: original.code, message: original.message, details: original.details, status: original.httpStatus };
  }
  const code = error.extensions?.code;
  if (isErrorCode(code)) {
    const details = error.extensions.details as Record<string, unknown> | undefined;
    return { code, message: error.message, details, status: ERROR_HTTP_STATUS[code] };
  }
  if (original && !(original instanceof GraphQLError)) {
    if (isDatabaseUnavailable(original)) {
      return { code: 'SERVICE_UNAVAILABLE', message: 'database unavailable, retry later', status: 503 };
    }
    return { code: 'INTERNAL', message: 'Internal server error', status: 500, unexpected: original };
  }
  // syntax errors, unknown fields, wrong variable types and other schema-level problems
  const yogaStatus = (error.extensions?.http as { status?: number } | undefined)?.status;
  return { code: 'BAD_REQUEST', message: error.message, status: yogaStatus && yogaStatus >= 400 && yogaStatus < 500 ? yogaStatus : 400 };
}

function headersFor(envelope: Envelope, error: GraphQLError): Record<string, string> {
  const inherited = (error.extensions?.http as { headers?: Record<string, string> } | undefined)?.headers ?? {};
  return {
    ...inherited,
    'X-Error-Code': envelope.code,
    ...(envelope.code === 'UNAUTHENTICATED' ? { 'WWW-Authenticate': 'Bearer' } : {}),
    ...(envelope.status === 503 ? { 'Retry-After': '1' } : {}),
  };
}

/** The errors' error code as the answer's X-Error-Code will say it: the code of the one with the highest status. */
export function decidingErrorCode(errors: readonly GraphQLError[]): ErrorCode {
  return errors.map(envelopeOf).reduce((a, b) => (b.status > a.status ? b : a)).code;
}

/** An error as it goes on the wire: its code first, then the request id, the details and the message. */
export function leadingWithCode({ message, extensions = {}, ...rest }: GraphQLFormattedError): Record<string, unknown> {
  const { code, requestId, ...more } = extensions;
  return { extensions: { code, requestId, ...more }, message, ...rest };
}

/**
 * The body of a result with errors, every error leading with its code and the errors before the data: NiFi's
 * InvokeHTTP keeps only the first 256 bytes of an error body by default, and a MANIFEST_INVALID message alone
 * can be 2,000 characters.
 */
function stringifyLeadingWithCodes(result: ExecutionResult): string {
  const { errors, ...rest } = result;
  return JSON.stringify({ errors: errors?.map((error) => leadingWithCode(error.toJSON())), ...rest });
}

/** A result's errors in the contract's envelope, as they go on the wire in an event stream's `next` message. */
export function envelopedResult(result: ExecutionResult, log: Logger, requestId: string): ExecutionResult {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((raw) => {
    const error =
      raw instanceof GraphQLError ? raw : new GraphQLError(String((raw as Error).message ?? raw), { originalError: raw as Error });
    const envelope = envelopeOf(error);
    if (envelope.unexpected) log.error({ err: envelope.unexpected, requestId, path: error.path }, 'unexpected error');
    const formatted = new GraphQLError(envelope.message, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path: error.path,
      extensions: { code: envelope.code, ...(envelope.details !== undefined ? { details: envelope.details } : {}), requestId },
    });
    return leadingWithCode(formatted.toJSON());
  });
  // the formatted errors are what JSON.stringify writes, so they stand in for GraphQLErrors here
  return { ...result, errors: errors as unknown as GraphQLError[] };
}

/** Rewrites every error of every result (parse, validation, execution) into the contract's envelope. */
export function useErrorEnvelope(log: Logger): Plugin {
  return {
    onResultProcess({ request, result, setResult }) {
      if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return;
      const requestId = requestIdOf(request);
      const enveloped = result.errors.map((raw) => {
        const error =
          raw instanceof GraphQLError ? raw : new GraphQLError(String((raw as Error).message ?? raw), { originalError: raw as Error });
        const envelope = envelopeOf(error);
        if (envelope.unexpected) log.error({ err: envelope.unexpected, requestId, path: error.path }, 'unexpected error');
        return { error, envelope };
      });
      // Yoga answers with the highest status among the errors and merges their headers, the last one winning:
      // every error carries the X-Error-Code of the one that decides the status, so header and status agree
      const deciding = enveloped.reduce((a, b) => (b.envelope.status > a.envelope.status ? b : a)).envelope;
      const errors = enveloped.map(
        ({ error, envelope }) =>
          new GraphQLError(envelope.message, {
            nodes: error.nodes,
            source: error.source,
            positions: error.positions,
            path: error.path,
            extensions: {
              code: envelope.code,
              ...(envelope.details !== undefined ? { details: envelope.details } : {}),
              requestId,
              http: { status: envelope.status, headers: headersFor(deciding, error) },
            },
          }),
      );
      setResult({ ...result, errors, stringify: stringifyLeadingWithCodes });
    },
  };
}

/**
 * A body no request parser accepts (e.g. InvokeHTTP's default Content-Type application/octet-stream) gets
 * Yoga's bare 415; it gets the envelope and X-Error-Code too. Registered after Yoga's own parsers.
 */
export function useUnsupportedMediaType(): Plugin {
  return {
    onRequestParse({ request, requestParser, endResponse, fetchAPI }) {
      if (requestParser) return;
      const message = `unsupported Content-Type ${JSON.stringify(request.headers.get('content-type') ?? '')}: send application/json`;
      const body = { errors: [leadingWithCode({ message, extensions: { code: 'BAD_REQUEST', requestId: requestIdOf(request) } })] };
      endResponse(
        new fetchAPI.Response(JSON.stringify(body), {
          status: 415,
          headers: { 'Content-Type': 'application/json; charset=utf-8', 'X-Error-Code': 'BAD_REQUEST' },
        }),
      );
    },
  };
}
