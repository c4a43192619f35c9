import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ALERT_KINDS, UNNOTIFIED_ALERT_KINDS } from './alert-kinds.js';
import { formatDuration, parseDuration } from './durations.js';
import { DEFAULT_RETRY_AFTER_SECONDS, JOB_KEY_PATTERN, maxRunning, poolName, retryAfterSeconds } from './source-pools.js';

export const ROLES = ['nifi', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export class ConfigError extends Error {
  /** One line per problem, each `config: <key>: <what is wrong>`. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
// setTimeout/setInterval fire immediately for delays above 2^31-1 ms.
const TIMER_MAX = 2 ** 31 - 1;

/** Error message for a value of the wrong type, or `is required` when it is missing. */
function typeError(expected: string) {
  return (issue: { code?: string; input?: unknown }) => {
    if (issue.code !== 'invalid_type') return undefined;
    return issue.input === undefined ? 'is required' : `must be ${expected}`;
  };
}

const NUMERIC_STRING = /^\s*-?\d+(?:\.\d+)?\s*$/;

// Values from environment variables are strings; numeric ones are validated as numbers.
function numeric<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (typeof value === 'string' && NUMERIC_STRING.test(value) ? Number(value) : value), schema);
}

function integer(fallback: number, min: number, max?: number) {
  const message = max === undefined ? `must be an integer >= ${min}` : `must be an integer between ${min} and ${max}`;
  const base = z.number({ error: message }).int(message).min(min, message);
  return numeric(max === undefined ? base : base.max(max, message)).default(fallback);
}

/** true or false; an environment variable's text says `true` or `false`. */
function flag(fallback: boolean) {
  const word = (value: unknown) =>
    typeof value === 'string' && /^\s*(true|false)\s*$/i.test(value) ? value.trim().toLowerCase() === 'true' : value;
  return z.preprocess(word, z.boolean({ error: typeError('true or false') })).default(fallback);
}

function duration(fallback: number, options: { timer?: boolean; zero?: boolean } = {}) {
  const positive = options.zero ? z.number().nonnegative('must not be negative') : z.number().positive('must be greater than zero');
  const bounded = options.timer ? positive.max(TIMER_MAX, `must be at most ${formatDuration(TIMER_MAX)} (the timer limit)`) : positive;
  return z
    .unknown()
    .transform((value, ctx) => {
      try {
        return parseDuration(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    })
    .pipe(bounded)
    .default(fallback);
}

/** A choice among fixed spellings, matched case-insensitively and returned in its canonical spelling. */
function choice<const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) {
  const canonical = (value: unknown) =>
    typeof value === 'string' ? (values.find((v) => v.toLowerCase() === value.trim().toLowerCase()) ?? value) : value;
  const options = z.enum(values, {
    error: (issue) => `must be one of ${values.join(', ')} (got ${JSON.stringify(issue.input)})`,
  });
  return z.preprocess(canonical, options).default(fallback);
}

function url(protocols: readonly string[]) {
  const message = `must be a ${protocols.map((p) => p.replace(/:$/, '')).join(' or ')} URL`;
  return z
    .string({ error: typeError('a string') })
    .refine((value) => URL.canParse(value) && protocols.includes(new URL(value).protocol), message)
    .nullable()
    .default(null);
}

function section<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, { error: typeError('a mapping') });
}

const tokenSchema = section({
  name: z
    .string({ error: typeError('a string') })
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters'),
  sha256: z
    .string({ error: typeError('a string') })
    .regex(/^[0-9a-f]{64}$/i, 'must be a SHA-256 digest (64 hexadecimal characters)')
    .transform((digest) => digest.toLowerCase()),
  roles: z
    .array(z.enum(ROLES, { error: (issue) => `unknown role ${JSON.stringify(issue.input)} (expected ${ROLES.join(', ')})` }), {
      error: typeError('a list of roles'),
    })
    .min(1, 'must list at least one role')
    .refine((roles) => new Set(roles).size === roles.length, 'must not repeat a role'),
});

type TokenEntry = z.output<typeof tokenSchema>;

function uniqueTokens(tokens: TokenEntry[], ctx: z.core.$RefinementCtx<TokenEntry[]>) {
  for (const field of ['name', 'sha256'] as const) {
    const seen = new Map<unknown, number>();
    tokens.forEach((token, index) => {
      const first = seen.get(token[field]);
      if (first === undefined) {
        seen.set(token[field], index);
      } else {
        ctx.addIssue({ code: 'custom', path: [index, field], message: `duplicate of auth.tokens[${first}].${field}` });
      }
    });
  }
}

/** A structured value that an environment variable carries as JSON text (e.g. LC_AUTH__TOKENS, LC_SERVER__TLS). */
function jsonText<T extends z.ZodType>(shape: string, schema: T) {
  return z.preprocess((value, ctx) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: `must be ${shape} when given as text` });
      return z.NEVER;
    }
  }, schema);
}

const filePath = z.string({ error: typeError('a file path') }).min(1, 'must not be empty');

/** The static tokens as a list: what `auth.tokens` holds and what `auth.tokensFile` contains (YAML or JSON). */
export const tokenListSchema = z.array(tokenSchema, { error: typeError('a list') }).superRefine(uniqueTokens);

