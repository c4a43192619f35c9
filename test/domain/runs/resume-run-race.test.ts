// resumeRun raced in the database, on separate connections, the fault point resume_run (after its checks,
// before its insert) widening the window: against itself (one new attempt; every other caller learns which),
// against createRun of the same key (one active run), and against late reports of the failed run (the carried
// counters are the failed run's SUCCESS partitions, never a late chunk).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../../src/contract/errors.js';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { createRunOperation } from '../../../src/domain/runs/create-run.js';
import { resumeRunOperation } from '../../../src/domain/runs/resume-run.js';
import { HDFS_ROOT, JOB } from '../../support/fixtures.js';
import { sized } from '../../support/test-size.js';
import {
  ACTOR,
  chunk,
  claimed,
  type DomainRun,
  type DomainTest,
  OPERATOR,
  partitionFailed,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

/** Repetitions of each race. */
const REPETITIONS = sized(6, 60);
const RESUMERS = 6;

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
  // every session the domain pool opens from now on waits there, inside resumeRun's transaction
  await t.sql.query(`ALTER DATABASE "${t.database.name}" SET load_control.fault_points = 'resume_run=0.05'`);
});
afterAll(async () => t?.close());

const resume = (runId: string) =>
  perform(t.db, resumeRunOperation, {
    runId,
    reason: 'resume after the source came back',
    horizon: { snapshotHorizon: 3_600_000, snapshotHorizonByJob: {} },
    actor: OPERATOR,
  });

/** A run of [3, 4, 5]: 0000 extracted, 0001 failed by its owner (FAILED_EXTRACT) after one of its two chunks. */
async function failedRun(): Promise<DomainRun & { lateToken: string }> {
  const run = await startedRun(t, [3, 4, 5]);
  const first = await claimed(t, run.runId, '0000');
  await perform(t.db, reportChunkOperation, chunk(run, '0000', first.claimToken, 0, 1, 3));
  const late = await claimed(t, run.runId, '0001');
  await perform(t.db, reportChunkOperation, chunk(run, '0001', late.claimToken, 0, 2, 2));
  await partitionFailed(t, run.runId, late.claimToken, { partitionId: '0001' });
  return { ...run, lateToken: late.claimToken };
}

const codeOf = (result: PromiseSettledResult<unknown>) =>
  result.status === 'rejected' ? (result.reason instanceof DomainError ? result.reason.code : String(result.reason)) : 'RESUMED';

async function attemptsOf(runId: string): Promise<string[]> {
  const { rows } = await t.sql.query('SELECT run_id::text FROM nifi_ops.load_run WHERE retry_of_run_id = $1', [runId]);
  return rows.map((r) => r.run_id);
}

describe('resumeRun races', () => {
  it(`of ${RESUMERS} concurrent resumes of one failed run, one makes the new attempt and the others are told which (x${REPETITIONS})`, async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const failed = await failedRun();
      const results = await Promise.allSettled(Array.from({ length: RESUMERS }, () => resume(failed.runId)));
      const winners = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.runId] : []));
      expect(winners).toHaveLength(1);
      // the failed run's row lock makes each later resume see the new attempt, not just collide with it
      expect(results.map(codeOf).sort()).toEqual(['RESUMED', ...Array(RESUMERS - 1).fill('NEWER_ATTEMPT_EXISTS')].sort());
      for (const r of results) {
        if (r.status === 'rejected') expect((r.reason as DomainError).details?.newerRunId).toBe(winners[0]);
      }
      expect(await attemptsOf(failed.runId)).toEqual(winners);
    }
  });

  it(`against createRun of the same key, leaves one active run (x${REPETITIONS})`, async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const failed = await failedRun();
      const create = perform(t.db, createRunOperation, {
        jobKey: JOB,
        businessKey: failed.businessKey,
        hdfsRoot: HDFS_ROOT,
        stageTablePrefix: 'TMP_INSP_DTL_',
        allowEmptySource: false,
        parameters: {},
        idempotencyKey: null,
        actor: ACTOR,
      });
      const [resumed, created] = await Promise.allSettled([resume(failed.runId), create]);
      const pair = `${codeOf(resumed)}/${codeOf(created)}`;
      expect(['RESUMED/DUPLICATE_ACTIVE_RUN', 'DUPLICATE_ACTIVE_RUN/RESUMED', 'NEWER_ATTEMPT_EXISTS/RESUMED']).toContain(pair);
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE business_key = $1 AND status NOT IN ('FAILED_EXTRACT')`,
        [failed.businessKey],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it(`against late reports of the failed run, carries only its SUCCESS partitions' counts (x${REPETITIONS})`, async () => {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const failed = await failedRun();
      const [resumed] = await Promise.all([
        resume(failed.runId),
        // the failed owner's last chunk of 0001, and a replay of 0000's, arrive while the resume decides
        perform(t.db, reportChunkOperation, { ...chunk(failed, '0001', failed.lateToken, 1, 2, 2), actor: ACTOR }),
        perform(t.db, reportChunkOperation, chunk(failed, '0000', randomUUID(), 0, 1, 3)).catch(() => null),
      ]);
      const { rows } = await t.sql.query(
        `SELECT r.success_partition_count, r.extracted_count::int,
                (SELECT array_agg(partition_id || ':' || status ORDER BY partition_id) FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id) AS partitions
           FROM nifi_ops.load_run r WHERE r.run_id = $1`,
        [resumed.runId],
      );
      expect(rows[0]).toEqual({ success_partition_count: 1, extracted_count: 3, partitions: ['0000:SUCCESS', '0001:RETRY', '0002:RETRY'] });
    }
  });
});
