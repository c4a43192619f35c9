// PG-10 Run Coordinator, one per business key: createRun (idempotency key = the FlowFile's uuid), the source
// queries at the snapshot SCN (which may fail: failRun), the manifest of the source table's partitions, one
// FlowFile per non-empty partition for PG-20, and — as the next trigger would — a new run for the key when this
// one ended without success; or PG-10 for a backfill's date, started by PG-05's start call and never repeated
// (the backfill records how the date ended). Every call is the kit's, rendered over the FlowFile's attributes.
import { randomUUID } from 'node:crypto';
import { jsonPathValue } from '../nifi/expression-language.js';
import { failure, PARTITION_ATTRIBUTES } from '../nifi/load-control-flow.js';
import { TERMINAL_RUN_STATUSES } from '../src/domain/states.js';
import type { FlowFile } from './client.js';
import type { ExtractPool } from './extract.js';
import { BACKFILL_JOB } from './backfill.js';
import { GATED_JOB, businessDate, publishReport, runUpstream } from './gate.js';
import { checksumOf, type SimPartition, type SimRun } from './ledger.js';
import { RUN_STATUS } from './operations.js';
import { recordFlowEvent } from './pg90.js';
import { poll, sleep, type World } from './world.js';

const MAX_RUNS_PER_KEY = 3;
const P_LAST_CHUNK_RACE = 0.3;
const P_EMPTY_PARTITION = 0.1;
const P_NULL_PARTITION = 0.3;
const P_DUPLICATE_FLOWFILE = 0.1;
/** A first run's source queries fail (ORA-01555): PG-10 fails the run, and the next trigger makes another. */
const P_SOURCE_FAILURE = 0.04;
/** A gated run waits for its upstream jobs this long before the trigger gives up. */
const GATE_PATIENCE_MS = 60_000;

interface ManifestPayload {
  validationScheduled: boolean;
}

/** The jobs loaded without a gate (with --pool-limit they share a source pool, sim/pools.ts). */
export const UNGATED_JOBS = ['SIM_ORDERS', 'SIM_ITEMS'];
/** The simulated jobs: what PG-05 routes and PG-70 cleans up after. */
export const SIM_JOBS = [...UNGATED_JOBS, GATED_JOB, BACKFILL_JOB];

export interface KeyPlan {
  index: number;
  jobKey: string;
  businessKey: string;
  gated: boolean;
}

/** Every fourth key belongs to the gated job and is a business date; the others alternate two jobs. */
export function keyPlan(index: number): KeyPlan {
  if (index % 4 === 3) return { index, jobKey: GATED_JOB, businessKey: businessDate(index), gated: true };
  return { index, jobKey: SIM_JOBS[index % 2]!, businessKey: `BK${String(index).padStart(5, '0')}`, gated: false };
}

/** Loads one business key to the end: SUCCESS, or runs that ended otherwise until MAX_RUNS_PER_KEY. */
export async function driveKey(world: World, pool: ExtractPool, plan: KeyPlan): Promise<void> {
  const runIds: string[] = [];
  world.ledger.keys.set(plan.index, { runIds, outcome: 'NOT_STARTED' });
  const upstream = plan.gated ? runUpstream(world, plan.businessKey, plan.index) : Promise.resolve();
  try {
    for (let runNumber = 1; runNumber <= MAX_RUNS_PER_KEY && !world.stopping(); runNumber++) {
      const run = await createRun(world, plan, runNumber);
      if (!run) break;
      runIds.push(run.runId);
      await registerManifest(world, pool, run);
      const status = await waitForEnd(world, run);
      world.ledger.keys.get(plan.index)!.outcome = status;
      if (status === 'SUCCESS') {
        if (plan.gated) await publishReport(world, plan.businessKey, run.sourceCount);
        break;
      }
    }
  } finally {
    await upstream;
  }
}

/**
 * PG-10 for a backfill's date: the FlowFile PG-05 made of the start call (its uuid, the backfill id, the date) opens
 * one run — that createRun is the call's ACK; a second delivery of the call is refused and ends in PG-90.
 */
export async function loadBackfillDate(world: World, pool: ExtractPool, plan: KeyPlan, received: FlowFile): Promise<void> {
  const run = await createRun(world, plan, 1, received);
  if (!run) return;
  const key = { runIds: [run.runId], outcome: 'NOT_STARTED' };
  world.ledger.keys.set(plan.index, key);
  await registerManifest(world, pool, run);
  key.outcome = await waitForEnd(world, run);
}

