// Races named by the contract, run over separate HTTP requests (separate database connections),
// each repeated at least ten times, asserting exactly-once outcomes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { FAIL_PARTITION, chunkInput, claim, report, startRun } from '../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const REPETITIONS = 10;

async function runState(runId: string) {
  const { rows } = await api.sql.query(
    `SELECT r.status, r.extracted_count::int, r.success_partition_count,
            (SELECT count(*)::int FROM nifi_ops.load_dispatch d WHERE d.run_id = r.run_id) AS dispatches
       FROM nifi_ops.load_run r WHERE r.run_id = $1`,
    [runId],
  );
  return rows[0] as { status: string; extracted_count: number; success_partition_count: number; dispatches: number };
}

describe('completion is decided exactly once', () => {
  it.each([
    [8, 1],
    [6, 3],
    [16, 2],
  ])('all chunks of %i partitions × %i chunks posted at once: one validationScheduled, one dispatch', async (partitions, chunks) => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const counts = Array.from({ length: partitions }, () => chunks * 5);
      const run = await startRun(api, counts);
      const tokens = await Promise.all(counts.map((_, i) => claim(api, run.runId, String(i).padStart(4, '0')).then((c) => c.claimToken)));
      const reports = counts.flatMap((_, i) =>
        Array.from({ length: chunks }, (_c, chunk) => chunkInput(run, String(i).padStart(4, '0'), tokens[i]!, chunk, chunks, 5)),
      );
      const results = await Promise.all(reports.map((input) => report(api, input)));
      expect(results.map((r) => r.status)).toEqual(Array(reports.length).fill(200));
      expect(results.filter((r) => r.result!.validationScheduled)).toHaveLength(1);
      expect(await runState(run.runId)).toEqual({
        status: 'EXTRACTED_VALIDATED',
        extracted_count: partitions * chunks * 5,
        success_partition_count: partitions,
        dispatches: 1,
      });
    }
  });

  it('the last two partitions finishing together complete the run once', async () => {
    for (let rep = 0; rep < REPETITIONS * 2; rep++) {
      const run = await startRun(api, [3, 4, 5]);
      const [a, b, c] = await Promise.all(['0000', '0001', '0002'].map((pid) => claim(api, run.runId, pid)));
      await report(api, chunkInput(run, '0000', a!.claimToken, 0, 1, 3));
      const [r1, r2] = await Promise.all([
        report(api, chunkInput(run, '0001', b!.claimToken, 0, 1, 4)),
        report(api, chunkInput(run, '0002', c!.claimToken, 0, 1, 5)),
      ]);
      expect([r1!.result!.validationScheduled, r2!.result!.validationScheduled].filter(Boolean)).toHaveLength(1);
      expect(await runState(run.runId)).toMatchObject({ status: 'EXTRACTED_VALIDATED', extracted_count: 12, dispatches: 1 });
    }
  });

  it('a concurrent failure and success leave FAILED_EXTRACT and no dispatch', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api, [3, 4]);
      const [a, b] = await Promise.all(['0000', '0001'].map((pid) => claim(api, run.runId, pid)));
      const [success, failure] = await Promise.all([
        report(api, chunkInput(run, '0000', a!.claimToken, 0, 1, 3)),
        api.gql(FAIL_PARTITION, {
          input: {
            runId: run.runId,
            partitionId: '0001',
            claimToken: b!.claimToken,
            errorStage: 'EXTRACT',
            errorClass: 'IO',
            errorCode: 'HDFS',
          },
        }),
      ]);
      expect(success.status).toBe(200);
      expect(failure.status).toBe(200);
      expect(await runState(run.runId)).toMatchObject({ status: 'FAILED_EXTRACT', dispatches: 0 });
    }
  });

  it('a row mismatch racing the last success never completes the run', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api, [3, 4]);
      const [a, b] = await Promise.all(['0000', '0001'].map((pid) => claim(api, run.runId, pid)));
      await Promise.all([
        report(api, chunkInput(run, '0000', a!.claimToken, 0, 1, 3)),
        report(api, chunkInput(run, '0001', b!.claimToken, 0, 1, 5)),
      ]);
      expect(await runState(run.runId)).toMatchObject({ status: 'FAILED_EXTRACT', dispatches: 0 });
    }
  });

  it('duplicate deliveries of the last chunk, racing, schedule validation once', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api, [6]);
      const { claimToken } = await claim(api, run.runId, '0000');
      const input = chunkInput(run, '0000', claimToken, 0, 1, 6);
      const results = await Promise.all(Array.from({ length: 6 }, () => report(api, input)));
      expect(results.filter((r) => r.result!.validationScheduled)).toHaveLength(1);
      expect(await runState(run.runId)).toMatchObject({ status: 'EXTRACTED_VALIDATED', dispatches: 1, extracted_count: 6 });
      const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1', [run.runId]);
      expect(rows[0].n).toBe(1);
    }
  });
  it('duplicate deliveries of a middle chunk, racing, count it once and the partition still completes', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api, [9]);
      const { claimToken } = await claim(api, run.runId, '0000');
      const middle = chunkInput(run, '0000', claimToken, 1, 3, 3);
      const results = await Promise.all(Array.from({ length: 8 }, () => report(api, middle)));
      expect(results.map((r) => [r.status, r.result?.partitionStatus, r.result?.receivedChunks])).toEqual(
        Array(8).fill([200, 'RUNNING', 1]),
      );
      const { rows } = await api.sql.query(
        `SELECT received_chunks, received_rows::int, status FROM nifi_ops.load_partition WHERE run_id = $1`,
        [run.runId],
      );
      expect(rows[0]).toEqual({ received_chunks: 1, received_rows: 3, status: 'RUNNING' });
      await report(api, chunkInput(run, '0000', claimToken, 0, 3, 3));
      const last = await report(api, chunkInput(run, '0000', claimToken, 2, 3, 3));
      expect(last.result).toMatchObject({ partitionStatus: 'SUCCESS', validationScheduled: true });
      expect(await runState(run.runId)).toMatchObject({ status: 'EXTRACTED_VALIDATED', dispatches: 1, extracted_count: 9 });
    }
  });
});

