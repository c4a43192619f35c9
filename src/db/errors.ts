// Classifies errors from pg and from Prisma's pg adapter, which wraps the same PostgreSQL errors.

interface AdapterCause {
  kind?: string;
  originalCode?: string;
  code?: string;
  constraint?: { index?: string; fields?: string[] };
}

function adapterCause(error: unknown): AdapterCause | undefined {
  const e = error as { name?: string; cause?: AdapterCause; meta?: { driverAdapterError?: { cause?: AdapterCause } } };
  if (e?.name === 'DriverAdapterError') return e.cause;
  return e?.meta?.driverAdapterError?.cause;
}

/** The SQLSTATE behind an error, whichever client raised it. */
function sqlState(error: unknown): string | undefined {
  const cause = adapterCause(error);
  if (cause) return cause.originalCode ?? cause.code;
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

function violatedConstraint(error: unknown): string | undefined {
  const cause = adapterCause(error);
  if (cause) return cause.constraint?.index;
  return (error as { constraint?: string })?.constraint;
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (sqlState(error) !== '23505') return false;
  return constraint === undefined || violatedConstraint(error) === constraint;
}

/** Deadlocks and serialization failures: the whole transaction may simply be run again. */
export function isRetryableConflict(error: unknown): boolean {
  const code = sqlState(error);
  if (code === '40P01' || code === '40001') return true;
  if ((error as { code?: string })?.code === 'P2034') return true;
  return adapterCause(error)?.kind === 'TransactionWriteConflict';
}

const UNAVAILABLE_ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'DatabaseDoesNotExist',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionAlreadyClosed',
  'DatabaseAccessDenied',
  'AuthenticationFailed',
  'TlsConnectionError',
]);
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN']);

/** SQLSTATEs that say "not now" rather than "never": the same request may succeed later or elsewhere. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57014', // query_canceled: statement_timeout (database.statementTimeout) ended a statement
  '25006', // read_only_sql_transaction: a standby, or a primary demoted by a failover
  '55P03', // lock_not_available
]);

/** The database cannot be reached, does not answer in time, or cannot write: answer 503, the caller may retry. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = sqlState(error);
  // 08: connection exception, 53: insufficient resources, 57P: operator intervention (shutdown, terminate)
  if (code && (code.startsWith('08') || code.startsWith('53') || code.startsWith('57P') || UNAVAILABLE_SQLSTATES.has(code))) return true;
  const kind = adapterCause(error)?.kind;
  if (kind && UNAVAILABLE_ADAPTER_KINDS.has(kind)) return true;
  const e = error as { code?: string; message?: string; name?: string };
  if (e?.code && (UNAVAILABLE_PRISMA_CODES.has(e.code) || UNAVAILABLE_NODE_CODES.has(e.code))) return true;
  if (e?.name === 'PrismaClientInitializationError') return true;
  const message = e?.message ?? '';
  return /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|Query read timeout|not queryable|Client has encountered a connection error|Can't reach database server|Transaction already closed|Unable to start a transaction in the given time/i.test(
    message,
  );
}