async function createRun(world: World, plan: KeyPlan, runNumber: number, received: FlowFile = {}): Promise<SimRun | undefined> {
  // the trigger's FlowFile (or PG-05's) with the job's parameters; its uuid is createRun's idempotency key
  const flowFile: FlowFile = {
    uuid: randomUUID(),
    ...received,
    'load.business.key': plan.businessKey,
    'load.job.key': plan.jobKey,
    'load.hdfs.root': '/data/sim/stage',
    'load.stage.table.prefix': 'TMP_SIM_',
    'load.allow.empty.source': 'true',
    'load.source.table': `SIM.${plan.jobKey}`,
    'load.tags': 'source=simulator',
  };
  const deadline = Date.now() + GATE_PATIENCE_MS;
  for (let attempt = 0; !world.stopping(); attempt++) {
    const reply = await world.client.nifi('PG-10/createRun', flowFile, { key: [plan.index, runNumber, 'create', attempt] });
    if (reply.status === 200) {
      Object.assign(flowFile, reply.attributes);
      const run: SimRun = {
        runId: flowFile['load.run.id']!,
        keyIndex: plan.index,
        runNumber,
        jobKey: plan.jobKey,
        businessKey: plan.businessKey,
        hdfsRunPath: flowFile['load.hdfs.run.path']!,
        attributes: flowFile,
        sourceCount: 0,
        partitions: new Map(),
        race: undefined,
        targetRows: undefined,
        validated: undefined,
        validationScheduled: 0,
        publishClaims: new Set(),
        validateCalls: 0,
        validating: 0,
        targetValidationStarted: false,
      };
      world.ledger.runs.set(run.runId, run);
      return run;
    }
    // a gated job's trigger fires again until the upstream jobs are done for the date; a paused job's until resumed
    if ((reply.code === 'DEPENDENCIES_NOT_READY' || reply.code === 'JOB_PAUSED') && Date.now() < deadline) {
      await sleep(400);
      continue;
    }
    await recordFlowEvent(world, { ...flowFile, ...reply.attributes });
    return undefined;
  }
  return undefined;
}

type PlannedPartition = SimPartition & {
  lowerBound: string | null;
  upperBound: string | null;
  upperInclusive: boolean;
  isNullPartition: boolean;
};

function planPartitions(world: World, run: SimRun): PlannedPartition[] {
  const { partitions, chunks } = world.options;
  const key = [run.keyIndex, run.runNumber];
  const withNull = partitions >= 2 && world.dice.chance(P_NULL_PARTITION, 'null-partition', ...key);
  const ranges = withNull ? partitions - 1 : partitions;
  const sized = (id: string) => {
    const rows = world.dice.chance(P_EMPTY_PARTITION, 'empty', ...key, id)
      ? 0
      : world.dice.int(chunks * 20, chunks * 60, 'rows', ...key, id);
    const chunkCount = rows === 0 ? 0 : Math.min(rows, Math.max(1, chunks + world.dice.int(-1, 1, 'chunks', ...key, id)));
    return { partitionId: id, expectedRowCount: rows, chunkCount, reissueCalls: 0 };
  };
  const plan: PlannedPartition[] = Array.from({ length: ranges }, (_, i) => ({
    ...sized(String(i).padStart(4, '0')),
    lowerBound: String(1 + i * 1000),
    upperBound: String(1 + (i + 1) * 1000),
    upperInclusive: i === ranges - 1,
    isNullPartition: false,
  }));
  if (withNull) plan.push({ ...sized('NULL'), lowerBound: null, upperBound: null, upperInclusive: false, isNullPartition: true });
  return plan;
}

