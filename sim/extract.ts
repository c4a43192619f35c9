// PG-20 Extract Worker: NiFi's concurrent tasks taking partition FlowFiles (from the manifest, or from a
// reissue call), claiming each with a fresh claim token, querying "Oracle" and reporting one chunk per
// file written to HDFS; a failed query, or a chunk report refused for another reason than a lost claim, gives
// the partition up (failPartition). A worker may crash mid-partition, or stall past recovery.stale and then
// report with the claim token it no longer owns.
import { randomUUID } from 'node:crypto';
import { evaluateProperties } from '../nifi/expression-language.js';
import { CHUNK_ATTRIBUTES, failure, POOL_FULL } from '../nifi/load-control-flow.js';
import type { FlowFile, Reply } from './client.js';
import { STALE_MS } from './cluster.js';
import type { LastChunkRace, SimPartition, SimRun } from './ledger.js';
import { recordFlowEvent } from './pg90.js';
import { poll, sleep, type World } from './world.js';

/** How long the simulated kit waits for a source pool's slot before it claims again. */
const POOL_WAIT_MS = 20;

export interface PartitionFlowFile {
  run: SimRun;
  partition: SimPartition;
  /** MANIFEST, or REISSUE-n for the partition's n-th reissue call that reached the receiver. */
  origin: string;
  /** 0, or 1 for a duplicated FlowFile. */
  copy: number;
  /** The FlowFile's attributes: the run's and the partition's (PG-10's plan, or the reissue call's body). */
  attributes: FlowFile;
}

interface ChunkPayload {
  validationScheduled: boolean;
}

const P_CRASH = 0.08;
const P_STALL = 0.08;
/** A first attempt's Oracle query fails: the owner gives the partition up, which fails the run. */
const P_EXTRACT_FAILURE = 0.006;
const NODES = ['nifi-01', 'nifi-02', 'nifi-03'];
const RACE_PATIENCE_MS = STALE_MS / 2;

/** Rows of each chunk: as even as possible, the remainder in the first chunks. */
function chunkRows(rows: number, chunks: number): number[] {
  return Array.from({ length: chunks }, (_, i) => Math.floor(rows / chunks) + (i < rows % chunks ? 1 : 0));
}

