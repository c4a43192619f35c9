// PG-20 Extract Worker: NiFi's concurrent tasks taking partition FlowFiles (from the manifest, or from a
// reissue call), claiming each with a fresh claim token, querying "Oracle" and reporting one chunk per
// file written to HDFS. A worker may crash mid-partition, or stall past recovery.stale and then report
// with the claim token it no longer owns.
import { randomUUID } from 'node:crypto';
import type { Reply } from './client.js';
import { STALE_MS } from './cluster.js';
import type { LastChunkRace, SimPartition, SimRun } from './ledger.js';
import { CLAIM_PARTITION, REPORT_CHUNK } from './operations.js';
import { recordFlowEvent } from './pg90.js';
import { poll, sleep, type World } from './world.js';

export interface PartitionFlowFile {
  run: SimRun;
  partition: SimPartition;
  /** MANIFEST, or REISSUE-n for the partition's n-th reissue call that reached the receiver. */
  origin: string;
  /** 0, or 1 for a duplicated FlowFile. */
  copy: number;
}

interface ClaimPayload {
  claimed: boolean;
  runStatus: string;
  partitionStatus: string;
  attempt: number;
}
interface ChunkPayload {
  recorded: boolean;
  partitionStatus: string;
  runStatus: string;
  validationScheduled: boolean;
}

const P_CRASH = 0.08;
const P_STALL = 0.08;
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
    const claimToken = randomUUID();
    const base = [run.keyIndex, run.runNumber, pid, ff.origin, ff.copy];
    const node = world.dice.pick(NODES, 'node', ...base);

    const claim = await world.client.call<ClaimPayload>(
      'claimPartition',
      CLAIM_PARTITION,
      {
        input: { runId: run.runId, partitionId: pid, claimToken, workerNode: node },
      },
      { key: [...base, 'claim'] },
    );
    if (claim.status !== 200) {
      await recordFlowEvent(world, {
        level: 'ERROR',
        processGroup: 'PG-20',
        runId: run.runId,
        partitionId: pid,
        step: 'claimPartition',
        reply: claim,
      });
      return;
    }
    if (!claim.data!.claimed) return; // another node owns it, or the run moved on: the FlowFile is dropped
    const attempt = claim.data!.attempt;
    const rows = chunkRows(partition.expectedRowCount, partition.chunkCount);
    // the owner's tag in every file name, so the ledger can tell whose files a partition holds
    const owner = claimToken.slice(0, 8);
    const crashAt =
      world.faults.enabled('worker-crash') && attempt === 1 && ff.copy === 0 && world.dice.chance(P_CRASH, 'crash', ...base)
        ? world.dice.int(0, rows.length - 1, 'crash-at', ...base)
        : -1;
    const stallAt =
      crashAt < 0 && world.faults.enabled('late-report') && attempt === 1 && ff.copy === 0 && world.dice.chance(P_STALL, 'stall', ...base)
        ? world.dice.int(0, rows.length - 1, 'stall-at', ...base)
        : -1;

    await sleep(world.dice.int(5, 60, 'query', ...base)); // the Oracle query
    for (let index = 0; index < rows.length; index++) {
      if (index === crashAt) {
        world.ledger.crashes.push(`${run.runId}/${pid}`);
        world.log(`fault worker-crash ${run.runId}/${pid} before chunk ${index} of ${rows.length}`);
        return;
      }
      if (index === stallAt) {
        await this.stallThenReportLate(ff, claimToken, owner, index, rows);
        return;
      }
      if (run.race && index === rows.length - 1 && attempt === 1) await arriveAtBarrier(run.race, pid, world);
      const reply = await this.report(ff, claimToken, owner, index, rows, [...base, 'chunk', attempt, index]);
      if (reply.status !== 200) {
        // CLAIM_MISMATCH: the partition was taken from this worker (stale, reissued) — the normal race
        const level = reply.code === 'CLAIM_MISMATCH' ? 'WARN' : 'ERROR';
        await recordFlowEvent(world, { level, processGroup: 'PG-20', runId: run.runId, partitionId: pid, step: 'reportChunk', reply });
        return;
      }
      await sleep(world.dice.int(2, 15, 'write', ...base, index)); // the next file is written
    }
  }

  private report(
    ff: PartitionFlowFile,
    claimToken: string,
    owner: string,
    index: number,
    rows: number[],
    key: Array<string | number>,
  ): Promise<Reply<ChunkPayload>> {
    const { run, partition } = ff;
    return this.world.client.call<ChunkPayload>(
      'reportChunk',
      REPORT_CHUNK,
      {
        input: {
          runId: run.runId,
          partitionId: partition.partitionId,
          claimToken,
          chunkIndex: String(index),
          chunkCount: String(rows.length),
          fragmentIdentifier: `${partition.partitionId}-${owner}`,
          hdfsPath: `${run.hdfsRunPath}/part-${partition.partitionId}-o${owner}-${String(index).padStart(5, '0')}.parquet`,
          recordCount: String(rows[index]),
          byteCount: String(rows[index]! * 120),
        },
      },
      {
        key,
        observe: (data) => {
          if (data.validationScheduled) run.validationScheduled++;
        },
      },
    );
  }

  /**
   * The worker hangs (a long GC, a stuck HDFS write) past recovery.stale: the sweeper gives its partition
   * to a new owner. When it wakes up it reports the chunk it was writing, with the claim token it no
   * longer owns, which must be refused (409 CLAIM_MISMATCH) and change nothing.
   */
  private async stallThenReportLate(
    ff: PartitionFlowFile,
    claimToken: string,
    owner: string,
    index: number,
    rows: number[],
  ): Promise<void> {
    const { world } = this;
    const { run, partition } = ff;
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
    const reply = await this.report(ff, claimToken, owner, index, rows, [
      run.keyIndex,
      run.runNumber,
      partition.partitionId,
      'late',
      index,
    ]);
    world.ledger.lateReports.push({ runId: run.runId, partitionId: partition.partitionId, status: reply.status, code: reply.code });
    if (reply.status !== 200) {
      await recordFlowEvent(world, {
        level: 'WARN',
        processGroup: 'PG-20',
        runId: run.runId,
        partitionId: partition.partitionId,
        step: 'reportChunk',
        reply,
      });
    }
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
