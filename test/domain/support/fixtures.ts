// The domain tier's world: a database cloned from the migrated template and the domain operations performed
// directly, each in the mode it declares (src/db/operation.ts) — no HTTP, no GraphQL. Fixtures build the ledger
// through those operations, as the API's resolvers would, with the actor named here.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import type { Config } from '../../../src/config/config.js';
import { DomainError } from '../../../src/contract/errors.js';
import { createDb, type Db } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { type ReportChunkCommand, reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { currentDecisions, listDecisions, MAX_DECISIONS_PAGE } from '../../../src/domain/gate/decisions.js';
import { type DefineGateCommand, defineGateOperation } from '../../../src/domain/gate/define-gate.js';
import { readiness } from '../../../src/domain/gate/ledger.js';
import type { ObservationState } from '../../../src/domain/gate/observation-states.js';
import { recordObservationOperation } from '../../../src/domain/gate/record-observation.js';
import { leaseDispatchesOperation } from '../../../src/domain/dispatch/lease.js';
import { markReceivedOperation } from '../../../src/domain/dispatch/deliver.js';
import { type RegisterManifestCommand, registerManifestOperation } from '../../../src/domain/manifest/register-manifest.js';
import { cancelRunOperation } from '../../../src/domain/operator/cancel-run.js';
import { claimPartitionOperation } from '../../../src/domain/partitions/claim-partition.js';
import { type FailPartitionCommand, failPartitionOperation } from '../../../src/domain/partitions/fail-partition.js';
import { reissuePartitionOperation } from '../../../src/domain/partitions/reissue-partition.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import { markSuccessOperation } from '../../../src/domain/publish/mark-success.js';
import { reportPublishResultOperation } from '../../../src/domain/publish/report-publish-result.js';
import { type CreateRunCommand, type CreateRunResult, createRunOperation } from '../../../src/domain/runs/create-run.js';
import { type FailRunCommand, failRunOperation } from '../../../src/domain/runs/fail-run.js';
import { markStageValidatedOperation } from '../../../src/domain/validation/mark-stage-validated.js';
import { type RecordMetricsCommand, recordMetricsOperation } from '../../../src/domain/validation/record-metrics.js';
import { startValidationOperation } from '../../../src/domain/validation/start-validation.js';
import { type ConfigOverrides, testConfig } from '../../support/api.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { chunkInput, HDFS_ROOT, JOB, manifestInput, type PartitionSpec } from '../../support/fixtures.js';

/** The actor of every fixture: the token name the test API gives the NiFi cluster. */
export const ACTOR = 'nifi-cluster';

export interface DomainTest {
  database: TestDatabase;
  /** The handle domain functions run on. */
  db: Db;
  /** Direct SQL for assertions and for ageing timestamps. */
  sql: pg.Pool;
  config: Config;
  close(): Promise<void>;
}

export async function startDomainTest(overrides: ConfigOverrides = {}): Promise<DomainTest> {
  const database = await createTestDatabase();
  const config = testConfig({ ...overrides, database: { ...overrides.database, url: database.url } });
  const db = createDb(database.url, { poolSize: 10, timeouts: config.database });
  const sql = new pg.Pool({ connectionString: database.url, max: 4 });
  // a connection still closing when the test database is dropped must not fail the run
  sql.on('error', () => undefined);
  return {
    database,
    db,
    sql,
    config,
    async close() {
      await Promise.allSettled([db.close(), sql.end()]);
      await database.drop();
    },
  };
}

export interface DomainRun extends CreateRunResult {
  businessKey: string;
}

/** A CREATED run of JOB with a new business key. */
export async function createdRun(t: DomainTest, overrides: Partial<CreateRunCommand> = {}): Promise<DomainRun> {
  const cmd: CreateRunCommand = {
    jobKey: JOB,
    businessKey: `BK_${randomUUID().slice(0, 8)}`,
    hdfsRoot: HDFS_ROOT,
    stageTablePrefix: 'TMP_INSP_DTL_',
    allowEmptySource: false,
    parameters: {},
    idempotencyKey: null,
    actor: ACTOR,
    ...overrides,
  };
  const run = await perform(t.db, createRunOperation, cmd);
  return { ...run, businessKey: cmd.businessKey };
}

/** A run in EXTRACTING with the given partition row counts (test/support/fixtures.ts's manifest). */
export async function startedRun(t: DomainTest, counts: number[], create: Partial<CreateRunCommand> = {}): Promise<DomainRun> {
  const run = await createdRun(t, create);
  await perform(t.db, registerManifestOperation, manifestCommand(run.runId, counts));
  return run;
}

export async function claimed(t: DomainTest, runId: string, partitionId: string, claimToken = randomUUID()) {
  const result = await perform(t.db, claimPartitionOperation, { runId, partitionId, claimToken, workerNode: 'nifi-01', actor: ACTOR });
  return { ...result, claimToken };
}

/** The one chunk (index chunkIndex of chunkCount) of a partition, as the NiFi kit reports it (chunkInput, parsed). */
export function chunk(
  run: DomainRun,
  partitionId: string,
  claimToken: string,
  chunkIndex: number,
  chunkCount: number,
  recordCount: number,
): ReportChunkCommand {
  const input = chunkInput(run, partitionId, claimToken, chunkIndex, chunkCount, recordCount);
  return { ...input, chunkIndex, chunkCount, recordCount: BigInt(input.recordCount), byteCount: BigInt(input.byteCount), actor: ACTOR };
}

/** Claims every non-empty partition and reports each as one chunk: the run reaches EXTRACTED_VALIDATED. */
export async function extractedRun(
  t: DomainTest,
  counts: number[] = [3, 4],
  create: Partial<CreateRunCommand> = {},
): Promise<DomainRun & { dispatchId: string }> {
  const run = await startedRun(t, counts, create);
  for (const [i, count] of counts.entries()) {
    if (count === 0) continue;
    const partitionId = String(i).padStart(4, '0');
    const { claimToken } = await claimed(t, run.runId, partitionId);
    await perform(t.db, reportChunkOperation, chunk(run, partitionId, claimToken, 0, 1, count));
  }
  const { rows } = await t.sql.query<{ dispatch_id: string; status: string }>(
    `SELECT dispatch_id::text, r.status FROM nifi_ops.load_dispatch d JOIN nifi_ops.load_run r USING (run_id)
      WHERE run_id = $1 AND dispatch_type = 'VALIDATE_RUN'`,
    [run.runId],
  );
  expect(rows[0]?.status).toBe('EXTRACTED_VALIDATED');
  return { ...run, dispatchId: rows[0]!.dispatch_id };
}

/** extractedRun, validated: its STAGING metrics pass with STAGE_COUNT = the extracted count — STAGING_VALIDATED. */
export async function stagingValidatedRun(t: DomainTest, counts: number[] = [3, 4], create: Partial<CreateRunCommand> = {}) {
  const run = await stageValidatingRun(t, counts, create);
  await stagingPassed(t, run.runId, String(counts.reduce((a, b) => a + b, 0)));
  return run;
}

const pass = (metricName: string, value: string) => measured(metricName, 'PASS', value);

/** stagingValidatedRun, claimed for publishing by a new publish token: PUBLISHING. */
export async function publishingRun(t: DomainTest, counts: number[] = [3, 4], create: Partial<CreateRunCommand> = {}) {
  const run = await stagingValidatedRun(t, counts, create);
  const publishToken = randomUUID();
  const claim = await perform(t.db, claimPublishOperation, { runId: run.runId, publishToken, actor: ACTOR });
  expect(claim).toEqual({ claimed: true, runStatus: 'PUBLISHING' });
  return { ...run, publishToken };
}

/** publishingRun, published: PUBLISHED, with the publish token that owns it. */
export async function publishedRun(t: DomainTest, counts: number[] = [3, 4], create: Partial<CreateRunCommand> = {}) {
  const run = await publishingRun(t, counts, create);
  const result = await perform(t.db, reportPublishResultOperation, {
    runId: run.runId,
    publishToken: run.publishToken,
    outcome: 'PUBLISHED',
    errorCode: null,
    message: '',
    queryId: null,
    details: {},
    actor: ACTOR,
  });
  expect(result).toEqual({ runStatus: 'PUBLISHED', changed: true });
  return run;
}

/** A PUBLISHED run (of 7 rows) validated and marked SUCCESS. */
export async function succeeded(t: DomainTest, runId: string): Promise<void> {
  await perform(t.db, recordMetricsOperation, {
    runId,
    stage: 'TARGET',
    queryVersion: 'v1',
    metrics: [pass('TARGET_COUNT', '7')],
    actor: ACTOR,
  });
  const result = await perform(t.db, markSuccessOperation, { runId, targetCount: 7n, actor: ACTOR });
  expect(result.runStatus).toBe('SUCCESS');
}

// ---- the business-date gate ----

/** Defines (or redefines) a gate, as an operator would. */
export function gateDefined(t: DomainTest, consumer: string, requiredJobs: string[], more: Partial<DefineGateCommand> = {}) {
  return perform(t.db, defineGateOperation, {
    consumer,
    requiredJobs,
    boundJobKey: null,
    notifyUrl: null,
    expectedBy: [],
    actor: 'alice-operator',
    ...more,
  });
}

export interface Observation {
  jobId: string;
  businessDate: string;
  attempt?: number;
  state: ObservationState;
}

/** Records an upstream attempt's observation; its run id and start are derived from job, date and attempt. */
export function observed(t: DomainTest, { jobId, businessDate, attempt = 1, state }: Observation) {
  return perform(t.db, recordObservationOperation, {
    jobId,
    businessDate,
    attempt,
    runId: `run-${jobId}-${businessDate}-${attempt}`,
    state,
    startedAt: new Date(`${businessDate}T06:00:00Z`),
    actor: ACTOR,
  });
}

/** The recorded readiness decisions of a consumer for a date, oldest first. */
export async function decisionsOf(t: DomainTest, consumer: string, businessDate: string) {
  return (await listDecisions(t.db.prisma, consumer, businessDate, MAX_DECISIONS_PAGE)).reverse();
}

/** A consumer's readiness for a date with its current decision (null before the first). */
export async function readinessOf(t: DomainTest, consumer: string, businessDate: string) {
  const [decision] = await currentDecisions(t.db.prisma, [{ consumer, businessDate }]);
  return { ...(await readiness(t.db.prisma, consumer, businessDate)), decision };
}

// ---- the manifest ----

/** test/support/fixtures.ts's manifestInput as registerManifest receives it once its input is parsed. */
export function manifestCommand(runId: string, counts: number[], options: { nullCount?: number } = {}): RegisterManifestCommand {
  const input = manifestInput(runId, counts, options) as Record<'snapshotScn' | 'sourceMinSplit' | 'sourceMaxSplit', string> &
    Record<'sourceCount' | 'sourceNullSplitCount' | 'plannedPartitionCount', string> & {
      sourceMetrics: Record<string, string>;
      partitions: PartitionSpec[];
    };
  return {
    runId,
    snapshotScn: input.snapshotScn,
    sourceCount: BigInt(input.sourceCount),
    sourceNullSplitCount: BigInt(input.sourceNullSplitCount),
    sourceMinSplit: input.sourceMinSplit,
    sourceMaxSplit: input.sourceMaxSplit,
    plannedPartitionCount: Number(input.plannedPartitionCount),
    sourceMetrics: input.sourceMetrics,
    sourceMetricsVersion: 'v1',
    partitions: input.partitions.map((p) => ({ ...p, expectedRowCount: BigInt(p.expectedRowCount) })),
    actor: ACTOR,
  };
}

/** The contract error an operation raised; the test fails when it answered instead, or failed otherwise. */
export async function refusal(answer: Promise<unknown>): Promise<DomainError> {
  const error = await answer.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

// ---- partitions ----

/** The actor of an operator's call: the token name the test API gives the operator. */
export const OPERATOR = 'alice-operator';

/** The owner's failPartition, with the kit's usual SQL error unless overridden. */
export function partitionFailed(t: DomainTest, runId: string, claimToken: string, overrides: Partial<FailPartitionCommand> = {}) {
  return perform(t.db, failPartitionOperation, {
    runId,
    partitionId: '0000',
    claimToken,
    errorStage: 'EXTRACT',
    errorClass: 'SQL',
    errorCode: 'ORA-00942',
    message: 'table missing',
    attempt: null,
    actor: ACTOR,
    ...overrides,
  });
}

/** An operator's reissuePartition, as the API performs it. */
export function reissued(t: DomainTest, runId: string, partitionId: string, reason = 'worker node nifi-01 is gone') {
  return perform(t.db, reissuePartitionOperation, { runId, partitionId, reason, errorCode: 'OPERATOR_REISSUE', actor: OPERATOR });
}

// ---- runs ----

/** NiFi's failRun: by default a CREATED run failed at its manifest. */
export function runFailed(t: DomainTest, runId: string, overrides: Partial<FailRunCommand> = {}) {
  return perform(t.db, failRunOperation, {
    runId,
    expectedStatus: 'CREATED',
    failStatus: 'FAILED_MANIFEST',
    errorStage: 'MANIFEST',
    errorCode: 'X',
    message: '',
    actor: ACTOR,
    ...overrides,
  });
}

/** An operator's cancelRun. */
export function cancelled(t: DomainTest, runId: string, reason = 'not needed') {
  return perform(t.db, cancelRunOperation, { runId, reason, actor: OPERATOR });
}

// ---- more stages and the outbox ----

/** extractedRun whose validation a node started: STAGE_VALIDATING. */
export async function stageValidatingRun(t: DomainTest, counts: number[] = [3, 4], create: Partial<CreateRunCommand> = {}) {
  const run = await extractedRun(t, counts, create);
  await validationStarted(t, run);
  return run;
}

/** A node starts the validation an EXTRACTED_VALIDATED run's VALIDATE_RUN call asked for: STAGE_VALIDATING. */
export async function validationStarted(t: DomainTest, run: { runId: string; dispatchId: string }) {
  const started = await perform(t.db, startValidationOperation, {
    runId: run.runId,
    dispatchId: run.dispatchId,
    node: 'nifi-01',
    actor: ACTOR,
  });
  expect(started.started).toBe(true);
}

/** A STAGE_VALIDATING run's STAGING metrics pass with this STAGE_COUNT, and it is marked: STAGING_VALIDATED. */
export async function stagingPassed(t: DomainTest, runId: string, stageCount: string) {
  await perform(t.db, recordMetricsOperation, {
    runId,
    stage: 'STAGING',
    queryVersion: 'v1',
    metrics: [pass('STAGE_COUNT', stageCount), pass('DUP_PK_COUNT', '0')],
    actor: ACTOR,
  });
  const validated = await perform(t.db, markStageValidatedOperation, { runId, actor: ACTOR });
  expect(validated.stageValidated).toBe(true);
}

/** A measured metric, its expected value the actual one (test/support/fixtures.ts's metric). */
export function measured(
  metricName: string,
  result: RecordMetricsCommand['metrics'][number]['result'] = 'PASS',
  actualValue: string | null = '0',
): RecordMetricsCommand['metrics'][number] {
  return { metricName, result, actualValue, expectedValue: actualValue, tolerance: null, details: {} };
}

/** NiFi's recordMetrics. */
export function metricsRecorded(
  t: DomainTest,
  runId: string,
  stage: RecordMetricsCommand['stage'],
  metrics: RecordMetricsCommand['metrics'],
  queryVersion = 'v1',
) {
  return perform(t.db, recordMetricsOperation, { runId, stage, queryVersion, metrics, actor: ACTOR });
}

// ---- publishing ----

/** publishingRun whose outcome PG-50 could not tell: PUBLISH_UNKNOWN, waiting for an operator. */
export async function publishUnknownRun(t: DomainTest, errorCode: string | null = null) {
  const run = await publishingRun(t);
  const result = await perform(t.db, reportPublishResultOperation, {
    runId: run.runId,
    publishToken: run.publishToken,
    outcome: 'PUBLISH_UNKNOWN',
    errorCode,
    message: 'no answer from HiveServer2',
    queryId: null,
    details: {},
    actor: ACTOR,
  });
  expect(result).toEqual({ runStatus: 'PUBLISH_UNKNOWN', changed: true });
  return run;
}

/** A dispatcher's pass whose receiver answered 200 to every due call: leased, then marked received. Returns the ids. */
export async function deliveredDueCalls(t: DomainTest): Promise<string[]> {
  const { leased } = await perform(t.db, leaseDispatchesOperation, {
    batch: 100,
    leaseMs: 60_000,
    alertReceivers: [],
    lineage: false,
    nifi: true,
  });
  await perform(
    t.db,
    markReceivedOperation,
    leased.map((d) => ({ dispatchId: d.dispatchId, dispatchType: d.dispatchType, httpStatus: 200 })),
  );
  return leased.map((d) => d.dispatchId);
}

/** observed, with the run id and the start (ISO 8601, any offset) given rather than derived. */
export function observedAs(t: DomainTest, observation: Observation & { runId?: string; startedAt?: string }) {
  const { jobId, businessDate, attempt = 1, state } = observation;
  return perform(t.db, recordObservationOperation, {
    jobId,
    businessDate,
    attempt,
    runId: observation.runId ?? `run-${jobId}-${businessDate}-${attempt}`,
    state,
    startedAt: new Date(observation.startedAt ?? `${businessDate}T06:00:00Z`),
    actor: ACTOR,
  });
}

/** A run failed: unless told otherwise, a CREATED one at its manifest (FAILED_MANIFEST, BAD_PLAN), which raises RUN_FAILED. */
export async function failedRun(t: DomainTest, runId: string, more: Partial<FailRunCommand> = {}) {
  const result = await runFailed(t, runId, { errorCode: 'BAD_PLAN', ...more });
  expect(result.changed).toBe(true);
  return result;
}
