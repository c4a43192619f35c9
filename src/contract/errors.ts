// The contract's error codes and the HTTP status each maps to — one table for the whole service.
export const ERROR_HTTP_STATUS = {
  BAD_REQUEST: 400,
  QUERY_TOO_COSTLY: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  RUN_NOT_FOUND: 404,
  PARTITION_NOT_FOUND: 404,
  DISPATCH_NOT_FOUND: 404,
  PUBLICATION_NOT_FOUND: 404,
  BACKFILL_NOT_FOUND: 404,
  POOL_NOT_FOUND: 404,
  ALERT_GROUP_NOT_FOUND: 404,
  DUPLICATE_ACTIVE_RUN: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  RUN_STATUS_MISMATCH: 409,
  CLAIM_MISMATCH: 409,
  CHUNK_CONFLICT: 409,
  FILE_PATH_CONFLICT: 409,
  PARTITION_STATUS_MISMATCH: 409,
  DISPATCH_MISMATCH: 409,
  DISPATCH_STATUS_MISMATCH: 409,
  PUBLISH_TOKEN_MISMATCH: 409,
  CLEANUP_NOT_DUE: 409,
  DEPENDENCIES_NOT_READY: 409,
  PUBLICATION_CONFLICT: 409,
  OBSERVATION_CONFLICT: 409,
  JOB_PAUSED: 409,
  BACKFILL_STATUS_MISMATCH: 409,
  RUN_NOT_RESUMABLE: 409,
  NEWER_ATTEMPT_EXISTS: 409,
  SNAPSHOT_BEYOND_HORIZON: 409,
  INVALID_INPUT: 422,
  INVALID_HDFS_ROOT: 422,
  HDFS_PATH_OUTSIDE_RUN: 422,
  CHUNK_INDEX_OUT_OF_RANGE: 422,
  MANIFEST_INVALID: 422,
  FAIL_TRANSITION_NOT_ALLOWED: 422,
  BULK_LIMIT_EXCEEDED: 422,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_HTTP_STATUS;

export type ErrorDetails = Record<string, unknown>;

/** An expected failure of a domain operation: the contract's code plus details for the caller. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly details?: ErrorDetails,
    message?: string,
  ) {
    super(message ?? code);
    this.name = 'DomainError';
  }

  get httpStatus(): number {
    return ERROR_HTTP_STATUS[this.code];
  }
}

export function invalidInput(field: string, reason: string): DomainError {
  return new DomainError('INVALID_INPUT', { field, reason }, `${field}: ${reason}`);
}