async function registerManifest(world: World, pool: ExtractPool, run: SimRun): Promise<void> {
  const plan = planPartitions(world, run);
  for (const p of plan) {
    run.partitions.set(p.partitionId, {
      partitionId: p.partitionId,
      expectedRowCount: p.expectedRowCount,
      chunkCount: p.chunkCount,
      reissueCalls: 0,
    });
  }
  run.sourceCount = plan.reduce((sum, p) => sum + p.expectedRowCount, 0);
  const nonEmpty = plan.filter((p) => p.expectedRowCount > 0);
  if (
    world.faults.enabled('last-chunk-race') &&
    nonEmpty.length >= 2 &&
    world.dice.chance(P_LAST_CHUNK_RACE, 'race', run.keyIndex, run.runNumber)
  ) {
    run.race = { waiting: new Map(), expected: nonEmpty.length, released: false, racers: 0 };
    world.ledger.races.push(run.race);
  }
  // what the source queries read at the snapshot SCN
  const flowFile = run.attributes;
  Object.assign(flowFile, {
    'load.snapshot.scn': String(9_000_000_000 + run.keyIndex * 10 + run.runNumber),
    'load.source.count': String(run.sourceCount),
    'load.source.null.count': String(plan.find((p) => p.isNullPartition)?.expectedRowCount ?? 0),
    'load.source.checksum': checksumOf(run.sourceCount),
    'load.partition.count': String(plan.length),
  });
  if (
    world.faults.enabled('source-failure') &&
    run.runNumber === 1 &&
    world.dice.chance(P_SOURCE_FAILURE, 'source-failure', run.keyIndex)
  ) {
    world.ledger.sourceFailures.push(run.runId);
    world.log(`fault source-failure: the source queries of ${run.runId} fail`);
    Object.assign(
      flowFile,
      failure('PG-10', {
        code: 'SOURCE_QUERY_FAILED',
        message: 'ORA-01555: snapshot too old',
        stage: 'MANIFEST',
        kind: 'SQL',
        step: 'source queries',
      }),
    );
    const failed = await world.client.nifi('PG-10/failRun', flowFile, { key: [run.keyIndex, run.runNumber, 'fail-manifest'] });
    await recordFlowEvent(world, { ...flowFile, ...(failed.status === 200 ? {} : failed.attributes) });
    return;
  }
  // the partition plan query's records: strings all through, as Oracle's TO_CHAR and CASE give them
  const records = plan.map((p) => ({
    partitionId: p.partitionId,
    lowerBound: p.lowerBound,
    upperBound: p.upperBound,
    upperInclusive: String(p.upperInclusive),
    isNullPartition: String(p.isNullPartition),
    expectedRowCount: String(p.expectedRowCount),
  }));
  const reply = await world.client.nifi<ManifestPayload>('PG-10/registerManifest', flowFile, {
    key: [run.keyIndex, run.runNumber, 'manifest'],
    content: JSON.stringify(records),
    observe: (data) => {
      if (data.validationScheduled) run.validationScheduled++;
    },
  });
  if (reply.status !== 200) {
    await recordFlowEvent(world, { ...flowFile, ...reply.attributes });
    return;
  }
  Object.assign(flowFile, reply.attributes);
  // the request's partitions become PG-20's FlowFiles, the empty ones dropped
  for (const record of records) {
    const text = JSON.stringify(record);
    const attributes: FlowFile = { ...flowFile, uuid: randomUUID() };
    for (const [name, path] of Object.entries(PARTITION_ATTRIBUTES)) attributes[name] = jsonPathValue(text, path);
    if (attributes['load.partition.expected.rows'] === '0') continue;
    const partition = run.partitions.get(record.partitionId)!;
    pool.submit({ run, partition, origin: 'MANIFEST', copy: 0, attributes });
    // a FlowFile duplicated onto another node, which makes its own claim token
    if (
      world.faults.enabled('duplicate') &&
      world.dice.chance(P_DUPLICATE_FLOWFILE, 'duplicate-flowfile', run.keyIndex, run.runNumber, record.partitionId)
    ) {
      pool.submit({ run, partition, origin: 'MANIFEST', copy: 1, attributes: { ...attributes, uuid: randomUUID() } });
    }
  }
}

/** The next trigger looks at the run: ended (any terminal status), or still going when time is up. */
async function waitForEnd(world: World, run: SimRun): Promise<string> {
  const terminal = new Set<string>(TERMINAL_RUN_STATUSES);
  let looks = 0;
  const status = await poll(
    async () => {
      const reply = await world.client.call<{ status: string }>(
        'run',
        RUN_STATUS,
        { runId: run.runId },
        { key: [run.keyIndex, run.runNumber, 'status', looks++] },
      );
      const current = reply.data?.status;
      return current && terminal.has(current) ? current : undefined;
    },
    1_000,
    Number.POSITIVE_INFINITY,
    world,
  );
  return status ?? 'UNFINISHED';
}
