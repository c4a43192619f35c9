// PG-40 Staging Validation, PG-50 Publish and PG-60 Target Validation: started by the VALIDATE_RUN call the
// receiver got, they load the staging table, publish it into the Hive target with INSERT OVERWRITE under a
// publish claim, and validate the target. Publishing may end PUBLISH_UNKNOWN: Hive did not say whether the
// INSERT happened (the flow reports it), or the flow died after claiming (the sweeper finds it).
import { randomUUID } from 'node:crypto';
import type { SimRun } from './ledger.js';
import {
  CLAIM_PUBLISH,
  FAIL_RUN,
  MARK_STAGE_VALIDATED,
  MARK_SUCCESS,
  RECORD_METRICS,
  REPORT_PUBLISH_RESULT,
  START_VALIDATION,
} from './operations.js';
import { recordFlowEvent } from './pg90.js';
import type { World } from './world.js';

interface StartPayload {
  started: boolean;
  runStatus: string;
  extractedCount: number | null;
}
interface StagePayload {
  stageValidated: boolean;
  runStatus: string;
  reasons: string[];
}
interface ClaimPayload {
  claimed: boolean;
  runStatus: string;
}
interface SuccessPayload {
  success: boolean;
  runStatus: string;
  reasons: string[];
}

const P_PUBLISH_UNKNOWN = 0.15;
const P_DUPLICATE_PUBLISH = 0.15;

/**
 * PG-40, from the receiver's VALIDATE_RUN call (`origin`: VALIDATE-n for the run's n-th call that reached the
 * receiver); then PG-50 when the staging table passed.
 */
export async function validationFlow(world: World, run: SimRun, dispatchId: string, origin: string, copy: number): Promise<void> {
  run.validating++;
  let stagedRows: number | undefined;
  try {
    stagedRows = await stageValidation(world, run, dispatchId, origin, copy);
  } finally {
    run.validating--;
  }
  if (stagedRows === undefined) return;
  // a duplicated PG-50 FlowFile makes its own publish token: the two claims race, one may publish
  const copies =
    world.faults.enabled('duplicate') && world.dice.chance(P_DUPLICATE_PUBLISH, 'duplicate-publish', run.keyIndex, run.runNumber) ? 2 : 1;
  await Promise.all(Array.from({ length: copies }, (_, copy) => publishFlow(world, run, stagedRows, copy)));
}

/** startValidation is the ACK and the dedup gate; returns the staged rows once STAGING_VALIDATED. */
async function stageValidation(world: World, run: SimRun, dispatchId: string, origin: string, copy: number): Promise<number | undefined> {
  const key = [run.keyIndex, run.runNumber, origin, copy];
  const start = await world.client.call<StartPayload>(
    'startValidation',
    START_VALIDATION,
    {
      input: { runId: run.runId, dispatchId, node: world.dice.pick(['nifi-01', 'nifi-02', 'nifi-03'], 'pg40-node', ...key) },
    },
    { key: [...key, 'start'], noDuplicate: true },
  );
  if (start.status !== 200) {
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-40', runId: run.runId, step: 'startValidation', reply: start });
    return undefined;
  }
  if (!start.data!.started) return undefined; // another delivery of the call started it: this FlowFile is dropped
  const staged = Number(start.data!.extractedCount); // CREATE TABLE … AS SELECT over the run's Parquet files
  const metrics = await world.client.call(
    'recordMetrics',
    RECORD_METRICS,
    {
      input: {
        runId: run.runId,
        stage: 'STAGING',
        queryVersion: 'v1',
        metrics: [
          {
            metricName: 'STAGE_COUNT',
            expectedValue: String(run.sourceCount),
            actualValue: String(staged),
            result: staged === run.sourceCount ? 'PASS' : 'FAIL',
          },
          { metricName: 'DUP_PK_COUNT', expectedValue: '0', actualValue: '0', result: 'PASS' },
        ],
      },
    },
    { key: [run.keyIndex, run.runNumber, 'staging-metrics'] },
  );
  if (metrics.status !== 200) {
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-40', runId: run.runId, step: 'recordMetrics', reply: metrics });
    return undefined;
  }
  const judged = await world.client.call<StagePayload>(
    'markStageValidated',
    MARK_STAGE_VALIDATED,
    {
      input: { runId: run.runId },
    },
    { key: [run.keyIndex, run.runNumber, 'stage-validated'] },
  );
  if (judged.status !== 200) {
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-40', runId: run.runId, step: 'markStageValidated', reply: judged });
    return undefined;
  }
  if (judged.data!.stageValidated) return staged;
  if (judged.data!.runStatus === 'STAGE_VALIDATING') {
    await failRun(world, run, 'STAGE_VALIDATING', 'FAILED_STAGE_VALIDATION', 'PG-40', judged.data!.reasons.join('; '));
  }
  return undefined;
}