describe('claims have a single owner', () => {
  it('12 concurrent claims with different tokens: exactly one wins', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api, [5]);
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => claim(api, run.runId, '0000', randomUUID(), `node-${i}`)));
      const winners = results.filter((r) => r.result!.claimed);
      expect(winners).toHaveLength(1);
      const { rows } = await api.sql.query(`SELECT claim_token::text, attempt_count FROM nifi_ops.load_partition WHERE run_id = $1`, [
        run.runId,
      ]);
      expect(rows[0]).toEqual({ claim_token: winners[0]!.claimToken, attempt_count: 1 });
    }
  });

  it('a claim racing the run failure never leaves a claimed partition on a failed run', async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const run = await startRun(api, [3, 4]);
      const owner = await claim(api, run.runId, '0000');
      const [, late] = await Promise.all([
        api.gql(FAIL_PARTITION, {
          input: { runId: run.runId, partitionId: '0000', claimToken: owner.claimToken, errorStage: 'E', errorClass: 'C', errorCode: 'X' },
        }),
        claim(api, run.runId, '0001'),
      ]);
      const { rows } = await api.sql.query(`SELECT status FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0001'`, [
        run.runId,
      ]);
      // either the claim came first (RUNNING while the run was extracting) or it saw the failed run
      expect(late.result!.claimed ? 'RUNNING' : 'PENDING').toBe(rows[0].status);
      if (late.result!.claimed) expect(late.result!.runStatus).toBe('EXTRACTING');
      else expect(late.result!.runStatus).toBe('FAILED_EXTRACT');
    }
  });
});
