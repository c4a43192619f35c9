// Races decided in PostgreSQL between processes: three `serve` processes on one database, each with its own pool
// and its own group-commit chunk reporter, hammer the same run; fault points (prisma/functions/00_fault_points.sql)
// hold each decision's locks a little longer so that the losing side really waits — or, were a lock missing, reads
// what it must not. After each round the ledger itself is judged (test/support/ledger-invariants.ts). Then races
// in the model's own shape are judged by the model (spec/trace-validation.ts): some order of the raced calls must be
// a behaviour of spec/load-control.qnt that answers as the processes did and leaves the ledger they left.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import type { AfterCommit } from '../../src/db/after-commit.js';
import { sweepOnce } from '../../src/domain/sweeper/sweep.js';
import { startTestApiProcesses, type TestApiProcess } from '../support/api-process.js';
import { CANCEL_RUN, REISSUE_PARTITION, chunkInput, claim, report, startRun, type CreatedRun } from '../support/fixtures.js';
import { ledgerViolations } from '../support/ledger-invariants.js';
import { type History, type ObservedCall, type ObservedLedger, validateHistories } from '../../spec/trace-validation.js';

const REPETITIONS = 12;
const FAULT_POINTS = { count_run_successes: 0.04, report_chunk_locked: 0.02, claim_partition: 0.005 };

let cluster: Awaited<ReturnType<typeof startTestApiProcesses>>;
let apis: TestApiProcess[];
beforeAll(async () => {
  cluster = await startTestApiProcesses(3, FAULT_POINTS);
  apis = cluster.apis;
});
afterAll(async () => cluster?.close());

const api = (i: number) => apis[i % apis.length]!;
const pid = (i: number) => String(i).padStart(4, '0');
const noEffects: AfterCommit = {
  wakeDispatcher: () => {},
  runProgressed: () => {},
  raise: (error) => {
    throw error;
  },
};

async function claimAll(run: CreatedRun, partitions: number): Promise<string[]> {
  const claims = await Promise.all(Array.from({ length: partitions }, (_, i) => claim(api(i), run.runId, pid(i))));
  for (const c of claims) expect(c.result?.claimed).toBe(true);
  return claims.map((c) => c.claimToken);
}

async function runRow(runId: string) {
  const { rows } = await apis[0]!.sql.query(
    `SELECT status, success_partition_count::int AS successes, extracted_count::int AS extracted, source_count::int AS source,
            (SELECT count(*)::int FROM nifi_ops.load_event e WHERE e.run_id = r.run_id AND e.event_name = 'EXTRACT_VALIDATED') AS decisions
       FROM nifi_ops.load_run r WHERE run_id = $1`,
    [runId],
  );
  return rows[0] as { status: string; successes: number; extracted: number; source: number; decisions: number };
}

async function expectConsistentLedger() {
  expect(await ledgerViolations(apis[0]!.sql)).toEqual([]);
}

