// A run's steps as NiFi and an operator take them, through GraphQL only and without vitest, so that
// scripts/make-upgrade-fixture.ts can drive an old commit's API and test/upgrade.test.ts the new one alike.
import { randomUUID } from 'node:crypto';
import { documentText } from '../../schema/documents/graphql.js';
import * as operator from '../../schema/documents/operator.js';
import type { TestApi, TokenName } from './api.js';
import {
  CLAIM,
  CLAIM_PUBLISH,
  CREATE_RUN,
  MARK_STAGE_VALIDATED,
  MARK_SUCCESS,
  RECORD_METRICS,
  REGISTER_MANIFEST,
  REPORT,
  REPORT_PUBLISH_RESULT,
  START_VALIDATION,
  manifestInput,
} from './fixtures.js';

export type Gql = TestApi['gql'];

export const RESOLVE_UNKNOWN = documentText(operator.RESOLVE_UNKNOWN);
export const RESEND_DISPATCH = documentText(operator.RESEND_DISPATCH);
const RUN_STATE = `query($runId: UUID!) { run(runId: $runId) {
  runId jobKey businessKey status hdfsRunPath extractedCount stagingCount targetCount
  partitions { partitionId status expectedRowCount actualRowCount }
  dispatches { dispatchId dispatchType status attemptCount } } }`;

export interface RunState {
  runId: string;
  jobKey: string;
  businessKey: string;
  status: string;
  hdfsRunPath: string;
  extractedCount: number | null;
  stagingCount: number | null;
  targetCount: number | null;
  partitions: Array<{ partitionId: string; status: string; expectedRowCount: number; actualRowCount: number | null }>;
  dispatches: Array<{ dispatchId: string; dispatchType: string; status: string; attemptCount: number }>;
}

/** The root field's payload; any GraphQL error is thrown with its code. */
export async function call<T = Record<string, any>>(
  gql: Gql,
  document: string,
  variables: Record<string, unknown>,
  token: TokenName = 'nifi',
): Promise<T> {
  const res = await gql(document, variables, { token });
  if (res.body.errors?.length) {
    throw new Error(`${document.split('(')[0]!.trim()}: HTTP ${res.status} ${res.code ?? ''} ${JSON.stringify(res.body.errors)}`);
  }
  return Object.values(res.body.data ?? {})[0] as T;
}

export const runState = (gql: Gql, runId: string) => call<RunState>(gql, RUN_STATE, { runId }, 'viewer');

export interface StartedRun {
  runId: string;
  hdfsRunPath: string;
}

/** createRun + registerManifest with partitions 0000, 0001, … of these row counts: EXTRACTING. */
export async function startRun(gql: Gql, jobKey: string, businessKey: string, counts: number[]): Promise<StartedRun> {
  const created = await call<{ runId: string; hdfsRunPath: string }>(gql, CREATE_RUN, {
    input: { jobKey, businessKey, hdfsRoot: '/data/nifi/stage', stageTablePrefix: 'TMP_UPGRADE_', idempotencyKey: randomUUID() },
  });
  await call(gql, REGISTER_MANIFEST, { input: manifestInput(created.runId, counts) });
  return { runId: created.runId, hdfsRunPath: created.hdfsRunPath };
}

export const partitionId = (index: number): string => String(index).padStart(4, '0');

export async function claimPartition(gql: Gql, runId: string, partition: string, claimToken: string = randomUUID()): Promise<string> {
  const claimed = await call<{ claimed: boolean }>(gql, CLAIM, {
    input: { runId, partitionId: partition, claimToken, workerNode: 'nifi-01' },
  });
  if (!claimed.claimed) throw new Error(`partition ${partition} of run ${runId} was not claimed`);
  return claimToken;
}

export interface ChunkResult {
  recorded: boolean;
  partitionStatus: string;
  runStatus: string;
  receivedChunks: number;
  validationScheduled: boolean;
}

