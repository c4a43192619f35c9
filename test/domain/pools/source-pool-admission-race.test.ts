// Pool admission under a race (issue 28's bar: limit 4, 32 concurrent claimers across 3 jobs): claimers on four
// connection pools of their own, as four serve processes would be, claim partitions of the three jobs' runs at
// once while the owners of the admitted ones finish theirs, and the fault point claim_partition_pool holds each
// admission between the pool's lock and its count. However the claims interleave, never more than the limit of
// the pool's partitions are RUNNING: without the pool row's lock every claimer counts the same free slots
// (spec/mutants.ts, claim-pool-without-lock).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { claimPartitionOperation, type ClaimPartitionResult } from '../../../src/domain/partitions/claim-partition.js';
import { assignJobToPoolOperation } from '../../../src/domain/pools/assign-job-to-pool.js';
import { definePoolOperation } from '../../../src/domain/pools/define-pool.js';
import type { AfterCommit } from '../../../src/db/after-commit.js';
import { sized } from '../../support/test-size.js';
import { ACTOR, cancelled, chunk, type DomainRun, type DomainTest, OPERATOR, startDomainTest, startedRun } from '../support/fixtures.js';

const LIMIT = 4;
const CLAIMERS = 32;
const JOBS = 3;
const PROCESSES = 4;
const ROUNDS = sized(4, 25);
const PARTITIONS_PER_RUN = 24;
const pid = (i: number) => String(i).padStart(4, '0');
const noEffects: AfterCommit = {
  wakeDispatcher: () => {},
  runProgressed: () => {},
  raise: (error) => {
    throw error;
  },
};

let t: DomainTest;
let processes: pg.Pool[];
let poolName: string;
let jobKeys: string[];

beforeAll(async () => {
  t = await startDomainTest();
  // every new session of this database sleeps at the point: the claimers' connections are all opened after this
  await t.sql.query(`ALTER DATABASE ${pg.escapeIdentifier(t.database.name)} SET load_control.fault_points = 'claim_partition_pool=0.01'`);
  processes = Array.from({ length: PROCESSES }, () => {
    const pool = new pg.Pool({ connectionString: t.database.url, max: CLAIMERS / PROCESSES });
    pool.on('error', () => undefined);
    return pool;
  });
  poolName = `race-${randomUUID().slice(0, 8)}`;
  await perform(t.db, definePoolOperation, { name: poolName, maxRunning: LIMIT, retryAfterSeconds: 5, reason: null, actor: OPERATOR });
  jobKeys = Array.from({ length: JOBS }, (_, i) => `POOL_RACE_${i}`);
  for (const jobKey of jobKeys) await perform(t.db, assignJobToPoolOperation, { jobKey, pool: poolName, reason: null, actor: OPERATOR });
});
afterAll(async () => {
  await Promise.allSettled((processes ?? []).map((p) => p.end()));
  await t?.close();
});

function claimOn(process: pg.Pool, runId: string, partitionId: string): Promise<ClaimPartitionResult & { claimToken: string }> {
  if (claimPartitionOperation.mode !== 'statement') throw new Error('claimPartition is a single-statement operation');
  const claimToken = randomUUID();
  return claimPartitionOperation
    .run(process, { runId, partitionId, claimToken, workerNode: 'nifi-race', actor: ACTOR }, noEffects)
    .then((result) => ({ ...result, claimToken }));
}

async function runningInPool(): Promise<number> {
  const { rows } = await t.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r USING (run_id)
      WHERE p.status = 'RUNNING' AND r.job_key = ANY($1::text[])`,
    [jobKeys],
  );
  return rows[0]!.n;
}

describe('source pool admission under concurrent claims', () => {
  it(`never more than ${LIMIT} RUNNING with ${CLAIMERS} claimers across ${JOBS} jobs on ${PROCESSES} connection pools, owners finishing meanwhile`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const runs: DomainRun[] = [];
      for (const jobKey of jobKeys) runs.push(await startedRun(t, Array(PARTITIONS_PER_RUN).fill(1), { jobKey }));
      const free = runs.flatMap((run) => Array.from({ length: PARTITIONS_PER_RUN }, (_, i) => ({ run, partitionId: pid(i) })));
      const takeFree = () => free.splice(Math.floor(Math.random() * free.length), 1)[0]!;

      let peak = 0;
      let racing = true;
      const sampler = (async () => {
        while (racing) peak = Math.max(peak, await runningInPool());
      })();
      try {
        // wave 1: every claimer at once, none finishing
        const wave1 = await Promise.all(
          Array.from({ length: CLAIMERS }, (_, i) => {
            const { run, partitionId } = takeFree();
            return claimOn(processes[i % PROCESSES]!, run.runId, partitionId).then((r) => ({ ...r, run, partitionId }));
          }),
        );
        const owners = wave1.filter((c) => c.claimed);
        expect(owners).toHaveLength(LIMIT);
        expect(wave1.filter((c) => !c.claimed).every((c) => c.reason === 'POOL_FULL' && c.retryAfter === 5 && c.pool === poolName)).toBe(
          true,
        );
        expect(await runningInPool()).toBe(LIMIT);

        // wave 2: the owners finish their partitions while another crowd claims
        const finishing = owners.map((o) => perform(t.db, reportChunkOperation, chunk(o.run, o.partitionId, o.claimToken, 0, 1, 1)));
        const wave2 = await Promise.all(
          Array.from({ length: CLAIMERS }, (_, i) => {
            const { run, partitionId } = takeFree();
            return claimOn(processes[i % PROCESSES]!, run.runId, partitionId);
          }),
        );
        await Promise.all(finishing);
        expect(wave2.filter((c) => c.claimed).length).toBeLessThanOrEqual(LIMIT);
        expect(await runningInPool()).toBeLessThanOrEqual(LIMIT);
      } finally {
        racing = false;
        await sampler;
      }
      expect(peak).toBeLessThanOrEqual(LIMIT);
      for (const run of runs) await cancelled(t, run.runId);
    }
  });
});
