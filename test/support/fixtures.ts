// Fixtures built through the public operations (ref §10 helpers, re-expressed for GraphQL).
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { documentText } from '../../schema/documents/graphql.js';
import { NIFI_REQUESTS } from '../../schema/documents/nifi.js';
import * as operator from '../../schema/documents/operator.js';
import type { TestApi } from './api.js';

export const JOB = 'ORACLE_INSP_DTL_DAILY';
export const HDFS_ROOT = '/data/nifi/stage';

// The NiFi calls as the kit sends them and the operator's mutations, as text: one document each, in schema/documents/.
const kit = (id: keyof typeof NIFI_REQUESTS): string => documentText(NIFI_REQUESTS[id]);
export const CREATE_RUN = kit('PG-10/createRun');
export const REGISTER_MANIFEST = kit('PG-10/registerManifest');
export const CLAIM = kit('PG-20/claimPartition');
export const REPORT = kit('PG-20/reportChunk');
export const FAIL_PARTITION = kit('PG-20/failPartition');
export const FAIL_RUN = kit('PG-10/failRun');
export const START_VALIDATION = kit('PG-40/startValidation');
export const RECORD_METRICS = kit('PG-40/recordMetrics');
export const MARK_STAGE_VALIDATED = kit('PG-40/markStageValidated');
export const CLAIM_PUBLISH = kit('PG-50/claimPublish');
export const REPORT_PUBLISH_RESULT = kit('PG-50/reportPublishResult');
export const MARK_SUCCESS = kit('PG-60/markSuccess');
export const CANCEL_RUN = documentText(operator.CANCEL_RUN);
export const REISSUE_PARTITION = documentText(operator.REISSUE_PARTITION);
export const START_BACKFILL = documentText(operator.START_BACKFILL);
export const RESUME_RUN = documentText(operator.RESUME_RUN);
export const RUN = `query($runId: UUID!) { run(runId: $runId) {
  runId jobKey businessKey status snapshotScn sourceCount expectedPartitionCount successPartitionCount
  failedPartitionCount extractedCount stagingCount targetCount hdfsRunPath stageTable errorStage errorCode errorMessage
  partitionCounts { status count }
  partitions { partitionId status expectedRowCount actualRowCount fileCount attemptCount workerNode errorCode }
  dispatches { dispatchId dispatchType partitionId status attemptCount }
  events(last: 50) { name level partitionId errorCode message actor } } }`;

export interface PartitionSpec {
  partitionId: string;
  lowerBound: string | null;
  upperBound: string | null;
  upperInclusive: boolean;
  isNullPartition: boolean;
  expectedRowCount: string;
}

/** Contiguous ranges [1+i*1000, 1+(i+1)*1000), the last inclusive, plus an optional NULL partition. */
export function partitionsFor(counts: number[], nullCount?: number): PartitionSpec[] {
  const parts: PartitionSpec[] = counts.map((count, i) => ({
    partitionId: String(i).padStart(4, '0'),
    lowerBound: String(1 + i * 1000),
    upperBound: String(1 + (i + 1) * 1000),
    upperInclusive: i === counts.length - 1,
    isNullPartition: false,
    expectedRowCount: String(count),
  }));
  if (nullCount !== undefined) {
    parts.push({
      partitionId: 'NULL',
      lowerBound: null,
      upperBound: null,
      upperInclusive: false,
      isNullPartition: true,
      expectedRowCount: String(nullCount),
    });
  }
  return parts;
}

export function manifestInput(runId: string, counts: number[], options: { nullCount?: number } = {}): Record<string, unknown> {
  const partitions = partitionsFor(counts, options.nullCount);
  const total = counts.reduce((a, b) => a + b, 0) + (options.nullCount ?? 0);
  return {
    runId,
    snapshotScn: '1234567890',
    sourceCount: String(total),
    sourceNullSplitCount: String(options.nullCount ?? 0),
    sourceMinSplit: '1',
    sourceMaxSplit: String(1 + counts.length * 1000),
    plannedPartitionCount: String(partitions.length),
    sourceMetrics: { AMOUNT_SUM: '123.45' },
    partitions,
  };
}

export interface CreatedRun {
  runId: string;
  hdfsRunPath: string;
  stageTable: string;
  businessKey: string;
}