/** Reports chunks `from`.. `to - 1` of `chunkCount`, each of `rows` rows. */
export async function reportChunks(
  gql: Gql,
  run: StartedRun,
  partition: string,
  claimToken: string,
  chunks: { from: number; to: number; chunkCount: number; rows: number },
): Promise<ChunkResult[]> {
  const results: ChunkResult[] = [];
  for (let chunkIndex = chunks.from; chunkIndex < chunks.to; chunkIndex++) {
    results.push(
      await call<ChunkResult>(gql, REPORT, {
        input: {
          runId: run.runId,
          partitionId: partition,
          claimToken,
          chunkIndex: String(chunkIndex),
          chunkCount: String(chunks.chunkCount),
          fragmentIdentifier: `frag-${partition}`,
          recordCount: String(chunks.rows),
          byteCount: String(chunks.rows * 10),
          hdfsPath: `${run.hdfsRunPath}/part-${partition}-${String(chunkIndex).padStart(6, '0')}.parquet`,
        },
      }),
    );
  }
  return results;
}

/** Claims every partition and reports it as one chunk: EXTRACTED_VALIDATED, with a VALIDATE_RUN dispatch. */
export async function extractAll(gql: Gql, run: StartedRun, counts: number[]): Promise<void> {
  for (const [index, rows] of counts.entries()) {
    const token = await claimPartition(gql, run.runId, partitionId(index));
    await reportChunks(gql, run, partitionId(index), token, { from: 0, to: 1, chunkCount: 1, rows });
  }
}

/** The VALIDATE_RUN call NiFi received: startValidation, passing STAGING metrics, markStageValidated. */
export async function validateStaging(gql: Gql, runId: string, dispatchId: string, rows: number): Promise<void> {
  const started = await call<{ started: boolean }>(gql, START_VALIDATION, { input: { runId, dispatchId, node: 'nifi-01' } });
  if (!started.started) throw new Error(`startValidation of run ${runId} did not start`);
  await call(gql, RECORD_METRICS, {
    input: {
      runId,
      stage: 'STAGING',
      queryVersion: 'v1',
      metrics: [
        { metricName: 'STAGE_COUNT', result: 'PASS', expectedValue: String(rows), actualValue: String(rows) },
        { metricName: 'DUP_PK_COUNT', result: 'PASS', expectedValue: '0', actualValue: '0' },
      ],
    },
  });
  const validated = await call<{ stageValidated: boolean; reasons: string[] }>(gql, MARK_STAGE_VALIDATED, { input: { runId } });
  if (!validated.stageValidated) throw new Error(`run ${runId} not stage-validated: ${validated.reasons.join('; ')}`);
}

/** claimPublish and reportPublishResult with this outcome; returns the run's status after it. */
export async function publishRun(gql: Gql, runId: string, outcome: 'PUBLISHED' | 'PUBLISH_UNKNOWN'): Promise<string> {
  const publishToken = randomUUID();
  const claimed = await call<{ claimed: boolean }>(gql, CLAIM_PUBLISH, { input: { runId, publishToken } });
  if (!claimed.claimed) throw new Error(`claimPublish of run ${runId} refused`);
  const result = await call<{ runStatus: string }>(gql, REPORT_PUBLISH_RESULT, {
    input: {
      runId,
      publishToken,
      outcome,
      ...(outcome === 'PUBLISH_UNKNOWN' ? { errorCode: 'HIVE_TIMEOUT', message: 'the INSERT OVERWRITE timed out' } : {}),
    },
  });
  return result.runStatus;
}

/** From PUBLISHED: passing TARGET metrics and markSuccess; returns the run's status after it. */
export async function succeed(gql: Gql, runId: string, rows: number): Promise<string> {
  await call(gql, RECORD_METRICS, {
    input: {
      runId,
      stage: 'TARGET',
      queryVersion: 'v1',
      metrics: [{ metricName: 'TARGET_COUNT', result: 'PASS', expectedValue: String(rows), actualValue: String(rows) }],
    },
  });
  const result = await call<{ success: boolean; runStatus: string; reasons: string[] }>(gql, MARK_SUCCESS, {
    input: { runId, targetCount: String(rows) },
  });
  if (!result.success) throw new Error(`markSuccess of run ${runId} refused: ${result.reasons.join('; ')}`);
  return result.runStatus;
}

/** The run's VALIDATE_RUN dispatch. */
export async function validateDispatch(gql: Gql, runId: string): Promise<RunState['dispatches'][number]> {
  const dispatch = (await runState(gql, runId)).dispatches.find((d) => d.dispatchType === 'VALIDATE_RUN');
  if (!dispatch) throw new Error(`run ${runId} has no VALIDATE_RUN dispatch`);
  return dispatch;
}
