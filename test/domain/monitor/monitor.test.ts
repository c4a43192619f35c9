// monitorSummary's alerts (ref §3.19, deviations 5 and 11): which runs, dispatches and events need a person, and
// until when. The query over HTTP (roles, the limit's bounds, the counts end to end) is in
// test/api/monitor/monitor.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { recordCleanupOperation } from '../../../src/domain/cleanup/record-cleanup.js';
import { recordNifiEventOperation } from '../../../src/domain/events/events.js';
import { alertThresholds, monitorSummary } from '../../../src/domain/monitor/monitor-summary.js';
import { cancelRunOperation } from '../../../src/domain/operator/cancel-run.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import {
  ACTOR,
  chunk,
  claimed,
  createdRun,
  type DomainTest,
  extractedRun,
  failedRun,
  publishedRun,
  publishingRun,
  publishUnknownRun,
  stageValidatingRun,
  stagingValidatedRun,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());
// the summary covers the whole ledger: every test starts from an empty one
beforeEach(async () => {
  await t.sql.query(`TRUNCATE nifi_ops.load_event, nifi_ops.load_dispatch, nifi_ops.load_validation, nifi_ops.load_file,
                              nifi_ops.load_partition, nifi_ops.load_run CASCADE`);
});

/** The summary as the API reads it, with the configured thresholds. */
const summary = (alertLimit = 100) =>
  monitorSummary(t.db.prisma, {
    alertLimit,
    recovery: alertThresholds(t.config),
    retention: t.config.cleanup,
    maxBatch: t.config.cleanup.maxBatch,
  });

const alertsOf = async (kind: string) => (await summary()).alerts.filter((a) => a.kind === kind);

const age = (runId: string, column: string, interval: string) =>
  t.sql.query(`UPDATE nifi_ops.load_run SET ${column} = clock_timestamp() - $2::interval WHERE run_id = $1`, [runId, interval]);

const claimPublish = (runId: string) => perform(t.db, claimPublishOperation, { runId, publishToken: randomUUID(), actor: ACTOR });