export async function createRun(api: TestApi, overrides: Record<string, unknown> = {}): Promise<CreatedRun> {
  const businessKey = (overrides.businessKey as string) ?? `BK_${randomUUID().slice(0, 8)}`;
  const res = await api.gql<{ createRun: CreatedRun }>(CREATE_RUN, {
    input: { jobKey: JOB, businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_', ...overrides },
  });
  expect(res.body.errors).toBeUndefined();
  return { ...res.body.data!.createRun, businessKey };
}

/** Fails a CREATED run at its manifest (FAILED_MANIFEST, BAD_PLAN): an ended run that raises RUN_FAILED. */
export async function failCreatedRun(api: TestApi, runId: string): Promise<void> {
  const res = await api.gql<{ failRun: { changed: boolean } }>(FAIL_RUN, {
    input: {
      runId,
      expectedStatus: 'CREATED',
      failStatus: 'FAILED_MANIFEST',
      errorStage: 'MANIFEST',
      errorCode: 'BAD_PLAN',
      message: 'no plan',
    },
  });
  expect(res.body.data!.failRun.changed).toBe(true);
}

/** A run in EXTRACTING with the given partition row counts. */
export async function startRun(
  api: TestApi,
  counts: number[],
  options: { nullCount?: number; create?: Record<string, unknown> } = {},
): Promise<CreatedRun> {
  const run = await createRun(api, options.create);
  const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, counts, options) });
  expect(res.body.errors).toBeUndefined();
  return run;
}

/**
 * A run of `counts` whose partitions in `succeeded` were extracted (one chunk each) before partition 0001's owner
 * failed it: FAILED_EXTRACT, resumable. Chunk files are named by claim token, as the kit names them.
 */
export async function toFailedExtract(
  api: TestApi,
  counts: number[] = [3, 4, 5],
  succeeded: string[] = ['0000'],
  create: Record<string, unknown> = {},
): Promise<CreatedRun> {
  const run = await startRun(api, counts, { create });
  for (const partitionId of succeeded) {
    const owner = await claim(api, run.runId, partitionId);
    const input = chunkInput(run, partitionId, owner.claimToken, 0, 1, counts[Number(partitionId)]!);
    await report(api, { ...input, hdfsPath: `${run.hdfsRunPath}/part-${partitionId}-${owner.claimToken.slice(0, 8)}-0.parquet` });
  }
  const failing = await claim(api, run.runId, '0001');
  const res = await api.gql<{ failPartition: { runStatus: string } }>(FAIL_PARTITION, {
    input: {
      runId: run.runId,
      partitionId: '0001',
      claimToken: failing.claimToken,
      errorStage: 'EXTRACT',
      errorClass: 'SQL',
      errorCode: 'ORA-03113',
      message: 'end-of-file on communication channel',
    },
  });
  expect(res.body.data?.failPartition.runStatus).toBe('FAILED_EXTRACT');
  return run;
}

export async function claim(api: TestApi, runId: string, partitionId: string, claimToken = randomUUID(), workerNode = 'nifi-01') {
  const res = await api.gql<{ claimPartition: { claimed: boolean; runStatus: string; partitionStatus: string; attempt: number } }>(CLAIM, {
    input: { runId, partitionId, claimToken, workerNode },
  });
  return { ...res, claimToken, result: res.body.data?.claimPartition };
}

export function chunkInput(
  run: CreatedRun,
  partitionId: string,
  claimToken: string,
  chunkIndex: number,
  chunkCount: number,
  recordCount: number,
) {
  return {
    runId: run.runId,
    partitionId,
    claimToken,
    chunkIndex: String(chunkIndex),
    chunkCount: String(chunkCount),
    fragmentIdentifier: `frag-${partitionId}`,
    hdfsPath: `${run.hdfsRunPath}/part-${partitionId}-${String(chunkIndex).padStart(6, '0')}.parquet`,
    recordCount: String(recordCount),
    byteCount: String(recordCount * 10),
  };
}

export type ChunkResult = {
  recorded: boolean;
  partitionStatus: string;
  runStatus: string;
  receivedChunks: number;
  chunkCount: number;
  validationScheduled: boolean;
};

export async function report(api: TestApi, input: Record<string, unknown>) {
  const res = await api.gql<{ reportChunk: ChunkResult }>(REPORT, { input });
  return { ...res, result: res.body.data?.reportChunk };
}

/** Claims every non-empty partition and reports each as one chunk: the run reaches EXTRACTED_VALIDATED. */
export async function completeRun(api: TestApi, counts: number[] = [3, 4], options: { create?: Record<string, unknown> } = {}) {
  const run = await startRun(api, counts, options);
  for (const [i, count] of counts.entries()) {
    if (count === 0) continue;
    const pid = String(i).padStart(4, '0');
    const { claimToken } = await claim(api, run.runId, pid);
    const r = await report(api, chunkInput(run, pid, claimToken, 0, 1, count));
    expect(r.body.errors).toBeUndefined();
  }
  const { rows } = await api.sql.query<{ dispatch_id: string; status: string }>(
    `SELECT dispatch_id::text, r.status FROM nifi_ops.load_dispatch d JOIN nifi_ops.load_run r USING (run_id)
      WHERE run_id = $1 AND dispatch_type = 'VALIDATE_RUN'`,
    [run.runId],
  );
  expect(rows[0]?.status).toBe('EXTRACTED_VALIDATED');
  return { ...run, dispatchId: rows[0]!.dispatch_id };
}