describe('races between serve processes, decided in the database', () => {
  it('the last chunks of every partition, sent at once through three processes, complete the run once', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const partitions = 6;
      const run = await startRun(api(rep), Array(partitions).fill(10));
      const tokens = await claimAll(run, partitions);
      // the first of two chunks of each partition, then every last chunk together
      await Promise.all(tokens.map((token, i) => report(api(i), chunkInput(run, pid(i), token, 0, 2, 5))));
      const results = await Promise.all(tokens.map((token, i) => report(api(i + rep), chunkInput(run, pid(i), token, 1, 2, 5))));
      expect(results.map((r) => r.status)).toEqual(Array(partitions).fill(200));
      expect(results.filter((r) => r.result?.validationScheduled)).toHaveLength(1);
      expect(await runRow(run.runId)).toEqual({ status: 'EXTRACTED_VALIDATED', successes: 6, extracted: 60, source: 60, decisions: 1 });
    }
    await expectConsistentLedger();
  });

  it("a replayed chunk of a SUCCESS partition, beside the other partitions' progress, is not counted again", async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api(rep), [4, 6, 6]);
      const tokens = await claimAll(run, 3);
      const first = await report(api(0), chunkInput(run, pid(0), tokens[0]!, 0, 1, 4));
      expect(first.result?.partitionStatus).toBe('SUCCESS');
      // NiFi replays partition 0's only chunk (from two nodes) while 1 and 2 report their first halves
      const during = await Promise.all([
        report(api(1), chunkInput(run, pid(0), tokens[0]!, 0, 1, 4)),
        report(api(2), chunkInput(run, pid(0), tokens[0]!, 0, 1, 4)),
        report(api(0), chunkInput(run, pid(1), tokens[1]!, 0, 2, 3)),
        report(api(1), chunkInput(run, pid(2), tokens[2]!, 0, 2, 3)),
      ]);
      expect(during.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(await runRow(run.runId)).toMatchObject({ status: 'EXTRACTING', successes: 1, extracted: 4, decisions: 0 });
      const last = await Promise.all([
        report(api(2), chunkInput(run, pid(1), tokens[1]!, 1, 2, 3)),
        report(api(0), chunkInput(run, pid(2), tokens[2]!, 1, 2, 3)),
        report(api(1), chunkInput(run, pid(0), tokens[0]!, 0, 1, 4)),
      ]);
      expect(last.filter((r) => r.result?.validationScheduled)).toHaveLength(1);
      expect(await runRow(run.runId)).toEqual({ status: 'EXTRACTED_VALIDATED', successes: 3, extracted: 16, source: 16, decisions: 1 });
    }
    await expectConsistentLedger();
  });

  it('an operator reissue racing the last chunk: either the chunk completes the partition or the reissue takes it, never both', async () => {
    const outcomes = { reported: 0, reissued: 0 };
    for (let rep = 0; rep < REPETITIONS * 2; rep++) {
      const run = await startRun(api(rep), [5, 5]);
      const tokens = await claimAll(run, 2);
      await report(api(0), chunkInput(run, pid(0), tokens[0]!, 0, 1, 5));
      await report(api(1), chunkInput(run, pid(1), tokens[1]!, 0, 2, 2));
      const [chunk, reissue] = await Promise.all([
        report(api(rep), chunkInput(run, pid(1), tokens[1]!, 1, 2, 3)),
        api(rep + 1).gql(
          REISSUE_PARTITION,
          { input: { runId: run.runId, partitionId: pid(1), reason: 'race test' } },
          { token: 'operator' },
        ),
      ]);
      const { rows } = await apis[0]!.sql.query('SELECT status FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = $2', [
        run.runId,
        pid(1),
      ]);
      if (rows[0].status === 'SUCCESS') {
        outcomes.reported++;
        expect(chunk.result?.validationScheduled).toBe(true);
        expect(reissue.code).toBe('RUN_STATUS_MISMATCH');
        expect(await runRow(run.runId)).toMatchObject({ status: 'EXTRACTED_VALIDATED', successes: 2, extracted: 10, decisions: 1 });
      } else {
        outcomes.reissued++;
        expect(rows[0].status).toBe('RETRY');
        expect(reissue.body.data?.reissuePartition?.partitionStatus).toBe('RETRY');
        expect(chunk.result?.validationScheduled ?? false).toBe(false);
        expect(await runRow(run.runId)).toMatchObject({ status: 'EXTRACTING', successes: 1, extracted: 5, decisions: 0 });
        // the reissued partition is extracted again by a new owner, and the run completes once
        const again = await claim(api(rep), run.runId, pid(1));
        expect(again.result?.claimed).toBe(true);
        const done = await report(api(rep + 2), chunkInput(run, pid(1), again.claimToken, 0, 1, 5));
        expect(done.result?.validationScheduled).toBe(true);
      }
    }
    expect(outcomes.reported + outcomes.reissued).toBe(REPETITIONS * 2);
    await expectConsistentLedger();
  });

  it('cancel racing the last chunks: a cancelled run never completes, a completed run is counted once', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api(rep), [3, 3, 3]);
      const tokens = await claimAll(run, 3);
      const [cancel, ...chunks] = await Promise.all([
        api(rep).gql(CANCEL_RUN, { input: { runId: run.runId, reason: 'race test' } }, { token: 'operator' }),
        ...tokens.map((token, i) => report(api(rep + i + 1), chunkInput(run, pid(i), token, 0, 1, 3))),
      ]);
      expect(cancel.body.data?.cancelRun?.changed).toBe(true);
      const row = await runRow(run.runId);
      expect(row.status).toBe('CANCELLED');
      // completion was decided before the cancel (then every chunk counted) or never
      if (chunks.some((c) => c.result?.validationScheduled)) expect(row).toMatchObject({ successes: 3, extracted: 9, decisions: 1 });
      else expect(row.decisions).toBe(0);
    }
    await expectConsistentLedger();
  });

  it('the sweeper reissuing stale partitions while their last chunks arrive: each partition is counted once or extracted again', async () => {
    const recovery = { ...apis[0]!.config.recovery, mode: 'REISSUE' as const };
    const settings = { recovery, dispatch: apis[0]!.config.dispatch };
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api(rep), [4, 4, 4]);
      const tokens = await claimAll(run, 3);
      await Promise.all(tokens.map((token, i) => report(api(i), chunkInput(run, pid(i), token, 0, 2, 2))));
      await apis[0]!.sql.query(`UPDATE nifi_ops.load_partition SET heartbeat_at = heartbeat_at - interval '1 day' WHERE run_id = $1`, [
        run.runId,
      ]);
      await Promise.all([
        inTransaction(apis[rep % 3]!.db, (tx) => sweepOnce(tx, settings, noEffects)),
        ...tokens.map((token, i) => report(api(rep + i), chunkInput(run, pid(i), token, 1, 2, 2))),
      ]);
      // whatever the sweeper took is extracted again by new owners; the run then completes once
      const { rows } = await apis[0]!.sql.query<{ partition_id: string }>(
        `SELECT partition_id FROM nifi_ops.load_partition WHERE run_id = $1 AND status = 'RETRY' ORDER BY 1`,
        [run.runId],
      );
      for (const { partition_id } of rows) {
        const again = await claim(api(rep), run.runId, partition_id);
        expect(again.result?.claimed).toBe(true);
        await report(api(rep + 1), chunkInput(run, partition_id, again.claimToken, 0, 1, 4));
      }
      expect(await runRow(run.runId)).toEqual({ status: 'EXTRACTED_VALIDATED', successes: 3, extracted: 12, source: 12, decisions: 1 });
    }
    await expectConsistentLedger();
  });

  it('claims of one partition from three processes at once: one owner', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api(rep), [2]);
      const claims = await Promise.all([0, 1, 2].map((i) => claim(api(i), run.runId, pid(0), randomUUID(), `nifi-0${i}`)));
      expect(claims.filter((c) => c.result?.claimed)).toHaveLength(1);
    }
  });
});

