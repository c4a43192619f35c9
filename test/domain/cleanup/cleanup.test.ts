// recordCleanup's rules and cleanup.maxBatch (src/domain/cleanup/): a due run's cleanup recorded once, by whom,
// under concurrent reports, and the cap of every candidate list. The queries and the mutation over HTTP (roles,
// refusals) are in test/api/cleanup/cleanup.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { cleanupCandidates } from '../../../src/domain/cleanup/cleanup-candidates.js';
import { recordCleanupOperation } from '../../../src/domain/cleanup/record-cleanup.js';
import { monitorSummary, alertThresholds } from '../../../src/domain/monitor/monitor-summary.js';
import { cancelRunOperation } from '../../../src/domain/operator/cancel-run.js';
import { ACTOR, createdRun, type DomainTest, failedRun, stageValidatingRun, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const OPERATOR = 'alice-operator';
const newJob = () => `CLEANUP_${randomUUID().slice(0, 8).toUpperCase()}`;

const candidates = (jobKey: string | null, on: DomainTest = t) =>
  cleanupCandidates(on.db.prisma, { jobKey, limit: 500, retention: on.config.cleanup, maxBatch: on.config.cleanup.maxBatch });

const recordCleanup = (runId: string, extra: { droppedTable?: string; deletedPath?: string } = {}, actor = ACTOR) =>
  perform(t.db, recordCleanupOperation, {
    runId,
    droppedTable: extra.droppedTable ?? null,
    deletedPath: extra.deletedPath ?? null,
    retention: t.config.cleanup,
    actor,
  });

/** Moves a run's end (and last heartbeat) `days` into the past. */
async function endedDaysAgo(runId: string, days: number): Promise<void> {
  await t.sql.query(
    `UPDATE nifi_ops.load_run SET completed_at = CASE WHEN completed_at IS NULL THEN NULL ELSE clock_timestamp() - $2 * interval '1 day' END,
            heartbeat_at = clock_timestamp() - $2 * interval '1 day', started_at = clock_timestamp() - $2 * interval '1 day'
      WHERE run_id = $1`,
    [runId, days],
  );
}

async function failedManifest(jobKey: string, on: DomainTest = t) {
  const run = await createdRun(on, { jobKey });
  await failedRun(on, run.runId, { errorCode: 'E' });
  return run;
}

async function failedStageValidation(jobKey: string) {
  const run = await stageValidatingRun(t, [3, 4], { jobKey });
  await failedRun(t, run.runId, {
    expectedStatus: 'STAGE_VALIDATING',
    failStatus: 'FAILED_STAGE_VALIDATION',
    errorStage: 'STAGING',
    errorCode: 'E',
  });
  return run;
}

async function cancelled(jobKey: string) {
  const run = await createdRun(t, { jobKey });
  await perform(t.db, cancelRunOperation, { runId: run.runId, reason: 'not needed any more', actor: OPERATOR });
  return run;
}

describe('recordCleanup', () => {
  it('records the cleanup of a due run once, for NiFi or an operator, and takes it off the candidates', async () => {
    const job = newJob();
    const run = await failedStageValidation(job);
    await endedDaysAgo(run.runId, 20);
    const details = { droppedTable: run.stageTable, deletedPath: run.hdfsRunPath };
    expect(await recordCleanup(run.runId, details)).toEqual({ runStatus: 'FAILED_STAGE_VALIDATION', changed: true });
    expect(await recordCleanup(run.runId, details)).toEqual({ runStatus: 'FAILED_STAGE_VALIDATION', changed: false });
    expect(await recordCleanup(run.runId, {}, OPERATOR)).toEqual({ runStatus: 'FAILED_STAGE_VALIDATION', changed: false });

    const { rows } = await t.sql.query('SELECT status, cleaned_at FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(rows[0].status).toBe('FAILED_STAGE_VALIDATION');
    expect(rows[0].cleaned_at).toBeInstanceOf(Date);
    const events = await t.sql.query(
      `SELECT event_level, actor, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CLEANED'`,
      [run.runId],
    );
    expect(events.rows).toEqual([{ event_level: 'INFO', actor: 'nifi-cluster', details }]);
    expect(await candidates(job)).toEqual([]);
  });

  it('lets an operator record a manual cleanup, by name', async () => {
    const run = await cancelled(newJob());
    await endedDaysAgo(run.runId, 15);
    expect(await recordCleanup(run.runId, {}, OPERATOR)).toEqual({ runStatus: 'CANCELLED', changed: true });
    const { rows } = await t.sql.query(`SELECT actor FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CLEANED'`, [
      run.runId,
    ]);
    expect(rows).toEqual([{ actor: 'alice-operator' }]);
  });

  it('records concurrent reports of one cleanup exactly once', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await failedManifest(newJob());
      await endedDaysAgo(run.runId, 15);
      const results = await Promise.all(
        [ACTOR, OPERATOR, ACTOR, OPERATOR].map((actor) => recordCleanup(run.runId, { deletedPath: run.hdfsRunPath }, actor)),
      );
      expect(results.filter((r) => r.changed)).toHaveLength(1);
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CLEANED'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });
});

describe('cleanup.maxBatch', () => {
  let small: DomainTest;
  beforeAll(async () => {
    small = await startDomainTest({ cleanup: { maxBatch: 2 } });
  });
  afterAll(async () => small?.close());

  it('caps the candidate list and the monitor count of due runs', async () => {
    for (let i = 0; i < 3; i++) {
      const run = await failedManifest(newJob(), small);
      await small.sql.query(`UPDATE nifi_ops.load_run SET completed_at = clock_timestamp() - interval '20 days' WHERE run_id = $1`, [
        run.runId,
      ]);
    }
    expect(await candidates(null, small)).toHaveLength(2);
    const summary = await monitorSummary(small.db.prisma, {
      alertLimit: 100,
      recovery: alertThresholds(small.config),
      retention: small.config.cleanup,
      maxBatch: small.config.cleanup.maxBatch,
    });
    expect(summary.cleanupDue).toBe(2);
  });
});