/** PG-50: one owner per publication, by publish token; only the owner runs the INSERT OVERWRITE. */
async function publishFlow(world: World, run: SimRun, rows: number, copy: number): Promise<void> {
  const publishToken = randomUUID();
  const key = [run.keyIndex, run.runNumber];
  const claim = await world.client.call<ClaimPayload>(
    'claimPublish',
    CLAIM_PUBLISH,
    {
      input: { runId: run.runId, publishToken },
    },
    {
      key: [...key, 'publish-claim', copy],
      observe: (data) => {
        if (data.claimed) run.publishClaims.add(publishToken);
      },
    },
  );
  if (claim.status !== 200) {
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-50', runId: run.runId, step: 'claimPublish', reply: claim });
    return;
  }
  if (!claim.data!.claimed) return;

  if (world.faults.enabled('publish-unknown') && world.dice.chance(P_PUBLISH_UNKNOWN, 'publish-unknown', ...key)) {
    const inserted = world.dice.chance(0.5, 'publish-unknown-inserted', ...key);
    if (inserted) run.targetRows = rows;
    if (world.dice.chance(0.5, 'publish-unknown-dies', ...key)) {
      world.log(`fault publish-unknown: PG-50 dies after claiming ${run.runId} (insert ${inserted ? 'done' : 'not done'})`);
      return; // the sweeper turns PUBLISHING into PUBLISH_UNKNOWN after recovery.publishStale
    }
    world.log(`fault publish-unknown: PG-50 reports PUBLISH_UNKNOWN for ${run.runId} (insert ${inserted ? 'done' : 'not done'})`);
    const unknown = await world.client.call(
      'reportPublishResult',
      REPORT_PUBLISH_RESULT,
      {
        input: {
          runId: run.runId,
          publishToken,
          outcome: 'PUBLISH_UNKNOWN',
          errorCode: 'HIVE_NO_ANSWER',
          message: 'PutHiveQL left no result',
        },
      },
      { key: [...key, 'publish-result'] },
    );
    if (unknown.status !== 200)
      await recordFlowEvent(world, {
        level: 'ERROR',
        processGroup: 'PG-50',
        runId: run.runId,
        step: 'reportPublishResult',
        reply: unknown,
      });
    return; // an operator checks the target and resolves it
  }

  run.targetRows = rows; // INSERT OVERWRITE
  const result = await world.client.call(
    'reportPublishResult',
    REPORT_PUBLISH_RESULT,
    {
      input: { runId: run.runId, publishToken, outcome: 'PUBLISHED' },
    },
    { key: [...key, 'publish-result'] },
  );
  if (result.status !== 200) {
    // e.g. RUN_STATUS_MISMATCH: the sweeper declared it PUBLISH_UNKNOWN meanwhile; the operator resolves it
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-50', runId: run.runId, step: 'reportPublishResult', reply: result });
    return;
  }
  await targetValidationFlow(world, run);
}

/** PG-60, after PUBLISHED (by PG-50, or by an operator's resolution): TARGET metrics, then markSuccess. */
export async function targetValidationFlow(world: World, run: SimRun): Promise<void> {
  if (run.targetValidationStarted) return;
  run.targetValidationStarted = true;
  const key = [run.keyIndex, run.runNumber];
  const target = run.targetRows ?? 0;
  const metrics = await world.client.call(
    'recordMetrics',
    RECORD_METRICS,
    {
      input: {
        runId: run.runId,
        stage: 'TARGET',
        queryVersion: 'v1',
        metrics: [
          {
            metricName: 'TARGET_COUNT',
            expectedValue: String(run.sourceCount),
            actualValue: String(target),
            result: target === run.sourceCount ? 'PASS' : 'FAIL',
          },
        ],
      },
    },
    { key: [...key, 'target-metrics'] },
  );
  if (metrics.status !== 200) {
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-60', runId: run.runId, step: 'recordMetrics', reply: metrics });
    return;
  }
  const success = await world.client.call<SuccessPayload>(
    'markSuccess',
    MARK_SUCCESS,
    {
      input: { runId: run.runId, targetCount: String(target) },
    },
    { key: [...key, 'success'] },
  );
  if (success.status !== 200) {
    await recordFlowEvent(world, { level: 'ERROR', processGroup: 'PG-60', runId: run.runId, step: 'markSuccess', reply: success });
    return;
  }
  if (!success.data!.success && success.data!.runStatus === 'PUBLISHED') {
    await failRun(world, run, 'PUBLISHED', 'FAILED_TARGET_VALIDATION', 'PG-60', success.data!.reasons.join('; '));
  }
}

async function failRun(
  world: World,
  run: SimRun,
  expectedStatus: string,
  failStatus: string,
  processGroup: 'PG-40' | 'PG-60',
  message: string,
): Promise<void> {
  const reply = await world.client.call(
    'failRun',
    FAIL_RUN,
    {
      input: { runId: run.runId, expectedStatus, failStatus, errorStage: processGroup, errorCode: 'VALIDATION_FAILED', message },
    },
    { key: [run.keyIndex, run.runNumber, 'fail', failStatus] },
  );
  if (reply.status !== 200) await recordFlowEvent(world, { level: 'ERROR', processGroup, runId: run.runId, step: 'failRun', reply });
}
