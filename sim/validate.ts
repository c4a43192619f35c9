// PG-40 Staging Validation, PG-50 Publish and PG-60 Target Validation: started by the VALIDATE_RUN call the
// receiver got, they load the staging table, publish it into the Hive target with INSERT OVERWRITE under a
// publish claim, and validate the target. Publishing may end PUBLISH_UNKNOWN: Hive did not say whether the
// INSERT happened (the flow reports it), or the flow died after claiming (the sweeper finds it). Every call is
// the kit's, the FlowFile's attributes carried from one to the next.
import { randomUUID } from 'node:crypto';
import { evaluateProperties } from '../nifi/expression-language.js';
import { STAGING_REFUSED, TARGET_REFUSED } from '../nifi/load-control-flow.js';
import type { FlowFile } from './client.js';
import { checksumOf, type SimRun } from './ledger.js';
import { failRunThenRecord, recordFlowEvent } from './pg90.js';
import type { World } from './world.js';

interface ClaimPayload {
  claimed: boolean;
}

const P_PUBLISH_UNKNOWN = 0.15;
const P_DUPLICATE_PUBLISH = 0.15;
const NODES = ['nifi-01', 'nifi-02', 'nifi-03'];

/**
 * PG-40, from the receiver's VALIDATE_RUN call (`origin`: VALIDATE-n for the run's n-th call that reached the
 * receiver; `call`: the attributes PG-05 read of it); then PG-50 when the staging table passed.
 */
export async function validationFlow(world: World, run: SimRun, call: FlowFile, origin: string, copy: number): Promise<void> {
  run.validating++;
  let validated: FlowFile | undefined;
  try {
    validated = await stageValidation(world, run, call, origin, copy);
  } finally {
    run.validating--;
  }
  if (validated === undefined) return;
  run.validated = validated;
  // a duplicated PG-50 FlowFile makes its own publish token: the two claims race, one may publish
  const copies =
    world.faults.enabled('duplicate') && world.dice.chance(P_DUPLICATE_PUBLISH, 'duplicate-publish', run.keyIndex, run.runNumber) ? 2 : 1;
  await Promise.all(Array.from({ length: copies }, (_, c) => publishFlow(world, run, { ...validated, uuid: randomUUID() }, c)));
}

/** startValidation is the ACK and the dedup gate; returns the FlowFile once the run is STAGING_VALIDATED. */
async function stageValidation(world: World, run: SimRun, call: FlowFile, origin: string, copy: number): Promise<FlowFile | undefined> {
  const key = [run.keyIndex, run.runNumber, origin, copy];
  const flowFile: FlowFile = { ...call, uuid: randomUUID(), 'load.worker.node': world.dice.pick(NODES, 'pg40-node', ...key) };
  const start = await world.client.nifi('PG-40/startValidation', flowFile, { key: [...key, 'start'], noDuplicate: true });
  if (start.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...start.attributes });
    return undefined;
  }
  Object.assign(flowFile, start.attributes);
  if (flowFile['load.validation.started'] !== 'true') return undefined; // another delivery of the call started it: dropped
  // the external table over the run's Parquet files holds what was extracted
  const staged = Number(flowFile['load.extracted.count']);
  Object.assign(flowFile, { 'load.stage.count': String(staged), 'load.stage.checksum': checksumOf(staged) });
  const metrics = await world.client.nifi('PG-40/recordMetrics', flowFile, { key: [run.keyIndex, run.runNumber, 'staging-metrics'] });
  if (metrics.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...metrics.attributes });
    return undefined;
  }
  Object.assign(flowFile, metrics.attributes);
  const judged = await world.client.nifi('PG-40/markStageValidated', flowFile, { key: [run.keyIndex, run.runNumber, 'stage-validated'] });
  if (judged.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...judged.attributes });
    return undefined;
  }
  Object.assign(flowFile, judged.attributes);
  if (flowFile['load.stage.validated'] === 'true') return flowFile;
  if (flowFile['load.run.status'] === 'STAGE_VALIDATING') {
    await failRunThenRecord(world, { ...flowFile, ...evaluateProperties(STAGING_REFUSED, flowFile) });
  }
  return undefined;
}

