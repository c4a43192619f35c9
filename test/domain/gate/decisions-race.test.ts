// Two transactions deciding the same consumer + business date serialise (issue 15, point 1): they run on separate
// connections, write, wait for each other, then commit together, so their deferred decisions really race — many
// times over. The last observation racing a newer attempt gives at most one ready decision, never a stale one;
// the last two observations racing each other give exactly one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import type { AfterCommit } from '../../../src/db/after-commit.js';
import { createDb, type Db, type Tx } from '../../../src/db/client.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { createRun } from '../../../src/domain/runs/create-run.js';
import { defineGate } from '../../../src/domain/gate/define-gate.js';
import { recordObservation } from '../../../src/domain/gate/record-observation.js';
import { decisionsOf, type DomainTest, readinessOf, startDomainTest } from '../support/fixtures.js';

const REPETITIONS = 20;
const D = '2026-10-23';

let t: DomainTest;
let left: Db;
let right: Db;
beforeAll(async () => {
  t = await startDomainTest();
  left = createDb(t.database.url, { poolSize: 2 });
  right = createDb(t.database.url, { poolSize: 2 });
});
afterAll(async () => {
  await left?.close();
  await right?.close();
  await t?.close();
});

/** A point both transactions reach before either returns (and so commits). */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((resolve) => {
    release = resolve;
  });
  return () => {
    arrived += 1;
    if (arrived === parties) release();
    return all;
  };
}

const observe = (db: Db, jobId: string, attempt: number, state: 'RUNNING' | 'SUCCEEDED', meet?: () => Promise<void>) =>
  inTransaction(db, async (tx) => {
    await recordObservation(tx, {
      jobId,
      businessDate: D,
      attempt,
      runId: `${jobId}-${attempt}`,
      state,
      startedAt: new Date('2026-10-23T06:00:00Z'),
      actor: 'race',
    });
    await meet?.();
  });

/** A new run of the job for D: the job's next attempt, RUNNING. */
const newRun = (tx: Tx, afterCommit: AfterCommit, jobKey: string) =>
  createRun(
    tx,
    {
      jobKey,
      businessKey: D,
      hdfsRoot: '/data',
      stageTablePrefix: 'T_',
      allowEmptySource: false,
      parameters: {},
      idempotencyKey: null,
      actor: 'race',
    },
    afterCommit,
  );

const gate = (consumer: string, requiredJobs: string[]) =>
  inTransaction(t.db, (tx) =>
    defineGate(tx, { consumer, requiredJobs, boundJobKey: null, notifyUrl: null, expectedBy: [], actor: 'race' }),
  );

/** What every repetition of "the last observation against a newer attempt" must end with. */
async function expectOneReadyAtMostAndNoneStale(consumer: string, lastJob: string): Promise<'ready-then-withdrawn' | 'never-ready'> {
  const decisions = await decisionsOf(t, consumer, D);
  const live = await readinessOf(t, consumer, D);
  expect(live.ready).toBe(false); // the newer attempt is RUNNING
  expect(decisions.filter((d) => d.ready).length).toBeLessThanOrEqual(1);
  if (decisions.length === 0) return 'never-ready';
  // the ready decision was true when it was made (the newer attempt had not committed), and was withdrawn after
  expect(decisions.map((d) => [d.version, d.ready])).toEqual([
    [1, true],
    [2, false],
  ]);
  expect(decisions[0]!.evidence.find((e) => e.jobId === lastJob)).toMatchObject({ attempt: 1 });
  expect(live.decision).toMatchObject({ version: 2, ready: false });
  return 'ready-then-withdrawn';
}

describe('two transactions deciding one consumer and business date', () => {
  it(`the last external observation racing a newer attempt: at most one ready decision, never a stale one (${REPETITIONS}×)`, async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < REPETITIONS; i++) {
      const consumer = unique('race');
      const [a, b] = [unique('a'), unique('b')];
      await gate(consumer, [a, b]);
      await observe(t.db, a, 1, 'SUCCEEDED');
      await observe(t.db, b, 1, 'RUNNING');
      const meet = barrier(2);
      await Promise.all([observe(left, b, 1, 'SUCCEEDED', meet), observe(right, b, 2, 'RUNNING', meet)]);
      outcomes.push(await expectOneReadyAtMostAndNoneStale(consumer, b));
    }
    // both orders happened: the transactions really raced
    expect(new Set(outcomes)).toEqual(new Set(['ready-then-withdrawn', 'never-ready']));
  });

  it(`the last observation racing a new Load Control run of a required job: the same (${REPETITIONS}×)`, async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < REPETITIONS; i++) {
      const consumer = unique('race');
      const external = unique('ext');
      const jobKey = unique('LOAD').toUpperCase();
      await gate(consumer, [external, jobKey]);
      await inTransaction(t.db, async (tx, afterCommit) => {
        const run = await newRun(tx, afterCommit, jobKey);
        await tx.$executeRaw`UPDATE nifi_ops.load_run SET status = 'SUCCESS' WHERE run_id = ${run.runId}::uuid`;
      });
      await observe(t.db, external, 1, 'RUNNING');
      const meet = barrier(2);
      // createRun does more before the barrier than an observation: left alone, one order wins almost always, so
      // every other repetition holds the observation's commit back a moment, and both orders are raced
      const observationLater = i % 2 === 1;
      const meetThen = (later: boolean) => async () => {
        await meet();
        if (later) await new Promise((resolve) => setTimeout(resolve, 25));
      };
      await Promise.all([
        observe(left, external, 1, 'SUCCEEDED', meetThen(observationLater)),
        inTransaction(right, async (tx, afterCommit) => {
          await newRun(tx, afterCommit, jobKey);
          await meetThen(!observationLater)();
        }),
      ]);
      outcomes.push(await expectOneReadyAtMostAndNoneStale(consumer, external));
    }
    // both orders happened: the transactions really raced
    expect(new Set(outcomes)).toEqual(new Set(['ready-then-withdrawn', 'never-ready']));
  });

  it(`the last two observations racing each other: exactly one ready decision, never none (${REPETITIONS}×)`, async () => {
    for (let i = 0; i < REPETITIONS; i++) {
      const consumer = unique('race');
      const [a, b] = [unique('a'), unique('b')];
      await gate(consumer, [a, b]);
      await observe(t.db, a, 1, 'RUNNING');
      await observe(t.db, b, 1, 'RUNNING');
      const meet = barrier(2);
      await Promise.all([observe(left, a, 1, 'SUCCEEDED', meet), observe(right, b, 1, 'SUCCEEDED', meet)]);
      const decisions = await decisionsOf(t, consumer, D);
      expect(decisions.map((d) => [d.version, d.ready])).toEqual([[1, true]]);
      expect(decisions[0]!.evidence).toHaveLength(2);
    }
  });
});