describe("races in the model's shape, judged by the model (trace validation)", () => {
  /** Run 1 of the model: two partitions of two one-row chunks, each claimed and its first chunk in (the first
   * partition's last chunk too, for `firstPartitionDone`). */
  async function startAs(start: History['start'], rep: number) {
    const run = await startRun(api(rep), [2, 2]);
    const tokens = await claimAll(run, 2);
    await report(api(0), chunkInput(run, pid(0), tokens[0]!, 0, 2, 1));
    await report(api(1), chunkInput(run, pid(1), tokens[1]!, 0, 2, 1));
    if (start === 'firstPartitionDone') await report(api(2), chunkInput(run, pid(0), tokens[0]!, 1, 2, 1));
    return { run, tokens };
  }

  type Started = Awaited<ReturnType<typeof startAs>>;
  /** A call of the model sent through process `via`, and what it answered, in the model's terms. */
  async function send(
    { run, tokens }: Started,
    call: ObservedCall['call'],
    via: number,
    worker: 1 | 2 = 2,
    chunk = 1,
  ): Promise<ObservedCall> {
    if (call === 'reportChunk') {
      const res = await report(api(via), chunkInput(run, pid(worker - 1), tokens[worker - 1]!, chunk, 2, 1));
      const r = res.result;
      const answer = res.code
        ? { code: res.code }
        : {
            partitionStatus: r!.partitionStatus,
            runStatus: r!.runStatus,
            receivedChunks: r!.receivedChunks,
            validationScheduled: r!.validationScheduled,
          };
      return { call, worker, chunk, answer };
    }
    if (call === 'cancelRun') {
      const res = await api(via).gql(CANCEL_RUN, { input: { runId: run.runId, reason: 'trace validation' } }, { token: 'operator' });
      const c = res.body.data?.cancelRun;
      return { call, answer: res.code ? { code: res.code } : { runStatus: c.runStatus, changed: c.changed } };
    }
    const res = await api(via).gql(
      REISSUE_PARTITION,
      { input: { runId: run.runId, partitionId: pid(1), reason: 'trace validation' } },
      { token: 'operator' },
    );
    return {
      call,
      partition: 2,
      answer: res.code ? { code: res.code } : { partitionStatus: res.body.data?.reissuePartition?.partitionStatus },
    };
  }

  async function ledgerOf(runId: string): Promise<ObservedLedger> {
    const sql = apis[0]!.sql;
    const row = await runRow(runId);
    const partitions = await sql.query<{ status: string }>(
      'SELECT status FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id',
      [runId],
    );
    const dispatches = await sql.query<{ dispatch_type: string; status: string }>(
      'SELECT dispatch_type, status FROM nifi_ops.load_dispatch WHERE run_id = $1 ORDER BY created_at',
      [runId],
    );
    return {
      runStatus: row.status,
      successes: row.successes,
      extracted: row.extracted,
      partitions: [partitions.rows[0]!.status, partitions.rows[1]!.status],
      completions: row.decisions,
      dispatches: dispatches.rows.map((d) => [d.dispatch_type, d.status]),
    };
  }

  it('every history of the last chunks, a replayed chunk, a cancel and a reissue racing is a behaviour of the model', async () => {
    const scenarios: Array<{ name: string; start: History['start']; race(started: Started, rep: number): Promise<ObservedCall>[] }> = [
      {
        name: 'both last chunks',
        start: 'bothFirstChunks',
        race: (s, rep) => [send(s, 'reportChunk', rep, 1), send(s, 'reportChunk', rep + 1, 2)],
      },
      {
        name: 'a replayed chunk of a SUCCESS partition beside the last chunk',
        start: 'firstPartitionDone',
        race: (s, rep) => [send(s, 'reportChunk', rep, 1), send(s, 'reportChunk', rep + 1, 2)],
      },
      {
        name: 'cancel and the last chunk',
        start: 'firstPartitionDone',
        race: (s, rep) => [send(s, 'cancelRun', rep), send(s, 'reportChunk', rep + 1)],
      },
      {
        name: 'reissue and the last chunk',
        start: 'firstPartitionDone',
        race: (s, rep) => [send(s, 'reissuePartition', rep), send(s, 'reportChunk', rep + 1)],
      },
    ];
    const histories: History[] = [];
    for (let rep = 0; rep < REPETITIONS / 2; rep++) {
      for (const scenario of scenarios) {
        const started = await startAs(scenario.start, rep);
        const raced = await Promise.all(scenario.race(started, rep));
        histories.push({ name: `${scenario.name} #${rep}`, start: scenario.start, raced, after: await ledgerOf(started.run.runId) });
      }
    }
    const dir = join('test-artifacts', 'trace-validation');
    mkdirSync(dir, { recursive: true });
    const { verdicts, output } = await validateHistories(join(dir, 'validation.qnt'), histories);
    console.log(`trace validation: ${verdicts.filter((v) => v.valid).length} of ${verdicts.length} histories are behaviours of the model`);
    for (const scenario of scenarios) {
      const mine = verdicts.filter((v) => v.history.startsWith(`${scenario.name} #`));
      const firstWon = mine.filter((v) => v.orders[0]?.[0] === 0).length;
      console.log(`  ${scenario.name}: the first call took effect first in ${firstWon} of ${mine.length}`);
    }
    expect(
      verdicts.filter((v) => !v.valid).map((v) => v.history),
      `histories no order of which the model makes (test-artifacts/trace-validation/validation.qnt):\n${output}`,
    ).toEqual([]);
    // the model judged both orders of every history: each accepted exactly one (the other answers differently)
    expect(verdicts.map((v) => v.orders.length)).toEqual(Array(histories.length).fill(1));
  }, 240_000);
});
