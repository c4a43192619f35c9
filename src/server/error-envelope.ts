import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../db/errors.js';
import { DomainError, ERROR_HTTP_STATUS, type ErrorCode } from '../domain/errors.js';
import { requestIdOf } from './request-id.js';

interface Envelope {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  status: number;
}

function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code in ERROR_HTTP_STATUS;
}

/** One mapping from any error to the contract's envelope: code, HTTP status, masked internals. */
function envelopeOf(error: GraphQLError, log: Logger, requestId: string): Envelope {
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
    log.error({ err: original, requestId, path: error.path }, 'unexpected error');
    return { code: 'INTERNAL', message: 'Internal server error', status: 500 };
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

/** Rewrites every error of every result (parse, validation, execution) into the contract's envelope. */
export function useErrorEnvelope(log: Logger): Plugin {
  return {
    onResultProcess({ request, result, setResult }) {
      if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return;
      const requestId = requestIdOf(request);
      const errors = result.errors.map((raw) => {
        const error = raw instanceof GraphQLError ? raw : new GraphQLError(String((raw as Error).message ?? raw), { originalError: raw as Error });
        const envelope = envelopeOf(error, log, requestId);
        return new GraphQLError(envelope.message, {
          nodes: error.nodes,
          source: error.source,
          positions: error.positions,
          path: error.path,
          extensions: {
            code: envelope.code,
            ...(envelope.details !== undefined ? { details: envelope.details } : {}),
            requestId,
            http: { status: envelope.status, headers: headersFor(envelope, error) },
          },
        });
      });
      setResult({ ...result, errors });
    },
  };
}