const tokensSchema = jsonText('a JSON array of {name, sha256, roles}', tokenListSchema).default([]);

const roleList = z
  .array(z.enum(ROLES, { error: (issue) => `unknown role ${JSON.stringify(issue.input)} (expected ${ROLES.join(', ')})` }), {
    error: typeError('a list of roles'),
  })
  .min(1, 'must list at least one role');

/**
 * An OpenID provider: its JWTs are accepted as bearer tokens (machines, client credentials), and with clientId
 * people sign in to the console through it (authorization code with PKCE).
 */
const oidcSchema = jsonText(
  'a JSON object {issuer, audience, rolesClaim, roleMapping, …}',
  section({
    /** The provider's issuer URL, as its discovery document and its tokens' `iss` say it. */
    issuer: z
      .string({ error: typeError('a URL') })
      .refine((value) => URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol), 'must be a http or https URL'),
    /** The `aud` a machine token must carry (the API's identifier at the provider). */
    audience: z.string({ error: typeError('a string') }).min(1, 'must not be empty'),
    /** Where the roles are in a token or ID token: a claim name, or a dotted path (`realm_access.roles`). */
    rolesClaim: z
      .string({ error: typeError('a string') })
      .min(1, 'must not be empty')
      .default('roles'),
    /** Claim values (a group, an app role) to the roles they grant; a value that is itself a role's name grants it without an entry. */
    roleMapping: z.record(z.string(), roleList, { error: typeError('a mapping of claim values to lists of roles') }).default({}),
    /** How far a token's exp/nbf/iat may be off this machine's clock. */
    clockSkew: duration(30 * SECOND),
    /** The provider's keys are fetched again at most this often for a token signed with a key not seen yet. */
    jwksRefetchInterval: duration(MINUTE),
    /** The console's client at the provider: without it, people cannot sign in through the provider. */
    clientId: z
      .string({ error: typeError('a string') })
      .min(1, 'must not be empty')
      .optional(),
    clientSecret: z
      .string({ error: typeError('a string') })
      .min(1, 'must not be empty')
      .optional(),
    /** The console's public URL (what the browser has in its address bar); the redirect URI is `<publicUrl>/auth/callback`. */
    publicUrl: z
      .string({ error: typeError('a URL') })
      .refine((value) => URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol), 'must be a http or https URL')
      .optional(),
    scopes: z.string({ error: typeError('a string') }).default('openid profile email'),
    /** A console session ends this long after sign-in… */
    sessionTtl: duration(8 * HOUR),
    /** …or after this long without a request. */
    sessionIdle: duration(30 * MINUTE),
  }).refine((oidc) => oidc.clientId === undefined || oidc.publicUrl !== undefined, {
    message: 'clientId needs publicUrl (the redirect URI is <publicUrl>/auth/callback)',
    path: ['publicUrl'],
  }),
)
  .nullable()
  .default(null);

/** HTTPS for the API; with clientCaFile, client certificates are asked for (and required with requireClientCert). */
const serverTlsSchema = jsonText(
  'a JSON object {certFile, keyFile, clientCaFile, requireClientCert}',
  section({
    certFile: filePath,
    keyFile: filePath,
    clientCaFile: filePath.optional(),
    requireClientCert: z.boolean({ error: typeError('true or false') }).default(false),
  }).refine((tls) => !tls.requireClientCert || tls.clientCaFile !== undefined, {
    message: 'requireClientCert needs clientCaFile',
    path: ['clientCaFile'],
  }),
).optional();

/** The worker's calls to NiFi's receiver: a CA to trust, and a client certificate for mTLS. */
const nifiTlsSchema = jsonText(
  'a JSON object {caFile, certFile, keyFile}',
  section({ caFile: filePath.optional(), certFile: filePath.optional(), keyFile: filePath.optional() }).refine(
    (tls) => (tls.certFile === undefined) === (tls.keyFile === undefined),
    {
      message: 'certFile and keyFile go together',
      path: ['keyFile'],
    },
  ),
).optional();

// RFC 9110's token: what a header field name may be
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

/** Extra HTTP headers for the trace exporter (a collector's API key, say): names to values. */
const exportHeadersSchema = jsonText(
  'a JSON object of header names to values',
  z
    .record(
      z.string(),
      z.string({ error: typeError('a string') }).refine((value) => !/[\r\n\0]/.test(value), 'must not hold a line break'),
      { error: typeError('a mapping of header names to values') },
    )
    .superRefine((headers, ctx) => {
      for (const name of Object.keys(headers)) {
        if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name' });
      }
    }),
).default({});

const originsSchema = jsonText(
  'a JSON array of origins',
  z.array(
    z.string().refine((o) => URL.canParse(o) && new URL(o).origin === o, 'must be an origin such as https://console.example:8443'),
    { error: typeError('a list of origins') },
  ),
).default([]);

/** Headers every webhook call sets itself (src/domain/notifications/alert-notification.ts; traceparent when tracing is on) or node:http owns. */
const WEBHOOK_OWN_HEADERS = [
  'content-type',
  'content-length',
  'idempotency-key',
  'x-dispatch-id',
  'traceparent',
  'host',
  'connection',
  'transfer-encoding',
];