describe('monitorSummary', () => {
  it('dates a DISPATCH_DEAD alert by when the dispatch died (deviation 11)', async () => {
    const run = await extractedRun(t);
    const { rows } = await t.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'DEAD', last_error = 'max attempts reached: 503',
              dead_at = clock_timestamp() - interval '2 hours', next_attempt_at = clock_timestamp() + interval '5 minutes'
        WHERE dispatch_id = $1 RETURNING dead_at`,
      [run.dispatchId],
    );
    const [alert] = await alertsOf('DISPATCH_DEAD');
    expect(alert).toMatchObject({ runId: run.runId, dispatchId: run.dispatchId, message: 'VALIDATE_RUN: max attempts reached: 503' });
    expect(alert!.at).toEqual(rows[0].dead_at);
  });

  it('alerts RUN_STALE for every waiting status past its threshold (deviation 5), and not before', async () => {
    const created = await createdRun(t);
    await age(created.runId, 'heartbeat_at', '2 hours');
    const extracted = await extractedRun(t);
    await age(extracted.runId, 'heartbeat_at', '3 hours');
    const validating = await stageValidatingRun(t);
    await age(validating.runId, 'heartbeat_at', '3 hours');
    const validated = await stagingValidatedRun(t);
    await age(validated.runId, 'heartbeat_at', '3 hours');
    const publishing = await publishingRun(t);
    await age(publishing.runId, 'heartbeat_at', '3 hours');
    const published = await publishedRun(t);
    await age(published.runId, 'heartbeat_at', '3 hours');
    const fresh = await stagingValidatedRun(t);
    await age(fresh.runId, 'heartbeat_at', '1 hour');
    const unknown = await publishUnknownRun(t);
    await age(unknown.runId, 'heartbeat_at', '3 hours');

    const stale = await alertsOf('RUN_STALE');
    expect(stale.map((a) => [a.runId, a.status, a.severity])).toEqual(
      expect.arrayContaining([
        [created.runId, 'CREATED', 'WARN'],
        [extracted.runId, 'EXTRACTED_VALIDATED', 'WARN'],
        [validating.runId, 'STAGE_VALIDATING', 'WARN'],
        [validated.runId, 'STAGING_VALIDATED', 'WARN'],
        [publishing.runId, 'PUBLISHING', 'WARN'],
        [published.runId, 'PUBLISHED', 'WARN'],
      ]),
    );
    expect(stale).toHaveLength(6);
    const createdAlert = stale.find((a) => a.runId === created.runId)!;
    const { rows } = await t.sql.query('SELECT heartbeat_at FROM nifi_ops.load_run WHERE run_id = $1', [created.runId]);
    expect(createdAlert.at).toEqual(rows[0].heartbeat_at);
  });

  it('judges an EXTRACTING run by its most recent partition heartbeat, not only its own', async () => {
    const run = await startedRun(t, [3, 4]);
    const owner = await claimed(t, run.runId, '0000');
    await age(run.runId, 'heartbeat_at', '3 hours');
    const staleIds = async () => (await alertsOf('RUN_STALE')).map((a) => a.runId);
    expect(await staleIds()).toEqual([]);

    await t.sql.query(`UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp() - interval '2 hours' WHERE run_id = $1`, [
      run.runId,
    ]);
    expect(await staleIds()).toEqual([run.runId]);
    // a chunk report moves the partition, and so the run
    await perform(t.db, reportChunkOperation, chunk(run, '0000', owner.claimToken, 0, 2, 1));
    expect(await staleIds()).toEqual([]);
  });

  it('alerts RUN_FAILED for failures of the last 24 hours, not for cancellations, and counts both as recent', async () => {
    const failed = await createdRun(t);
    await failedRun(t, failed.runId, { errorStage: 'M', errorCode: 'BAD_PLAN', message: 'gap' });
    const cancelled = await createdRun(t);
    const cancel = await perform(t.db, cancelRunOperation, {
      runId: cancelled.runId,
      reason: 'wrong business date',
      actor: 'alice-operator',
    });
    expect(cancel.changed).toBe(true);
    const s = await summary();
    expect(s.alerts.map((a) => [a.kind, a.runId, a.message])).toEqual([['RUN_FAILED', failed.runId, 'BAD_PLAN gap']]);
    expect(s.recentRuns).toEqual([
      { status: 'FAILED_MANIFEST', count: 1 },
      { status: 'CANCELLED', count: 1 },
    ]);
  });

  it('shows one CLEANUP_FAILED alert per run with the latest message, until the run is cleaned', async () => {
    const run = await createdRun(t);
    await failedRun(t, run.runId, { errorStage: 'M', errorCode: 'E' });
    await age(run.runId, 'completed_at', '20 days');
    for (const message of ['hdfs unavailable', 'still unavailable', 'permission denied on staging dir']) {
      await perform(t.db, recordNifiEventOperation, {
        runId: run.runId,
        level: 'ERROR',
        name: 'CLEANUP_FAILED',
        processGroup: 'PG-70',
        message,
        details: {},
        actor: ACTOR,
      });
    }
    await t.sql.query(
      `INSERT INTO nifi_ops.load_event (event_id, event_time, event_level, event_name, run_id, message)
       VALUES (gen_random_uuid(), clock_timestamp() - interval '2 days', 'ERROR', 'CLEANUP_FAILED', $1, 'too old')`,
      [run.runId],
    );
    const s = await summary();
    expect(s.cleanupDue).toBe(1);
    expect(s.alerts.filter((a) => a.kind === 'CLEANUP_FAILED')).toEqual([
      expect.objectContaining({
        severity: 'WARN',
        runId: run.runId,
        status: null,
        message: 'permission denied on staging dir',
        dispatchId: null,
      }),
    ]);

    const cleaned = await perform(t.db, recordCleanupOperation, {
      runId: run.runId,
      droppedTable: null,
      deletedPath: null,
      retention: t.config.cleanup,
      actor: ACTOR,
    });
    expect(cleaned.changed).toBe(true);
    const after = await summary();
    expect(after.alerts.filter((a) => a.kind === 'CLEANUP_FAILED')).toEqual([]);
    expect(after.cleanupDue).toBe(0);
  });

  it('shows DEPENDENCIES_NOT_READY refusals until the refused step happened', async () => {
    const gated = await stagingValidatedRun(t);
    const insertRefusal = (runId: string | null, jobKey: string, businessKey: string, message: string) =>
      t.sql.query(
        `INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, run_id, job_key, business_key, message, actor)
         VALUES (gen_random_uuid(), 'WARN', 'DEPENDENCIES_NOT_READY', $1, $2, $3, $4, 'nifi-cluster')`,
        [runId, jobKey, businessKey, message],
      );
    await insertRefusal(gated.runId, 'ORACLE_INSP_DTL_DAILY', gated.businessKey, 'ERP_DAILY: RUNNING');
    await insertRefusal(null, 'ORACLE_SALES_DAILY', '2026-10-22', 'ERP_DAILY: MISSING');

    const alerts = await alertsOf('DEPENDENCIES_NOT_READY');
    expect(alerts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ severity: 'WARN', runId: gated.runId, status: 'STAGING_VALIDATED', message: 'ERP_DAILY: RUNNING' }),
        expect.objectContaining({ severity: 'WARN', runId: null, jobKey: 'ORACLE_SALES_DAILY', businessKey: '2026-10-22', status: null }),
      ]),
    );
    expect(alerts).toHaveLength(2);

    expect((await claimPublish(gated.runId)).claimed).toBe(true);
    await createdRun(t, { jobKey: 'ORACLE_SALES_DAILY', businessKey: '2026-10-22' });
    expect(await alertsOf('DEPENDENCIES_NOT_READY')).toEqual([]);
  });

  it("records a CHUNK_CONFLICT warning when a successful partition's chunk changes, and alerts on it", async () => {
    const run = await startedRun(t, [10, 5]);
    const owner = await claimed(t, run.runId, '0000');
    const report = chunk(run, '0000', owner.claimToken, 0, 1, 10);
    expect((await perform(t.db, reportChunkOperation, report)).partitionStatus).toBe('SUCCESS');
    await expect(perform(t.db, reportChunkOperation, { ...report, recordCount: 9n })).rejects.toMatchObject({
      name: 'DomainError',
      code: 'CHUNK_CONFLICT',
      httpStatus: 409,
    });
    const stored = await t.sql.query('SELECT record_count FROM nifi_ops.load_file WHERE run_id = $1', [run.runId]);
    expect(stored.rows).toEqual([{ record_count: '10' }]);
    const { rows } = await t.sql.query(
      `SELECT event_level, partition_id, actor, error_code, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'CHUNK_CONFLICT'`,
      [run.runId],
    );
    expect(rows).toEqual([
      {
        event_level: 'WARN',
        partition_id: '0000',
        actor: 'nifi-cluster',
        error_code: 'CHUNK_CONFLICT',
        details: { chunkIndex: 0, chunkCount: 1, hdfsPath: report.hdfsPath, recordCount: '9', byteCount: '100' },
      },
    ]);
    // an identical re-report is no conflict
    expect((await perform(t.db, reportChunkOperation, report)).recorded).toBe(true);

    expect(await alertsOf('CHUNK_CONFLICT')).toEqual([
      expect.objectContaining({
        severity: 'WARN',
        runId: run.runId,
        status: 'EXTRACTING',
        partitionId: '0000',
        message: 'chunk 0 of partition 0000 changed after the partition succeeded',
      }),
    ]);
  });
});