// ---- after extraction: validation and publishing (ref §10 metrics, to_staging_validated, to_published) ----

export interface MetricSpec {
  metricName: string;
  result: 'PASS' | 'FAIL' | 'WARN';
  actualValue?: string | null;
  expectedValue?: string | null;
}

export const metric = (metricName: string, result: MetricSpec['result'] = 'PASS', actualValue: string | null = '0'): MetricSpec => ({
  metricName,
  result,
  actualValue,
  expectedValue: actualValue,
});

export async function recordMetrics(api: TestApi, runId: string, stage: string, metrics: MetricSpec[], queryVersion = 'v1') {
  const res = await api.gql<{ recordMetrics: { recorded: number; failCount: number; runStatus: string } }>(RECORD_METRICS, {
    input: { runId, stage, queryVersion, metrics },
  });
  return { ...res, result: res.body.data?.recordMetrics };
}

/** completeRun, then the validation flow starts: STAGE_VALIDATING. */
export async function toStageValidating(api: TestApi, counts: number[] = [3, 4], options: { create?: Record<string, unknown> } = {}) {
  const run = await completeRun(api, counts, options);
  const res = await api.gql(START_VALIDATION, { input: { runId: run.runId, dispatchId: run.dispatchId, node: 'nifi-01' } });
  expect(res.body.data?.startValidation?.started).toBe(true);
  return run;
}

/** STAGING metrics pass with STAGE_COUNT = the extracted count: STAGING_VALIDATED. */
export async function toStagingValidated(api: TestApi, counts: number[] = [3, 4], options: { create?: Record<string, unknown> } = {}) {
  const run = await toStageValidating(api, counts, options);
  const total = String(counts.reduce((a, b) => a + b, 0));
  const recorded = await recordMetrics(api, run.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', total), metric('DUP_PK_COUNT')]);
  expect(recorded.body.errors).toBeUndefined();
  const res = await api.gql(MARK_STAGE_VALIDATED, { input: { runId: run.runId } });
  expect(res.body.data?.markStageValidated?.stageValidated).toBe(true);
  return run;
}

/** Claimed and published: PUBLISHED, with the publish token that owns it. */
/** A run whose publish outcome PG-50 could not tell: PUBLISH_UNKNOWN, waiting for an operator. */
export async function toPublishUnknown(api: TestApi, errorCode?: string, options: { create?: Record<string, unknown> } = {}) {
  const run = await toStagingValidated(api, [3, 4], options);
  const publishToken = randomUUID();
  await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
  const res = await api.gql(REPORT_PUBLISH_RESULT, {
    input: { runId: run.runId, publishToken, outcome: 'PUBLISH_UNKNOWN', errorCode, message: 'no answer from HiveServer2' },
  });
  expect(res.body.data?.reportPublishResult?.runStatus).toBe('PUBLISH_UNKNOWN');
  return { ...run, publishToken };
}

export async function toPublished(api: TestApi, counts: number[] = [3, 4], options: { create?: Record<string, unknown> } = {}) {
  const run = await toStagingValidated(api, counts, options);
  const publishToken = randomUUID();
  const claimed = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
  expect(claimed.body.data?.claimPublish?.claimed).toBe(true);
  const res = await api.gql(REPORT_PUBLISH_RESULT, { input: { runId: run.runId, publishToken, outcome: 'PUBLISHED' } });
  expect(res.body.data?.reportPublishResult).toEqual({ runStatus: 'PUBLISHED', changed: true });
  return { ...run, publishToken };
}

/** What startValidation answers every call after the one that started the validation. */
export const LOST_VALIDATION_START = {
  started: false,
  jobKey: null,
  businessKey: null,
  snapshotScn: null,
  hdfsRunPath: null,
  stageTable: null,
  sourceCount: null,
  extractedCount: null,
  sourceMetrics: {},
};

/** A run's partitions (status, owner, claims) and how many dispatches, events and written files it has. */
export async function partitionSnapshot(world: Pick<TestApi, 'sql'>, runId: string) {
  const { rows } = await world.sql.query(
    `SELECT (SELECT json_agg(p ORDER BY partition_id) FROM (SELECT partition_id, status, claim_token, attempt_count
               FROM nifi_ops.load_partition WHERE run_id = $1) p) AS partitions,
            (SELECT count(*)::int FROM nifi_ops.load_dispatch WHERE run_id = $1) AS dispatches,
            (SELECT count(*)::int FROM nifi_ops.load_event WHERE run_id = $1) AS events,
            (SELECT count(*)::int FROM nifi_ops.load_file WHERE run_id = $1 AND status = 'WRITTEN') AS written`,
    [runId],
  );
  return rows[0];
}