/** PG-50: one owner per publication, by publish token; only the owner runs the INSERT OVERWRITE. */
async function publishFlow(world: World, run: SimRun, flowFile: FlowFile, copy: number): Promise<void> {
  const publishToken = randomUUID();
  flowFile['load.publish.token'] = publishToken;
  const key = [run.keyIndex, run.runNumber];
  const claim = await world.client.nifi<ClaimPayload>('PG-50/claimPublish', flowFile, {
    key: [...key, 'publish-claim', copy],
    observe: (data) => {
      if (data.claimed) run.publishClaims.add(publishToken);
    },
  });
  if (claim.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...claim.attributes });
    return;
  }
  Object.assign(flowFile, claim.attributes);
  if (flowFile['load.publish.claimed'] !== 'true') return;
  const rows = Number(flowFile['load.stage.count']);

  if (world.faults.enabled('publish-unknown') && world.dice.chance(P_PUBLISH_UNKNOWN, 'publish-unknown', ...key)) {
    const inserted = world.dice.chance(0.5, 'publish-unknown-inserted', ...key);
    if (inserted) run.targetRows = rows;
    if (world.dice.chance(0.5, 'publish-unknown-dies', ...key)) {
      world.log(`fault publish-unknown: PG-50 dies after claiming ${run.runId} (insert ${inserted ? 'done' : 'not done'})`);
      return; // the sweeper turns PUBLISHING into PUBLISH_UNKNOWN after recovery.publishStale
    }
    world.log(`fault publish-unknown: PG-50 reports PUBLISH_UNKNOWN for ${run.runId} (insert ${inserted ? 'done' : 'not done'})`);
    Object.assign(flowFile, {
      'load.publish.outcome': 'PUBLISH_UNKNOWN',
      'load.publish.error': 'HIVE_PUBLISH_FAILED',
      'load.publish.message': 'ExecuteSQL: the connection to HiveServer2 was reset',
    });
    const unknown = await world.client.nifi('PG-50/reportPublishResult', flowFile, { key: [...key, 'publish-result'] });
    if (unknown.status !== 200) await recordFlowEvent(world, { ...flowFile, ...unknown.attributes });
    return; // an operator checks the target and resolves it
  }

  run.targetRows = rows; // INSERT OVERWRITE
  Object.assign(flowFile, { 'load.publish.outcome': 'PUBLISHED', 'load.publish.error': '', 'load.publish.message': '' });
  const result = await world.client.nifi('PG-50/reportPublishResult', flowFile, { key: [...key, 'publish-result'] });
  if (result.status !== 200) {
    // e.g. RUN_STATUS_MISMATCH: the sweeper declared it PUBLISH_UNKNOWN meanwhile; the operator resolves it
    await recordFlowEvent(world, { ...flowFile, ...result.attributes });
    return;
  }
  Object.assign(flowFile, result.attributes);
  if (flowFile['load.run.status'] === 'PUBLISHED') await targetValidationFlow(world, run, flowFile);
}

/** PG-60, after PUBLISHED (by PG-50, or by an operator's resolution): TARGET metrics, then markSuccess. */
export async function targetValidationFlow(world: World, run: SimRun, published: FlowFile): Promise<void> {
  if (run.targetValidationStarted) return;
  run.targetValidationStarted = true;
  const key = [run.keyIndex, run.runNumber];
  const target = run.targetRows ?? 0;
  const flowFile: FlowFile = { ...published, 'load.target.count': String(target), 'load.target.checksum': checksumOf(target) };
  const metrics = await world.client.nifi('PG-60/recordMetrics', flowFile, { key: [...key, 'target-metrics'] });
  if (metrics.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...metrics.attributes });
    return;
  }
  Object.assign(flowFile, metrics.attributes);
  const success = await world.client.nifi('PG-60/markSuccess', flowFile, { key: [...key, 'success'] });
  if (success.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...success.attributes });
    return;
  }
  Object.assign(flowFile, success.attributes);
  if (flowFile['load.run.success'] === 'false' && flowFile['load.run.status'] === 'PUBLISHED') {
    await failRunThenRecord(world, { ...flowFile, ...evaluateProperties(TARGET_REFUSED, flowFile) });
  }
}
