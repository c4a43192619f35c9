// Source pools (README "Source pools"): definePool and assignJobToPool with their audit and refusal, the
// configuration applied at start, and claimPartition's admission — refused POOL_FULL with a wait while the pool
// is full, a slot freed by each partition that leaves RUNNING — performed on the database directly.
// The race of many claimers across the jobs of one pool: source-pool-admission-race.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { assignJobToPoolOperation } from '../../../src/domain/pools/assign-job-to-pool.js';
import { applyConfiguredPoolsOperation, CONFIG_ACTOR } from '../../../src/domain/pools/configured-pools.js';
import { definePoolOperation } from '../../../src/domain/pools/define-pool.js';
import { listSourcePools } from '../../../src/domain/pools/source-pools.js';
import {
  cancelled,
  chunk,
  claimed,
  type DomainTest,
  OPERATOR,
  partitionFailed,
  refusal,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const uniqueJob = (label: string) => `POOL_${label}_${randomUUID().slice(0, 8).toUpperCase()}`;
const uniquePool = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

const definePool = (name: string, maxRunning: number, retryAfterSeconds: number | null = null) =>
  perform(t.db, definePoolOperation, { name, maxRunning, retryAfterSeconds, reason: 'protect the source', actor: OPERATOR });
const assign = (jobKey: string, pool: string | null) =>
  perform(t.db, assignJobToPoolOperation, { jobKey, pool, reason: 'shares the source', actor: OPERATOR });

async function eventsNamed(name: string, key: string, value: string) {
  const { rows } = await t.sql.query<{ actor: string; details: Record<string, unknown> }>(
    `SELECT actor, details FROM nifi_ops.load_event WHERE event_name = $1 AND details->>$2 = $3 ORDER BY event_time, event_id`,
    [name, key, value],
  );
  return rows;
}

async function partitionRow(runId: string, partitionId: string) {
  const { rows } = await t.sql.query(
    `SELECT status, attempt_count, claim_token FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = $2`,
    [runId, partitionId],
  );
  return rows[0] as { status: string; attempt_count: number; claim_token: string | null };
}

describe('definePool', () => {
  it("creates a pool, audited in the operator's name; the same definition again changes nothing", async () => {
    const name = uniquePool('oracle-a');
    const first = await definePool(name, 4);
    expect(first).toMatchObject({
      changed: true,
      pool: { name, maxRunning: 4, retryAfterSeconds: 30, running: 0, jobs: [], updatedBy: OPERATOR },
    });
    expect((await definePool(name, 4)).changed).toBe(false);
    const events = await eventsNamed('SOURCE_POOL_DEFINED', 'pool', name);
    expect(events).toEqual([
      { actor: OPERATOR, details: { pool: name, previous: null, maxRunning: 4, retryAfterSeconds: 30, reason: 'protect the source' } },
    ]);
  });

  it('changes the limit and keeps the wait when none is given; a new wait replaces it', async () => {
    const name = uniquePool('oracle-b');
    await definePool(name, 4, 12);
    expect((await definePool(name, 2)).pool).toMatchObject({ maxRunning: 2, retryAfterSeconds: 12 });
    expect((await definePool(name, 2, 5)).pool).toMatchObject({ maxRunning: 2, retryAfterSeconds: 5 });
    const events = await eventsNamed('SOURCE_POOL_DEFINED', 'pool', name);
    expect(events.map((e) => e.details.previous)).toEqual([
      null,
      { maxRunning: 4, retryAfterSeconds: 12 },
      { maxRunning: 2, retryAfterSeconds: 12 },
    ]);
  });
});

describe('assignJobToPool', () => {
  it('refuses a pool that is not defined with POOL_NOT_FOUND, and records nothing', async () => {
    const job = uniqueJob('NOPOOL');
    const error = await refusal(assign(job, 'no-such-pool'));
    expect(error.code).toBe('POOL_NOT_FOUND');
    expect(error.details).toEqual({ pool: 'no-such-pool' });
    expect(await eventsNamed('SOURCE_POOL_JOB_ASSIGNED', 'jobKey', job)).toEqual([]);
  });

  it('assigns, moves and releases a job, each audited once; the same assignment again changes nothing', async () => {
    const [a, b] = [uniquePool('a'), uniquePool('b')];
    await definePool(a, 1);
    await definePool(b, 1);
    const job = uniqueJob('MOVE');
    expect(await assign(job, a)).toEqual({ jobKey: job, pool: a, previousPool: null, changed: true });
    expect(await assign(job, a)).toEqual({ jobKey: job, pool: a, previousPool: a, changed: false });
    expect(await assign(job, b)).toEqual({ jobKey: job, pool: b, previousPool: a, changed: true });
    expect(await assign(job, null)).toEqual({ jobKey: job, pool: null, previousPool: b, changed: true });
    expect(await assign(job, null)).toEqual({ jobKey: job, pool: null, previousPool: null, changed: false });
    const events = await eventsNamed('SOURCE_POOL_JOB_ASSIGNED', 'jobKey', job);
    expect(events.map((e) => [e.actor, e.details.previousPool, e.details.pool])).toEqual([
      [OPERATOR, null, a],
      [OPERATOR, a, b],
      [OPERATOR, b, null],
    ]);
    const pools = await listSourcePools(t.db.prisma);
    expect(pools.filter((p) => p.name === a || p.name === b).map((p) => p.jobs)).toEqual([[], []]);
  });
});

describe('claimPartition in a source pool', () => {
  async function poolOf(maxRunning: number, jobs: number, retryAfterSeconds: number | null = null) {
    const name = uniquePool('claims');
    await definePool(name, maxRunning, retryAfterSeconds);
    const jobKeys = Array.from({ length: jobs }, (_, i) => uniqueJob(`J${i}`));
    for (const jobKey of jobKeys) await assign(jobKey, name);
    return { name, jobKeys };
  }

  it('admits claims while the pool has a free slot, across its jobs, then answers POOL_FULL with the wait and changes nothing', async () => {
    const pool = await poolOf(2, 2, 7);
    const first = await startedRun(t, [1, 1], { jobKey: pool.jobKeys[0] });
    const second = await startedRun(t, [1, 1], { jobKey: pool.jobKeys[1] });
    expect(await claimed(t, first.runId, '0000')).toMatchObject({ claimed: true, reason: null, retryAfter: null, pool: pool.name });
    expect(await claimed(t, second.runId, '0000')).toMatchObject({ claimed: true, pool: pool.name });

    const refused = await claimed(t, second.runId, '0001');
    expect(refused).toMatchObject({
      claimed: false,
      reason: 'POOL_FULL',
      retryAfter: 7,
      pool: pool.name,
      runStatus: 'EXTRACTING',
      partitionStatus: 'PENDING',
      attempt: 0,
    });
    expect(await partitionRow(second.runId, '0001')).toEqual({ status: 'PENDING', attempt_count: 0, claim_token: null });
    const [use] = (await listSourcePools(t.db.prisma)).filter((p) => p.name === pool.name);
    expect(use).toMatchObject({ maxRunning: 2, running: 2, jobs: [...pool.jobKeys].sort() });
  });

  it("the owner's replayed claim is answered as before while the pool is full; a job outside the pool is not limited", async () => {
    const pool = await poolOf(1, 1);
    const run = await startedRun(t, [1, 1], { jobKey: pool.jobKeys[0] });
    const owner = await claimed(t, run.runId, '0000');
    expect((await claimed(t, run.runId, '0000', owner.claimToken)).claimed).toBe(true);
    expect((await claimed(t, run.runId, '0001')).reason).toBe('POOL_FULL');
    const outside = await startedRun(t, [1, 1], { jobKey: uniqueJob('FREE') });
    expect(await claimed(t, outside.runId, '0000')).toMatchObject({ claimed: true, reason: null, pool: null });
  });

  it('frees a slot for each partition that leaves RUNNING: SUCCESS, FAILED, ABANDONED', async () => {
    const pool = await poolOf(1, 1);
    const run = await startedRun(t, [1, 1, 1, 1], { jobKey: pool.jobKeys[0] });
    const owner = await claimed(t, run.runId, '0000');
    expect((await claimed(t, run.runId, '0001')).reason).toBe('POOL_FULL');
    await perform(t.db, reportChunkOperation, chunk(run, '0000', owner.claimToken, 0, 1, 1));

    const next = await claimed(t, run.runId, '0001');
    expect(next.claimed).toBe(true);
    expect((await claimed(t, run.runId, '0002')).reason).toBe('POOL_FULL');
    await partitionFailed(t, run.runId, next.claimToken, { partitionId: '0001' });
    expect((await partitionRow(run.runId, '0001')).status).not.toBe('RUNNING');

    const other = await startedRun(t, [1, 1], { jobKey: pool.jobKeys[0] });
    expect((await claimed(t, other.runId, '0000')).claimed).toBe(true);
    const third = await startedRun(t, [1], { jobKey: pool.jobKeys[0] });
    expect((await claimed(t, third.runId, '0000')).reason).toBe('POOL_FULL');
    await cancelled(t, other.runId);
    expect((await partitionRow(other.runId, '0000')).status).toBe('ABANDONED');
    expect((await claimed(t, third.runId, '0000')).claimed).toBe(true);
  });

  it('a lower limit takes no slot away but admits nothing until the use is under it; 0 closes the pool', async () => {
    const pool = await poolOf(3, 1);
    const run = await startedRun(t, [1, 1, 1, 1], { jobKey: pool.jobKeys[0] });
    const owners = [await claimed(t, run.runId, '0000'), await claimed(t, run.runId, '0001')];
    await definePool(pool.name, 1);
    expect(await partitionRow(run.runId, '0001')).toMatchObject({ status: 'RUNNING' });
    expect((await claimed(t, run.runId, '0002')).reason).toBe('POOL_FULL');
    await perform(t.db, reportChunkOperation, chunk(run, '0000', owners[0]!.claimToken, 0, 1, 1));
    expect((await claimed(t, run.runId, '0002')).reason).toBe('POOL_FULL');
    await perform(t.db, reportChunkOperation, chunk(run, '0001', owners[1]!.claimToken, 0, 1, 1));
    await definePool(pool.name, 0);
    expect((await claimed(t, run.runId, '0002')).reason).toBe('POOL_FULL');
    await definePool(pool.name, 1);
    expect((await claimed(t, run.runId, '0002')).claimed).toBe(true);
  });

  it('a job moved out of its pool is no longer limited, and its RUNNING partitions no longer count there', async () => {
    const pool = await poolOf(1, 2);
    const [moved, staying] = [
      await startedRun(t, [1, 1], { jobKey: pool.jobKeys[0] }),
      await startedRun(t, [1], { jobKey: pool.jobKeys[1] }),
    ];
    await claimed(t, moved.runId, '0000');
    expect((await claimed(t, staying.runId, '0000')).reason).toBe('POOL_FULL');
    await assign(pool.jobKeys[0]!, null);
    expect((await claimed(t, moved.runId, '0001')).claimed).toBe(true);
    expect((await claimed(t, staying.runId, '0000')).claimed).toBe(true);
  });
});

describe('the configuration applied at start', () => {
  it('defines the pools and assigns their jobs in its own name; applied again it changes nothing', async () => {
    const name = uniquePool('configured');
    const jobs = [uniqueJob('CFG_A'), uniqueJob('CFG_B')];
    const pools = [{ name, maxRunning: 6, retryAfterSeconds: 20, jobs }];
    expect(await perform(t.db, applyConfiguredPoolsOperation, pools)).toEqual({ changed: 3 });
    expect(await perform(t.db, applyConfiguredPoolsOperation, pools)).toEqual({ changed: 0 });
    const [pool] = (await listSourcePools(t.db.prisma)).filter((p) => p.name === name);
    expect(pool).toMatchObject({ maxRunning: 6, retryAfterSeconds: 20, jobs: [...jobs].sort(), updatedBy: CONFIG_ACTOR });
    expect((await eventsNamed('SOURCE_POOL_DEFINED', 'pool', name)).map((e) => e.actor)).toEqual([CONFIG_ACTOR]);
  });
});