export class ExtractPool {
  private readonly queue: PartitionFlowFile[] = [];
  private active = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly world: World,
    private readonly tasks: number,
  ) {}

  submit(flowFile: PartitionFlowFile): void {
    this.queue.push(flowFile);
    this.pump();
  }

  /** Resolves when no FlowFile is queued or being worked on. */
  idle(): Promise<void> {
    if (this.active === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.active < this.tasks && this.queue.length > 0) {
      const flowFile = this.queue.shift()!;
      this.active++;
      void this.extract(flowFile)
        .catch((error) =>
          this.world.ledger.abandonedFlows.push(
            `PG-20 ${flowFile.run.runId}/${flowFile.partition.partitionId}: ${(error as Error).message}`,
          ),
        )
        .finally(() => {
          this.active--;
          this.pump();
          if (this.active === 0 && this.queue.length === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
        });
    }
  }

  private async extract(ff: PartitionFlowFile): Promise<void> {
    const { world } = this;
    const { run, partition } = ff;
    if (world.stopping()) return;
    const pid = partition.partitionId;
    const base = [run.keyIndex, run.runNumber, pid, ff.origin, ff.copy];
    // made once per FlowFile: a retried claim is the same claim
    const flowFile: FlowFile = {
      ...ff.attributes,
      'load.claim.token': randomUUID(),
      'load.worker.node': world.dice.pick(NODES, 'node', ...base),
    };
    for (let wait = 0; ; wait++) {
      const claim = await world.client.nifi('PG-20/claimPartition', flowFile, {
        key: wait === 0 ? [...base, 'claim'] : [...base, 'claim', wait],
      });
      if (claim.status !== 200) {
        await recordFlowEvent(world, { ...flowFile, ...claim.attributes });
        return;
      }
      Object.assign(flowFile, claim.attributes);
      // POOL_FULL: the kit's RetryFlowFile asks again with the same token after a while (scaled down here)
      if (evaluateProperties({ poolFull: POOL_FULL }, flowFile).poolFull !== 'true' || world.stopping()) break;
      await sleep(POOL_WAIT_MS);
    }
    if (flowFile['load.partition.claimed'] !== 'true') return; // another node owns it, or the run moved on: dropped
    const attempt = Number(flowFile['load.partition.attempt']);
    const rows = chunkRows(partition.expectedRowCount, partition.chunkCount);
    const resultSet = randomUUID();
    const firstAttempt = attempt === 1 && ff.copy === 0;
    const crashAt =
      world.faults.enabled('worker-crash') && firstAttempt && world.dice.chance(P_CRASH, 'crash', ...base)
        ? world.dice.int(0, rows.length - 1, 'crash-at', ...base)
        : -1;
    const stallAt =
      crashAt < 0 && world.faults.enabled('late-report') && firstAttempt && world.dice.chance(P_STALL, 'stall', ...base)
        ? world.dice.int(0, rows.length - 1, 'stall-at', ...base)
        : -1;
    const extractFails =
      crashAt < 0 &&
      stallAt < 0 &&
      world.faults.enabled('extract-failure') &&
      firstAttempt &&
      run.runNumber === 1 &&
      world.dice.chance(P_EXTRACT_FAILURE, 'extract-failure', ...base);

    await sleep(world.dice.int(5, 60, 'query', ...base)); // the Oracle query
    if (extractFails) {
      world.ledger.extractFailures.push(`${run.runId}/${pid}`);
      world.log(`fault extract-failure ${run.runId}/${pid}`);
      const failed = failure('PG-20', {
        code: 'EXTRACT_QUERY_FAILED',
        message: 'ORA-01555: snapshot too old',
        stage: 'EXTRACT',
        kind: 'SQL',
        step: 'extract at the SCN',
      });
      await this.giveUp({ ...flowFile, ...failed }, base);
      return;
    }
    for (let index = 0; index < rows.length; index++) {
      const chunk = this.chunk(flowFile, resultSet, index, rows);
      if (index === crashAt) {
        world.ledger.crashes.push(`${run.runId}/${pid}`);
        world.log(`fault worker-crash ${run.runId}/${pid} before chunk ${index} of ${rows.length}`);
        return;
      }
      if (index === stallAt) {
        await this.stallThenReportLate(ff, chunk, index);
        return;
      }
      if (run.race && index === rows.length - 1 && attempt === 1) await arriveAtBarrier(run.race, pid, world);
      const reply = await this.report(run, chunk, [...base, 'chunk', attempt, index]);
      if (reply.status !== 200) {
        // CLAIM_MISMATCH: the partition was taken from this worker (stale, reissued) — the normal race, an event only
        if (reply.code === 'CLAIM_MISMATCH') await recordFlowEvent(world, { ...chunk, ...reply.attributes });
        else await this.giveUp({ ...chunk, ...reply.attributes }, base);
        return;
      }
      await sleep(world.dice.int(2, 15, 'write', ...base, index)); // the next file is written
    }
  }

  /** ExecuteSQLRecord's index-th file of the partition, as PG-20 names it before PutHDFS writes it. */
  private chunk(flowFile: FlowFile, resultSet: string, index: number, rows: number[]): FlowFile {
    const file: FlowFile = {
      ...flowFile,
      uuid: randomUUID(),
      'fragment.identifier': resultSet,
      'fragment.index': String(index),
      'fragment.count': String(rows.length),
      'executesql.row.count': String(rows[index]),
      fileSize: String(rows[index]! * 120),
    };
    return { ...file, ...evaluateProperties(CHUNK_ATTRIBUTES, file) };
  }

  private report(run: SimRun, chunk: FlowFile, key: Array<string | number>): Promise<Reply<ChunkPayload>> {
    return this.world.client.nifi<ChunkPayload>('PG-20/reportChunk', chunk, {
      key,
      observe: (data) => {
        if (data.validationScheduled) run.validationScheduled++;
      },
    });
  }

  /** failPartition with the failure the FlowFile carries, then its event. */
  private async giveUp(flowFile: FlowFile, base: Array<string | number>): Promise<void> {
    const reply = await this.world.client.nifi('PG-20/failPartition', flowFile, { key: [...base, 'fail'] });
    await recordFlowEvent(this.world, reply.status === 200 ? flowFile : { ...flowFile, ...reply.attributes });
  }

  /**
   * The worker hangs (a long GC, a stuck HDFS write) past recovery.stale: the sweeper gives its partition
   * to a new owner. When it wakes up it reports the chunk it was writing, with the claim token it no
   * longer owns, which must be refused (409 CLAIM_MISMATCH) and change nothing.
   */
  private async stallThenReportLate(ff: PartitionFlowFile, chunk: FlowFile, index: number): Promise<void> {
    const { world } = this;
    const { run, partition } = ff;
    const claimToken = chunk['load.claim.token']!;
    world.log(`fault late-report: ${run.runId}/${partition.partitionId} stalls before chunk ${index}`);
    await sleep(STALE_MS);
    // report the moment the partition was taken away (not owned, or no longer RUNNING), before a new owner claims it
    const reissued = await poll(
      async () => {
        const {
          rows: [p],
        } = await world.db.query<{ taken: boolean }>(
          `SELECT status <> 'RUNNING' OR claim_token IS DISTINCT FROM $3::uuid AS taken FROM nifi_ops.load_partition
          WHERE run_id = $1 AND partition_id = $2`,
          [run.runId, partition.partitionId, claimToken],
        );
        return p?.taken ? true : undefined;
      },
      100,
      30_000,
      world,
    );
    if (!reissued) {
      if (!world.stopping()) world.ledger.notReissued.push(`${run.runId}/${partition.partitionId}`);
      return;
    }
    const reply = await this.report(run, chunk, [run.keyIndex, run.runNumber, partition.partitionId, 'late', index]);
    world.ledger.lateReports.push({
      runId: run.runId,
      partitionId: partition.partitionId,
      status: reply.status,
      code: reply.code,
      runStatus: reply.attributes['load.run.status'],
    });
    if (reply.status !== 200) await recordFlowEvent(world, { ...chunk, ...reply.attributes });
  }
}

/**
 * The last chunks of a run's partitions are held until every partition has one waiting, then all are sent
 * at once — or, well before their heartbeats go stale, with whatever arrived: a crashed worker never comes.
 */
function arriveAtBarrier(race: LastChunkRace, partitionId: string, world: World): Promise<void> {
  if (race.released) return Promise.resolve();
  return new Promise((resolve) => {
    race.waiting.set(partitionId, resolve);
    const release = () => {
      if (race.released) return;
      race.released = true;
      race.racers = race.waiting.size;
      world.log(`fault last-chunk-race: ${race.waiting.size} last chunks released together`);
      for (const go of race.waiting.values()) go();
    };
    if (race.waiting.size >= race.expected) release();
    else setTimeout(release, RACE_PATIENCE_MS);
  });
}