/** The extra headers of an outgoing call: names HTTP allows, values without line breaks, none of the call's own. */
function callHeaders(ownHeaders: readonly string[], ownMessage: string) {
  return z
    .record(
      z.string(),
      z
        .string({ error: typeError('a string') })
        .max(8000, 'must be at most 8000 characters')
        .refine((value) => !/[\r\n\0]/.test(value), 'must not contain CR, LF or NUL'),
      { error: typeError('a mapping of header names to values') },
    )
    .superRefine((headers, ctx) => {
      for (const name of Object.keys(headers)) {
        if (!HEADER_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be a header name' });
        else if (ownHeaders.includes(name.toLowerCase())) ctx.addIssue({ code: 'custom', path: [name], message: ownMessage });
      }
    });
}
const RECEIVER_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** A receiver without a name is named after its URL's host and a digest of the whole URL (which may hold a secret). */
function defaultReceiverName(url: string): string {
  return `${new URL(url).hostname}-${createHash('sha256').update(url).digest('hex').slice(0, 8)}`;
}

const webhookSchema = section({
  name: z
    .string({ error: typeError('a string') })
    .max(200, 'must be at most 200 characters')
    .regex(RECEIVER_NAME, 'must be letters, digits, ".", "_", ":" or "-", starting with a letter or digit')
    .optional(),
  url: z
    .string({ error: typeError('a string') })
    .max(2000, 'must be at most 2000 characters')
    .refine((value) => URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol), 'must be a http or https URL'),
  kinds: z
    .array(
      z.enum(ALERT_KINDS, { error: (issue) => `unknown alert kind ${JSON.stringify(issue.input)} (expected ${ALERT_KINDS.join(', ')})` }),
      { error: typeError('a list of alert kinds') },
    )
    .min(1, 'must list at least one kind (leave it out for every kind)')
    .refine((kinds) => new Set(kinds).size === kinds.length, 'must not repeat a kind')
    .refine(
      (kinds) => !kinds.some((kind) => UNNOTIFIED_ALERT_KINDS.includes(kind)),
      `must not name ${UNNOTIFIED_ALERT_KINDS.join(', ')}: no webhook is sent for it (its Prometheus rule is the notification)`,
    )
    .optional(),
  headers: callHeaders(WEBHOOK_OWN_HEADERS, 'is set by every webhook call itself').default({}),
  format: choice(['generic', 'slack'], 'generic'),
}).transform(({ name, kinds, ...webhook }) => ({ ...webhook, name: name ?? defaultReceiverName(webhook.url), kinds: kinds ?? null }));

type WebhookEntry = z.output<typeof webhookSchema>;

function uniqueReceiverNames(webhooks: WebhookEntry[], ctx: z.core.$RefinementCtx<WebhookEntry[]>) {
  const seen = new Map<string, number>();
  webhooks.forEach((webhook, index) => {
    const first = seen.get(webhook.name);
    if (first === undefined) seen.set(webhook.name, index);
    else
      ctx.addIssue({
        code: 'custom',
        path: [index, 'name'],
        message: `duplicate of alerts.webhooks[${first}].name (${webhook.name}): give each receiver its own name`,
      });
  });
}

/** Where alert notifications go (src/domain/notifications/): a JSON list in LC_ALERTS__WEBHOOKS. */
const webhooksSchema = jsonText(
  'a JSON array of {url, name, kinds, headers, format}',
  z
    .array(webhookSchema, { error: typeError('a list') })
    .max(20, 'must list at most 20 receivers')
    .superRefine(uniqueReceiverNames),
).default([]);

// OpenLineage's naming conventions for the datasets a job reads and writes (src/domain/lineage/run-event.ts)
const ORACLE_SOURCE = /^oracle:\/\/[^/:\s]+:\d{1,5}\/[^/\s]+$/;
const HIVE_TARGET = /^hive:\/\/[^/:\s]+:\d{1,5}$/;
const QUALIFIED_NAME = /^[^.\s]+\.[^.\s]+$/;

const lineageJobSchema = section({
  source: z
    .string({ error: typeError('a string') })
    .regex(ORACLE_SOURCE, 'must be oracle://host:port/SERVICE_NAME')
    .nullable()
    .default(null),
  sourceTable: z
    .string({ error: typeError('a string') })
    .regex(QUALIFIED_NAME, 'must be SCHEMA.TABLE')
    .nullable()
    .default(null),
  target: z
    .string({ error: typeError('a string') })
    .regex(HIVE_TARGET, 'must be hive://host:port')
    .nullable()
    .default(null),
  targetTable: z
    .string({ error: typeError('a string') })
    .regex(QUALIFIED_NAME, 'must be database.table')
    .nullable()
    .default(null),
  partitionColumn: z
    .string({ error: typeError('a string') })
    .min(1, 'must not be empty')
    .max(200)
    .default('business_date'),
});

/** Each job's datasets, by job key: a JSON object in LC_LINEAGE__JOBS. */
const lineageJobsSchema = jsonText(
  'a JSON object of job keys to {source, sourceTable, target, targetTable, partitionColumn}',
  z.record(z.string().min(1).max(200), lineageJobSchema, { error: typeError('a mapping of job keys to datasets') }),
).default({});

