// The world the fuzz tests hit, shared by test/fuzz.test.ts and test/fuzz-documents.test.ts: the schema
// introspected over HTTP, the roles each mutation accepts, a database seeded with runs in every state and a
// valid input of every mutation against it, and a fingerprint of every nifi_ops table (row count and a hash
// of the rows) to tell whether a request changed anything.
import {
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isObjectType,
  isScalarType,
  type GraphQLInputObjectType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import { randomUUID } from 'node:crypto';
import type { TestApi, TokenName } from './api.js';
import {
  CLAIM_PUBLISH,
  HDFS_ROOT,
  JOB,
  MARK_SUCCESS,
  REPORT_PUBLISH_RESULT,
  START_BACKFILL,
  chunkInput,
  claim,
  completeRun,
  createRun,
  manifestInput,
  metric,
  recordMetrics,
  report,
  startRun,
  toPublished,
  toStageValidating,
  toFailedExtract,
  toStagingValidated,
} from './fixtures.js';
import { defineGate, observed } from './gate-fixtures.js';

export type Fingerprint = Record<string, string>;

export interface FuzzWorld {
  api: TestApi;
  schema: GraphQLSchema;
  /** A valid input of every mutation, against the seeded runs. */
  baselines: Map<string, Record<string, unknown>>;
  /** The roles a mutation accepts (nifi, operator or both). */
  roles: Map<string, TokenName[]>;
  fingerprint(): Promise<Fingerprint>;
  mutationInputType(name: string): GraphQLInputObjectType;
  /** `mutation($input: …!) { name(input: $input) { every scalar of the payload } }` */
  document(name: string): string;
}

/** Runs in every state, a gate, observations; returns a valid input of every mutation. */
async function seed(api: TestApi): Promise<Map<string, Record<string, unknown>>> {
  const extracting = await startRun(api, [5, 5, 5]);
  const owner = await claim(api, extracting.runId, '0000');
  await report(api, chunkInput(extracting, '0000', owner.claimToken, 0, 2, 2));
  const doneOwner = await claim(api, extracting.runId, '0001');
  await report(api, chunkInput(extracting, '0001', doneOwner.claimToken, 0, 1, 5));
  const failing = await startRun(api, [4]);
  const failOwner = await claim(api, failing.runId, '0000');
  const created = await createRun(api);
  const extracted = await completeRun(api);
  const validating = await toStageValidating(api);
  const staged = await toStagingValidated(api);
  const publishing = await toStagingValidated(api);
  const publishToken = randomUUID();
  await api.gql(CLAIM_PUBLISH, { input: { runId: publishing.runId, publishToken } });
  const unknown = await toStagingValidated(api);
  const unknownToken = randomUUID();
  await api.gql(CLAIM_PUBLISH, { input: { runId: unknown.runId, publishToken: unknownToken } });
  await api.gql(REPORT_PUBLISH_RESULT, { input: { runId: unknown.runId, publishToken: unknownToken, outcome: 'PUBLISH_UNKNOWN' } });
  const published = await toPublished(api);
  const succeeded = await toPublished(api);
  await recordMetrics(api, succeeded.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
  await api.gql(MARK_SUCCESS, { input: { runId: succeeded.runId, targetCount: '7' } });
  const cancellable = await startRun(api, [3]);
  const resumable = await toFailedExtract(api);
  await defineGate(api, 'FUZZ_LOAD_GATE', ['FUZZ_UP'], 'FUZZ_GATED');
  await defineGate(api, 'FUZZ_REPORT', ['FUZZ_UP']);
  await observed(api, { jobId: 'FUZZ_UP', businessDate: '2031-05-01', state: 'SUCCEEDED' });
  await observed(api, { jobId: 'FUZZ_UP', businessDate: '2031-05-02', state: 'RUNNING' });
  const backfill = await api.gql<{ startBackfill: { backfill: { backfillId: string } } }>(
    START_BACKFILL,
    {
      input: {
        jobKey: 'FUZZ_BACKFILLED',
        from: '2031-04-01',
        to: '2031-04-03',
        reprocess: 'MISSING',
        maxConcurrent: 1,
        pushReadiness: false,
      },
    },
    { token: 'operator' },
  );
  const backfillId = backfill.body.data!.startBackfill.backfill.backfillId;

  const metricInput = {
    metricName: 'STAGE_COUNT',
    expectedValue: '7',
    actualValue: '7',
    tolerance: '0',
    result: 'PASS',
    details: { q: 'select' },
  };
  const all: Record<string, Record<string, unknown>> = {
    createRun: {
      jobKey: 'FUZZ_GATED',
      businessKey: '2031-05-02',
      hdfsRoot: HDFS_ROOT,
      stageTablePrefix: 'TMP_FUZZ_',
      allowEmptySource: false,
      parameters: { source: 'APP.T' },
      idempotencyKey: 'fuzz-create',
      tags: 'team=finance,source=erp',
      flowRegistry: 'nifi-registry',
      flowBucket: 'loads',
      flowId: 'flow-1',
      flowVersion: '3',
    },
    registerManifest: { ...manifestInput(created.runId, [3, 4], { nullCount: 2 }), sourceMetricsVersion: 'v1' },
    failRun: {
      runId: created.runId,
      expectedStatus: 'CREATED',
      failStatus: 'FAILED_MANIFEST',
      errorStage: 'PG-10',
      errorCode: 'E1',
      message: 'm',
    },
    claimPartition: { runId: extracting.runId, partitionId: '0002', claimToken: randomUUID(), workerNode: 'nifi-01' },
    reportChunk: { ...chunkInput(extracting, '0000', owner.claimToken, 1, 2, 3) },
    failPartition: {
      runId: failing.runId,
      partitionId: '0000',
      claimToken: failOwner.claimToken,
      errorStage: 'EXTRACT',
      errorClass: 'SQL',
      errorCode: 'ORA-00942',
      message: 'table gone',
      attempt: '1',
    },
    recordEvent: {
      runId: extracting.runId,
      level: 'WARN',
      name: 'FUZZ_EVENT',
      jobKey: JOB,
      businessKey: extracting.businessKey,
      partitionId: '0000',
      chunkIndex: '0',
      processGroup: 'PG-20',
      processorName: 'InvokeHTTP',
      processorId: 'abc',
      nodeId: 'nifi-01',
      attemptNo: '1',
      rowCount: '1',
      byteCount: '1',
      durationMs: '1',
      errorClass: 'HTTP',
      errorCode: 'E',
      message: 'm',
      details: { a: 1 },
    },
    startValidation: { runId: extracted.runId, dispatchId: extracted.dispatchId, node: 'nifi-02' },
    recordMetrics: { runId: validating.runId, stage: 'STAGING', queryVersion: 'v1', metrics: [metricInput] },
    markStageValidated: { runId: validating.runId },
    claimPublish: { runId: staged.runId, publishToken: randomUUID() },
    reportPublishResult: {
      runId: publishing.runId,
      publishToken,
      outcome: 'PUBLISHED',
      errorCode: null,
      message: 'done',
      queryId: 'hive_20261201_q1',
      details: { hiveServer: 'hs2-01' },
    },
    markSuccess: { runId: published.runId, targetCount: '7' },
    recordCleanup: { runId: succeeded.runId, droppedTable: 'tmp_t', deletedPath: succeeded.hdfsRunPath },
    resolveUnknown: { runId: unknown.runId, resolution: 'FAILED_PUBLISH', reason: 'target untouched' },
    resendDispatch: { runId: extracted.runId, dispatchId: extracted.dispatchId, reason: 'receiver is back' },
    cancelRun: { runId: cancellable.runId, reason: 'wrong business date' },
    pauseJob: { jobKey: 'FUZZ_PAUSED', reason: 'maintenance window' },
    resumeJob: { jobKey: 'FUZZ_PAUSED', reason: 'maintenance is over' },
    startBackfill: {
      jobKey: 'FUZZ_BACKFILL_TWO',
      from: '2031-03-01',
      to: '2031-03-02',
      reprocess: 'FAILED',
      order: 'NEWEST_FIRST',
      maxConcurrent: 2,
      pushReadiness: true,
    },
    pauseBackfill: { backfillId, reason: 'source maintenance' },
    resumeBackfill: { backfillId, reason: 'source is back' },
    cancelBackfill: { backfillId, reason: 'wrong range' },
    releaseBackfillReadiness: { backfillId, reason: 'reports may go' },
    resumeRun: { runId: resumable.runId, reason: 'the source is back' },
    definePool: { name: 'fuzz-oracle', maxRunning: 4, retryAfterSeconds: 10, reason: 'protect the source' },
    assignJobToPool: { jobKey: 'FUZZ_POOLED', pool: null, reason: 'shares no source' },
    bulkAction: {
      action: 'CANCEL_RUNS',
      filter: {
        jobKey: 'FUZZ_NO_SUCH_JOB',
        status: 'CREATED',
        businessDateFrom: '2031-05-01',
        businessDateTo: '2031-05-03',
        errorCode: null,
      },
      dryRun: true,
      reason: 'NiFi outage',
    },
    endConsoleSession: { sessionId: randomUUID(), reason: 'left the company' },
    // the PUBLISH_UNKNOWN run's alert: a group present now
    acknowledgeAlertGroup: { groupKey: `PUBLISH_UNKNOWN:JOB:${JOB}`, note: 'checking the target' },
    snoozeAlertGroup: {
      groupKey: `PUBLISH_UNKNOWN:JOB:${JOB}`,
      until: new Date(Date.now() + 86_400_000).toISOString(),
      note: 'maintenance window',
    },
    reissuePartition: { runId: extracting.runId, partitionId: '0000', reason: 'worker node lost' },
    defineGate: {
      consumer: 'FUZZ_OTHER',
      requiredJobs: ['FUZZ_UP', 'FUZZ_UP2'],
      boundJobKey: null,
      notifyUrl: 'https://reports.example/gates/FUZZ_OTHER',
      notifyFormat: 'DAGSTER',
      notifyAsset: 'reports/fuzz_other',
      expectedBy: [{ jobId: 'FUZZ_UP', daysAfter: 1, time: '06:00', timeZone: 'Asia/Seoul' }],
    },
    recordObservation: {
      jobId: 'FUZZ_UP',
      businessDate: '2031-05-03',
      attempt: '1',
      runId: 'up-1',
      state: 'RUNNING',
      startedAt: '2031-05-03T06:00:00+02:00',
    },
    publish: { consumer: 'FUZZ_REPORT', businessDate: '2031-05-01', output: { file: '/reports/2031-05-01.csv', rows: 12 } },
  };
  return new Map(Object.entries(all));
}

export async function prepareFuzzWorld(api: TestApi): Promise<FuzzWorld> {
  const introspection = await api.gql<IntrospectionQuery>(getIntrospectionQuery(), {}, { token: 'viewer' });
  const schema = buildClientSchema(introspection.body.data!);
  const roles = new Map<string, TokenName[]>();
  for (const name of Object.keys(schema.getMutationType()!.getFields())) {
    // auth is decided before validation: a bare call tells whether a role may call the mutation
    const allowed: TokenName[] = [];
    for (const role of ['nifi', 'operator'] as const) {
      if ((await api.gql(`mutation { ${name}(input: {}) { __typename } }`, {}, { token: role })).status !== 403) allowed.push(role);
    }
    roles.set(name, allowed);
  }
  const baselines = await seed(api);
  const { rows } = await api.sql.query<{ table_name: string }>(
    // process_instance is the API process's own heartbeat (every 10 s), not what a request changed
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'nifi_ops' AND table_type = 'BASE TABLE' AND table_name <> 'process_instance' ORDER BY table_name`,
  );
  const fingerprintSql = rows
    .map(
      ({ table_name: t }) =>
        `SELECT '${t}' AS name, count(*) || ':' || COALESCE(md5(string_agg(md5(t::text), '' ORDER BY md5(t::text))), '') AS print FROM nifi_ops.${t} t`,
    )
    .join(' UNION ALL ');

  const mutationInputType = (name: string): GraphQLInputObjectType => {
    const field = schema.getMutationType()!.getFields()[name]!;
    const type = getNamedType(field.args.find((a) => a.name === 'input')!.type);
    if (!isInputObjectType(type)) throw new Error(`${name}: input is not an input object`);
    return type;
  };
  return {
    api,
    schema,
    baselines,
    roles,
    mutationInputType,
    async fingerprint() {
      const result = await api.sql.query<{ name: string; print: string }>(fingerprintSql);
      return Object.fromEntries(result.rows.map((r) => [r.name, r.print]));
    },
    document(name) {
      const field = schema.getMutationType()!.getFields()[name]!;
      const payload = getNamedType(field.type);
      const scalars = isObjectType(payload)
        ? Object.values(payload.getFields())
            .filter((f) => {
              const t = getNamedType(f.type);
              return isScalarType(t) || isEnumType(t);
            })
            .map((f) => f.name)
        : [];
      return `mutation($input: ${mutationInputType(name).name}!) { ${name}(input: $input) { ${scalars.length ? scalars.join(' ') : '__typename'} } }`;
    },
  };
}

export function changedTables(before: Fingerprint, after: Fingerprint): string[] {
  return Object.keys(after).filter((t) => before[t] !== after[t]);
}

export async function pooled<T, R>(items: T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!);
    }),
  );
  return results;
}

export interface PostOptions {
  token: string | null;
  contentType?: string;
  /** Gives up after this long: the outcome's status is then 0. */
  timeoutMs?: number;
}

export interface PostOutcome {
  /** 0: no answer within the time limit, or the connection failed. */
  status: number;
  /** extensions.code of every error in the body. */
  codes: string[];
  code: string | undefined;
  /** The first error's extensions.details. */
  details: Record<string, unknown> | undefined;
  headerCode: string | null;
  /** The body's first 256 bytes: what NiFi's InvokeHTTP keeps of an error body by default. */
  head?: string;
  ms: number;
  /** Why there is no status, when there is none. */
  failure?: string;
}

/** POSTs a raw body to /graphql: bodies no GraphQL client would produce, answers judged by status and codes. */
export async function postGraphql(url: string, body: string, options: PostOptions): Promise<PostOutcome> {
  const started = performance.now();
  try {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: {
        'Content-Type': options.contentType ?? 'application/json',
        ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}),
      },
      body,
      signal: options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString('utf8');
    let parsed: { errors?: Array<{ extensions?: { code?: string; details?: Record<string, unknown> } }> } = {};
    try {
      parsed = JSON.parse(text);
    } catch {
      // a non-JSON answer is judged by its status alone
    }
    const codes = (parsed.errors ?? []).map((e) => String(e.extensions?.code));
    return {
      status: response.status,
      codes,
      code: codes[0],
      details: parsed.errors?.[0]?.extensions?.details,
      headerCode: response.headers.get('x-error-code'),
      head: bytes.subarray(0, 256).toString('latin1'),
      ms: performance.now() - started,
    };
  } catch (error) {
    return {
      status: 0,
      codes: [],
      code: undefined,
      details: undefined,
      headerCode: null,
      ms: performance.now() - started,
      failure: (error as Error).name,
    };
  }
}