/**
 * Credentials for gate receivers (an Airflow or Dagster API, or a generic receiver), by origin: the ledger keeps a
 * gate's URL only, and every GATE_READY call to an origin listed here carries its Authorization and headers.
 */
const gateCredentialSchema = section({
  origin: z
    .string({ error: typeError('a string') })
    .refine(
      (o) => URL.canParse(o) && ['http:', 'https:'].includes(new URL(o).protocol) && new URL(o).origin === o,
      'must be an origin such as https://airflow.example:8080 (scheme, host and port only)',
    ),
  /** Sent as `Authorization: Bearer <token>` (an OAuth access token, a Dagster or Airflow API token). */
  bearerToken: z
    .string({ error: typeError('a string') })
    .min(1, 'must not be empty')
    .max(8000, 'must be at most 8000 characters')
    .refine((value) => !/[\r\n\0]/.test(value), 'must not contain CR, LF or NUL')
    .optional(),
  /** Sent as `Authorization: Basic base64(username:password)`. */
  basic: section({
    username: z
      .string({ error: typeError('a string') })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .refine((value) => !/[:\r\n\0]/.test(value), 'must not contain ":", CR, LF or NUL'),
    password: z
      .string({ error: typeError('a string') })
      .max(1000, 'must be at most 1000 characters')
      .refine((value) => !/[\r\n\0]/.test(value), 'must not contain CR, LF or NUL'),
  }).optional(),
  /**
   * For an Airflow 3 API: a user whose name and password get a JWT from POST {notifyUrl}/auth/token, kept in memory and
   * fetched again when Airflow answers 401 (its tokens expire after [api_auth] jwt_expiration_time).
   */
  airflowToken: section({
    username: z
      .string({ error: typeError('a string') })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters'),
    password: z.string({ error: typeError('a string') }).max(1000, 'must be at most 1000 characters'),
  }).optional(),
  /** Other headers, e.g. Dagster+'s Dagster-Cloud-Api-Token. */
  headers: callHeaders(
    [...WEBHOOK_OWN_HEADERS, 'authorization'],
    'is set by the call itself (Authorization: bearerToken or basic)',
  ).default({}),
})
  .refine(
    (c) => [c.bearerToken, c.basic, c.airflowToken].filter((auth) => auth !== undefined).length <= 1,
    'must give at most one of bearerToken, basic and airflowToken',
  )
  .transform(({ origin, bearerToken, basic, airflowToken, headers }) => ({
    origin,
    airflowToken: airflowToken ?? null,
    headers: {
      ...headers,
      ...(bearerToken !== undefined ? { Authorization: `Bearer ${bearerToken}` } : {}),
      ...(basic ? { Authorization: `Basic ${Buffer.from(`${basic.username}:${basic.password}`).toString('base64')}` } : {}),
    } as Record<string, string>,
  }));

/** gates.credentials: a JSON list in LC_GATES__CREDENTIALS; at most one entry per origin. */
const gateCredentialsSchema = jsonText(
  'a JSON array of {origin, bearerToken, basic, airflowToken, headers}',
  z
    .array(gateCredentialSchema, { error: typeError('a list') })
    .max(50, 'must list at most 50 origins')
    .superRefine((credentials, ctx) => {
      credentials.forEach((c, index) => {
        const first = credentials.findIndex((other) => other.origin === c.origin);
        if (first !== index)
          ctx.addIssue({
            code: 'custom',
            path: [index, 'origin'],
            message: `duplicate of gates.credentials[${first}].origin (${c.origin})`,
          });
      });
    }),
).default([]);

const jobKeyInConfig = z.string({ error: typeError('a string') }).regex(JOB_KEY_PATTERN, `must match ${JOB_KEY_PATTERN.source}`);

const sourcePoolSchema = section({
  name: poolName,
  maxRunning: numeric(maxRunning),
  retryAfterSeconds: numeric(retryAfterSeconds).default(DEFAULT_RETRY_AFTER_SECONDS),
  jobs: z.array(jobKeyInConfig, { error: typeError('a list of job keys') }).default([]),
});

function uniquePoolsAndJobs(pools: Array<z.output<typeof sourcePoolSchema>>, ctx: z.core.$RefinementCtx<unknown>) {
  const names = new Map<string, number>();
  const jobs = new Map<string, string>();
  pools.forEach((pool, index) => {
    const first = names.get(pool.name);
    if (first === undefined) names.set(pool.name, index);
    else ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate of sources.pools[${first}].name (${pool.name})` });
    pool.jobs.forEach((job, at) => {
      const other = jobs.get(job);
      if (other === undefined) jobs.set(job, pool.name);
      else ctx.addIssue({ code: 'custom', path: [index, 'jobs', at], message: `${job} is already in pool ${other}: a job is in one pool` });
    });
  });
}

/** Source pools applied by every `serve` and `start` when it starts (src/domain/pools/): a JSON list in LC_SOURCES__POOLS. */
const sourcePoolsSchema = jsonText(
  'a JSON array of {name, maxRunning, retryAfterSeconds, jobs}',
  z
    .array(sourcePoolSchema, { error: typeError('a list') })
    .max(200, 'must list at most 200 pools')
    .superRefine(uniquePoolsAndJobs),
).default([]);

/**
 * A request waits for the database at most acquireTimeout for a connection (opening a new one takes at most
 * connectTimeout of that) plus statementTimeout per statement and per transaction, then gets a 503: with these
 * defaults, within 10 s in all.
 */
export const DATABASE_TIMEOUT_DEFAULTS = { connectTimeout: 2 * SECOND, acquireTimeout: 3 * SECOND, statementTimeout: 5 * SECOND };
export type DatabaseTimeouts = typeof DATABASE_TIMEOUT_DEFAULTS;

/**
 * The check an operator runs on the target before resolving a PUBLISH_UNKNOWN, for the jobs `job` matches (a job
 * key, or a pattern with `*`): `target` names the target table and partition, `query` is the check to copy. Both
 * may hold placeholders filled from the run (src/domain/publish/publish-unknown-kit.ts): {runId}, {jobKey},
 * {businessKey}, {stageTable}, {publishToken}, {queryId}, {expectedRows}, {parameters.NAME}.
 */
const publishCheckSchema = section({
  job: z.string({ error: typeError('a string') }).regex(/^[A-Z0-9_*]{1,200}$/, 'must be a job key, or a pattern of A-Z, 0-9, _ and *'),
  target: z
    .string({ error: typeError('a string') })
    .min(1, 'must not be empty')
    .max(500, 'must be at most 500 characters')
    .optional(),
  query: z
    .string({ error: typeError('a string') })
    .min(1, 'must not be empty')
    .max(4000, 'must be at most 4000 characters'),
}).transform(({ target, ...check }) => ({ ...check, target: target ?? null }));

/** The first check whose `job` matches wins: a JSON list in LC_CONSOLE__PUBLISH_CHECKS. */
const publishChecksSchema = jsonText(
  'a JSON array of {job, target, query}',
  z.array(publishCheckSchema, { error: typeError('a list') }).max(200, 'must list at most 200 checks'),
).default([]);

const configSchema = z
  .strictObject(
    {
      server: section({
        port: integer(8080, 1, 65535),
        host: z
          .string({ error: typeError('a string') })
          .min(1, 'must not be empty')
          .default('0.0.0.0'),
        tls: serverTlsSchema,
        /** SIGTERM/SIGINT: how long in-flight work may take before the process exits anyway. */
        shutdownTimeout: duration(30 * SECOND, { timer: true }),
        /**
         * SIGTERM/SIGINT: how long the API goes on accepting and answering with /readyz already 503, before it
         * stops listening and drains — longer than a load balancer takes to see the 503 and stop sending to it.
         */
        shutdownDelay: duration(0, { timer: true, zero: true }),
        /** Browser origins allowed to call the API cross-origin; none by default (CORS off). */
        corsOrigins: originsSchema,
        /**
         * Threads that execute queries and requests with large bodies off the main thread, so that a costly
         * console page or manifest never holds up health checks, NiFi's chunk reports or subscriptions; 0 runs
         * everything on the main thread.
         */
        executionThreads: integer(1, 0, 64),
      }).prefault({}),
      database: section({
        url: url(['postgres:', 'postgresql:']),
        /** Used by `load-control migrate` (DDL rights); defaults to directUrl, then url. */
        migrationUrl: url(['postgres:', 'postgresql:']),
        /**
         * The PostgreSQL server itself, when url leads to PgBouncer in transaction pooling mode: LISTEN, `work`,
         * migrate, compact and purge (session advisory locks) connect here, and serve's request path sends its
         * settings with each transaction and no named statements through url. Unset: everything uses url.
         */
        directUrl: url(['postgres:', 'postgresql:']),
        poolSize: integer(10, 1),
        txAttempts: integer(5, 1),
        connectTimeout: duration(DATABASE_TIMEOUT_DEFAULTS.connectTimeout, { timer: true }),
        acquireTimeout: duration(DATABASE_TIMEOUT_DEFAULTS.acquireTimeout, { timer: true }),
        statementTimeout: duration(DATABASE_TIMEOUT_DEFAULTS.statementTimeout, { timer: true }),
      }).prefault({}),
      auth: section({
        tokens: tokensSchema,
        /** More static tokens, in a file of their own that every process re-reads when it changes and on SIGHUP. */
        tokensFile: filePath.nullable().default(null),
        oidc: oidcSchema,
      }).prefault({}),
      nifi: section({
        receiverUrl: url(['http:', 'https:']),
        timeoutSeconds: numeric(z.number({ error: 'must be a number' }).positive('must be greater than zero')).default(10),
        tls: nifiTlsSchema,
      }).prefault({}),
      recovery: section({
        mode: choice(['FAIL', 'REISSUE'], 'FAIL'),
        stale: duration(90 * MINUTE),
        extractQueryTimeout: duration(60 * MINUTE),
        runTimeout: duration(6 * HOUR),
        maxAttempts: integer(3, 1),
        validationStale: duration(2 * HOUR),
        publishStale: duration(2 * HOUR),
        sweeperInterval: duration(MINUTE, { timer: true }),
      }).prefault({}),
      dispatch: section({
        maxAttempts: integer(20, 1),
        backoffMin: duration(5 * SECOND),
        backoffMax: duration(5 * MINUTE),
        ackTimeout: duration(10 * MINUTE),
        lease: duration(60 * SECOND),
        pollInterval: duration(5 * SECOND, { timer: true }),
        batch: integer(20, 1),
      }).prefault({}),
      backfill: section({
        /** How often each worker advances the open backfills (src/domain/backfills/advance-backfill.ts). */
        pumpInterval: duration(5 * SECOND, { timer: true }),
      }).prefault({}),
      cleanup: section({
        successRetention: duration(3 * DAY),
        failedRetention: duration(14 * DAY),
        maxBatch: integer(200, 1),
      }).prefault({}),
      retention: section({
        /** Ended runs lose their files, partitions, validations, dispatches and events after this (src/domain/retention/). */
        ledger: duration(90 * DAY),
        /**
         * The sweeper's purges first write what they delete here (src/domain/retention/purge-export.ts), one archive per
         * cycle that deletes; unset: no export.
         */
        exportDir: filePath.nullable().default(null),
      }).prefault({}),
      resume: section({
        /**
         * resumeRun refuses a run older than this (SNAPSHOT_BEYOND_HORIZON): its SCN must still be in Oracle's undo
         * for the partitions read again AS OF SCN. Oracle's default UNDO_RETENTION is 900 s; set it to yours.
         */
        snapshotHorizon: duration(15 * MINUTE),
        /** The same for single jobs: job key → duration. */
        snapshotHorizonByJob: z
          .record(z.string(), duration(15 * MINUTE), { error: typeError('a mapping of job keys to durations') })
          .superRefine((byJob, ctx) => {
            for (const jobKey of Object.keys(byJob).filter((key) => !/^[A-Z0-9_]{1,200}$/.test(key))) {
              ctx.addIssue({ code: 'custom', path: [jobKey], message: 'must be a job key ^[A-Z0-9_]{1,200}$' });
            }
          })
          .default({}),
      }).prefault({}),
      alerts: section({ webhooks: webhooksSchema }).prefault({}),
      /** OpenLineage run events (src/domain/lineage/), posted through the outbox to lineage.url: off unless enabled. */
      lineage: section({
        enabled: flag(false),
        /** Marquez's (or any OpenLineage HTTP consumer's) endpoint, e.g. http://marquez:5000/api/v1/lineage. */
        url: url(['http:', 'https:']),
        /** The job namespace; the job name is the job key. */
        namespace: z
          .string({ error: typeError('a string') })
          .min(1, 'must not be empty')
          .max(200)
          .default('load-control'),
        /** Each event's and facet's producer: a URI naming this software. */
        producer: z
          .string({ error: typeError('a string') })
          .refine((value) => URL.canParse(value), 'must be a URI')
          .default('urn:load-control'),
        headers: exportHeadersSchema,
        jobs: lineageJobsSchema,
      }).prefault({}),
      gates: section({ credentials: gateCredentialsSchema }).prefault({}),
      sources: section({ pools: sourcePoolsSchema }).prefault({}),
      /** Bulk actions (src/domain/operator/bulk-action.ts): a filter selecting more targets than this is refused. */
      bulk: section({ maxTargets: integer(500, 1, 10_000) }).prefault({}),
      console: section({
        /**
         * The console's address as people open it: every webhook and Slack message links to its subject's page
         * there. Unset: auth.oidc.publicUrl (the same console, when people sign in through a provider), else no links.
         */
        publicUrl: url(['http:', 'https:']),
        publishChecks: publishChecksSchema,
      }).prefault({}),
      monitor: section({
        /**
         * An extracting run whose partitions stop reporting is flagged (STALLED_RUN, lc_stalled_*, the console)
         * after this, well before the sweeper acts at recovery.stale.
         */
        stallAfter: duration(10 * MINUTE),
      }).prefault({}),
      logging: section({
        level: choice(['trace', 'debug', 'info', 'warn', 'error', 'fatal'], 'info'),
        format: choice(['json', 'pretty'], 'json'),
        /** Every GraphQL request at info with its request and response bodies (as the reference logs); else 2xx at debug, no bodies. */
        requests: flag(false),
        /** Bodies longer than this are cut, with how much was left out. */
        bodyMax: integer(2000, 0, 1_000_000),
      }).prefault({}),
      /** OpenTelemetry spans over OTLP/HTTP (src/tracing/): off, and its SDK not even loaded, without an endpoint. */
      tracing: section({
        /** The collector's OTLP/HTTP traces URL, e.g. http://otel-collector:4318/v1/traces. */
        endpoint: url(['http:', 'https:']),
        serviceName: z
          .string({ error: typeError('a string') })
          .min(1, 'must not be empty')
          .max(200, 'must be at most 200 characters')
          .default('load-control'),
        /** The share of new traces kept; a request that arrives with a sampled traceparent is traced as its caller decided. */
        sampleRatio: numeric(
          z.number({ error: 'must be a number between 0 and 1' }).min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1'),
        ).default(1),
        headers: exportHeadersSchema,
      }).prefault({}),
    },
    { error: typeError('a mapping of sections') },
  )
  .superRefine(
    (config, ctx) => {
      const { shutdownDelay, shutdownTimeout } = config.server;
      if (shutdownDelay >= shutdownTimeout) {
        const message = `must be shorter than server.shutdownTimeout (${formatDuration(shutdownTimeout)}), which it is part of`;
        ctx.addIssue({ code: 'custom', path: ['server', 'shutdownDelay'], message });
      }
    },
    whenValid(['server', 'shutdownDelay'], ['server', 'shutdownTimeout']),
  )
  .superRefine(
    (config, ctx) => {
      const { stale, extractQueryTimeout } = config.recovery;
      if (stale <= extractQueryTimeout) {
        const message = `must exceed recovery.extractQueryTimeout (${formatDuration(extractQueryTimeout)})`;
        ctx.addIssue({ code: 'custom', path: ['recovery', 'stale'], message });
      }
    },
    whenValid(['recovery', 'stale'], ['recovery', 'extractQueryTimeout']),
  )
  .superRefine(
    (config, ctx) => {
      const { stale } = config.recovery;
      if (config.monitor.stallAfter >= stale) {
        const message = `must be shorter than recovery.stale (${formatDuration(stale)}): a stall is flagged before the sweeper acts`;
        ctx.addIssue({ code: 'custom', path: ['monitor', 'stallAfter'], message });
      }
    },
    whenValid(['monitor', 'stallAfter'], ['recovery', 'stale']),
  )
  .superRefine(
    (config, ctx) => {
      const { timeoutSeconds } = config.nifi;
      if (config.dispatch.lease <= timeoutSeconds * SECOND) {
        const message = `must exceed nifi.timeoutSeconds (${formatDuration(timeoutSeconds * SECOND)})`;
        ctx.addIssue({ code: 'custom', path: ['dispatch', 'lease'], message });
      }
    },
    whenValid(['dispatch', 'lease'], ['nifi', 'timeoutSeconds']),
  )
  .superRefine(
    (config, ctx) => {
      if (config.lineage.enabled && !config.lineage.url) {
        ctx.addIssue({ code: 'custom', path: ['lineage', 'url'], message: 'is required when lineage.enabled is true' });
      }
    },
    whenValid(['lineage', 'enabled'], ['lineage', 'url']),
  )
  .superRefine(
    (config, ctx) => {
      const { backoffMin, backoffMax } = config.dispatch;
      if (backoffMax < backoffMin) {
        const message = `must be at least dispatch.backoffMin (${formatDuration(backoffMin)})`;
        ctx.addIssue({ code: 'custom', path: ['dispatch', 'backoffMax'], message });
      }
    },
    whenValid(['dispatch', 'backoffMin'], ['dispatch', 'backoffMax']),
  );

/**
 * Runs a cross-field rule only when the fields it compares are themselves valid, so that a file
 * with several mistakes reports all of them without rules tripping over unparsed values.
 */
function whenValid(...fields: PropertyKey[][]) {
  const overlaps = (a: readonly PropertyKey[], b: readonly PropertyKey[]) => a.slice(0, b.length).every((segment, i) => segment === b[i]);
  return {
    when: (payload: z.core.ParsePayload) =>
      !payload.issues.some(
        ({ code, path = [] }) => code !== 'unrecognized_keys' && fields.some((field) => overlaps(path, field) || overlaps(field, path)),
      ),
  };
}

export type Config = z.output<typeof configSchema>;

/** Where people open the console (console.publicUrl, else auth.oidc.publicUrl), without a trailing slash; null: unknown. */
export function consolePublicUrl(config: Pick<Config, 'console' | 'auth'>): string | null {
  const url = config.console.publicUrl ?? config.auth.oidc?.publicUrl ?? null;
  return url === null ? null : url.replace(/\/+$/, '');
}

export interface LoadConfigOptions {
  /** YAML file; falls back to env LC_CONFIG, then to built-in defaults. */
  configPath?: string;
  /** Environment to read overrides from; defaults to process.env. */
  env?: Record<string, string | undefined>;
}

/**
 * Loads the configuration: defaults < YAML file < `LC_<SECTION>__<KEY>` variables < `DATABASE_URL`/`PORT`.
 * Throws ConfigError listing every problem found.
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const path = options.configPath || env.LC_CONFIG;
  const raw = path ? readConfigFile(resolve(path)) : {};
  const problems: string[] = [];
  const sources = applyEnvironment(raw, env, problems);
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    problems.push(...result.error.issues.flatMap((issue) => describeIssue(issue, sources)));
  }
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  return result.data;
}

/** A copy of the configuration safe to log: no token digests, no passwords in URLs. */
export function describeConfig(config: Config): Record<string, unknown> {
  const copy = structuredClone(config);
  return {
    ...copy,
    database: {
      ...copy.database,
      url: redactUrl(copy.database.url),
      migrationUrl: redactUrl(copy.database.migrationUrl),
      directUrl: redactUrl(copy.database.directUrl),
    },
    nifi: { ...copy.nifi, receiverUrl: redactUrl(copy.nifi.receiverUrl) },
    tracing: {
      ...copy.tracing,
      endpoint: redactUrl(copy.tracing.endpoint),
      headers: Object.fromEntries(Object.keys(copy.tracing.headers).map((name) => [name, '***'])),
    },
    auth: {
      tokens: copy.auth.tokens.map(({ name, roles }) => ({ name, roles })),
      tokensFile: copy.auth.tokensFile,
      oidc: copy.auth.oidc && { ...copy.auth.oidc, clientSecret: copy.auth.oidc.clientSecret && '***' },
    },
    lineage: {
      ...copy.lineage,
      url: redactUrl(copy.lineage.url),
      headers: Object.fromEntries(Object.keys(copy.lineage.headers).map((name) => [name, '***'])),
    },
    // a gate receiver's credentials are secrets: the origins and the header names only
    gates: {
      credentials: copy.gates.credentials.map(({ origin, headers, airflowToken }) => ({
        origin,
        headers: Object.keys(headers),
        airflowToken: airflowToken && { username: airflowToken.username, password: '***' },
      })),
    },
    // a webhook's URL may carry its secret (Slack's do), its headers too: the origin and the header names only
    alerts: {
      webhooks: copy.alerts.webhooks.map(({ name, url, kinds, headers, format }) => ({
        name,
        origin: new URL(url).origin,
        kinds,
        headers: Object.keys(headers),
        format,
      })),
    },
  };
}

function redactUrl(value: string | null): string | null {
  if (value === null) return null;
  const parsed = new URL(value);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError([
      code === 'ENOENT' ? `config: file not found: ${path}` : `config: cannot read ${path}: ${(error as Error).message}`,
    ]);
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new ConfigError([`config: ${path}: invalid YAML: ${(error as Error).message}`]);
  }
  if (document === null || document === undefined) return {};
  if (!isMapping(document)) {
    throw new ConfigError([`config: ${path}: must be a mapping of sections (server, database, ...)`]);
  }
  // A section whose keys are all commented out parses as null; treat it as empty.
  return Object.fromEntries(Object.entries(document).map(([key, value]) => [key, value ?? {}]));
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const normalize = (name: string) => name.replace(/_/g, '').toLowerCase();

/** normalized section → [section, normalized key → key] */
const SETTINGS = new Map(
  Object.entries(configSchema.shape).map(([name, schema]) => [
    normalize(name),
    { name, keys: new Map(Object.keys(schema.unwrap().shape).map((key) => [normalize(key), key])) },
  ]),
);

/**
 * Writes environment overrides into `raw` and returns which variable set each `section.key`,
 * so that validation messages can name it. Unknown `LC_` settings are added to `problems`.
 */
function applyEnvironment(raw: Record<string, unknown>, env: Record<string, string | undefined>, problems: string[]): Map<string, string> {
  const sources = new Map<string, string>();
  const set = (sectionName: string, key: string, value: string, variable: string) => {
    const current = raw[sectionName];
    // A section that is not a mapping is reported by the schema; the override has nowhere to go.
    if (current !== undefined && !isMapping(current)) return;
    raw[sectionName] = { ...current, [key]: value };
    sources.set(`${sectionName}.${key}`, variable);
  };

  for (const [variable, value] of Object.entries(env)) {
    if (value === undefined || !variable.startsWith('LC_') || variable === 'LC_CONFIG') continue;
    const rest = variable.slice('LC_'.length);
    const separator = rest.indexOf('__');
    if (separator < 0) {
      // LC_ALL, LC_CTYPE, LC_TIME… are locale variables, not ours; only catch likely misspellings.
      if ([...SETTINGS.keys()].some((name) => normalize(rest).startsWith(name))) {
        problems.push(`config: ${variable}: not a setting; write LC_<SECTION>__<KEY>, e.g. LC_RECOVERY__STALE`);
      }
      continue;
    }
    const sectionPart = rest.slice(0, separator);
    const keyPart = rest.slice(separator + 2);
    const target = SETTINGS.get(normalize(sectionPart));
    const key = target?.keys.get(normalize(keyPart));
    if (!target) {
      problems.push(`config: ${variable}: unknown section "${sectionPart}"`);
    } else if (!key) {
      problems.push(`config: ${variable}: unknown key "${target.name}.${keyPart}"`);
    } else if (sources.has(`${target.name}.${key}`)) {
      problems.push(`config: ${variable}: ${target.name}.${key} is already set by ${sources.get(`${target.name}.${key}`)}`);
    } else {
      set(target.name, key, value, variable);
    }
  }

  // Empty values are treated as unset: deployment tools often define these variables blank.
  if (env.DATABASE_URL) set('database', 'url', env.DATABASE_URL, 'DATABASE_URL');
  if (env.PORT) set('server', 'port', env.PORT, 'PORT');
  return sources;
}

function describeIssue(issue: z.core.$ZodIssue, sources: Map<string, string>): string[] {
  const source = sources.get(issue.path.slice(0, 2).join('.'));
  const suffix = source === undefined ? '' : ` (from ${source})`;
  if (issue.code === 'unrecognized_keys') {
    const kind = issue.path.length === 0 ? 'unknown section' : 'unknown key';
    return issue.keys.map((key) => `config: ${formatPath([...issue.path, key])}: ${kind}${suffix}`);
  }
  return [`config: ${formatPath(issue.path)}: ${issue.message}${suffix}`];
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.map((segment, i) => (typeof segment === 'number' ? `[${segment}]` : `${i === 0 ? '' : '.'}${String(segment)}`)).join('');
}
