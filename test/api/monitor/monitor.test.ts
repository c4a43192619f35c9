import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import {
  CLAIM_PUBLISH,
  FAIL_PARTITION,
  FAIL_RUN,
  REPORT,
  REPORT_PUBLISH_RESULT,
  chunkInput,
  claim,
  completeRun,
  createRun,
  report,
  startRun,
  toPublished,
  toStageValidating,
  toStagingValidated,
} from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());
// the summary covers the whole ledger: every test starts from an empty one
beforeEach(async () => {
  await api.sql.query(`TRUNCATE nifi_ops.load_event, nifi_ops.load_dispatch, nifi_ops.load_validation, nifi_ops.load_file,
                                nifi_ops.load_partition, nifi_ops.load_run CASCADE`);
});

const SUMMARY = `query($alertLimit: Int) { monitorSummary(alertLimit: $alertLimit) {
  serverTime recentWindowHours cleanupDue
  activeRuns { status count } recentRuns { status count } dispatches { status count }
  alerts { kind severity runId jobKey businessKey status at message dispatchId partitionId } } }`;
const RECORD_EVENT = `mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`;

interface Alert {
  kind: string;
  severity: string;
  runId: string | null;
  jobKey: string | null;
  businessKey: string | null;
  status: string | null;
  at: string | null;
  message: string | null;
  dispatchId: string | null;
  partitionId: string | null;
}

async function summary(alertLimit?: number, token: TokenName | null = 'operator') {
  const res = await api.gql(SUMMARY, alertLimit === undefined ? {} : { alertLimit }, { token });
  return { ...res, summary: res.body.data?.monitorSummary as { alerts: Alert[]; [k: string]: unknown } | undefined };
}

const age = (runId: string, column: string, interval: string) =>
  api.sql.query(`UPDATE nifi_ops.load_run SET ${column} = clock_timestamp() - $2::interval WHERE run_id = $1`, [runId, interval]);

async function toPublishUnknown(message: string) {
  const run = await toStagingValidated(api);
  const publishToken = randomUUID();
  await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
  await api.gql(REPORT_PUBLISH_RESULT, { input: { runId: run.runId, publishToken, outcome: 'PUBLISH_UNKNOWN', message } });
  return run;
}

describe('monitorSummary', () => {
  it('counts active and recently ended runs and the outbox, and lists the alerts ERROR first, newest first', async () => {
    await createRun(api);
    await createRun(api);
    await toStagingValidated(api);
    const unknown = await toPublishUnknown('  no answer from HiveServer2  ');
    const waiting = await completeRun(api);
    await api.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'DEAD', last_error = 'HTTP 404', dead_at = clock_timestamp() - interval '10 minutes'
        WHERE dispatch_id = $1`,
      [waiting.dispatchId],
    );
    await age(waiting.runId, 'heartbeat_at', '3 hours');
    const failed = await startRun(api, [3, 4]);
    const owner = await claim(api, failed.runId, '0000');
    await api.gql(FAIL_PARTITION, {
      input: {
        runId: failed.runId,
        partitionId: '0000',
        claimToken: owner.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'SQL',
        errorCode: 'ORA-00942',
        message: 'table or view does not exist',
      },
    });
    const endedLongAgo = await createRun(api);
    await api.gql(FAIL_RUN, {
      input: { runId: endedLongAgo.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'M', errorCode: 'E' },
    });
    await age(endedLongAgo.runId, 'completed_at', '25 hours');

    const { status, summary: s } = await summary();
    expect(status).toBe(200);
    expect(Math.abs(Date.parse(s!.serverTime as string) - Date.now())).toBeLessThan(60_000);
    expect(s).toMatchObject({
      recentWindowHours: 24,
      cleanupDue: 0,
      activeRuns: [
        { status: 'CREATED', count: 2 },
        { status: 'EXTRACTED_VALIDATED', count: 1 },
        { status: 'STAGING_VALIDATED', count: 1 },
        { status: 'PUBLISH_UNKNOWN', count: 1 },
      ],
      recentRuns: [{ status: 'FAILED_EXTRACT', count: 1 }],
      dispatches: [
        { status: 'PENDING', count: 0 },
        { status: 'SENT', count: 0 },
        { status: 'DEAD', count: 1 },
      ],
    });
    expect(s!.alerts.map((a) => [a.kind, a.severity, a.runId])).toEqual([
      ['RUN_FAILED', 'ERROR', failed.runId],
      ['PUBLISH_UNKNOWN', 'ERROR', unknown.runId],
      ['DISPATCH_DEAD', 'ERROR', waiting.runId],
      ['RUN_STALE', 'WARN', waiting.runId],
    ]);
    const [runFailed, publishUnknown, dead, stale] = s!.alerts;
    expect(runFailed).toMatchObject({
      status: 'FAILED_EXTRACT',
      message: 'ORA-00942 partition 0000: table or view does not exist',
      dispatchId: null,
    });
    expect(publishUnknown).toMatchObject({
      status: 'PUBLISH_UNKNOWN',
      message: 'no answer from HiveServer2',
      businessKey: unknown.businessKey,
      dispatchId: null,
    });
    expect(dead).toMatchObject({ status: 'EXTRACTED_VALIDATED', message: 'VALIDATE_RUN: HTTP 404', dispatchId: waiting.dispatchId });
    expect(stale).toMatchObject({ status: 'EXTRACTED_VALIDATED', dispatchId: null });
    expect(stale!.message).toMatch(/^no progress in EXTRACTED_VALIDATED since /);

    for (const token of ['nifi', 'viewer'] as const) expect((await summary(undefined, token)).status).toBe(200);
    expect((await summary(undefined, null)).status).toBe(401);
  });

  it('dates a DISPATCH_DEAD alert by when the dispatch died (deviation 11)', async () => {
    const run = await completeRun(api);
    const { rows } = await api.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'DEAD', last_error = 'max attempts reached: 503',
              dead_at = clock_timestamp() - interval '2 hours', next_attempt_at = clock_timestamp() + interval '5 minutes'
        WHERE dispatch_id = $1 RETURNING dead_at`,
      [run.dispatchId],
    );
    const alert = (await summary()).summary!.alerts.find((a) => a.kind === 'DISPATCH_DEAD');
    expect(alert).toMatchObject({ runId: run.runId, dispatchId: run.dispatchId, message: 'VALIDATE_RUN: max attempts reached: 503' });
    expect(alert!.at).toBe((rows[0].dead_at as Date).toISOString());
  });

  it('alerts RUN_STALE for every waiting status past its threshold (deviation 5), and not before', async () => {
    const created = await createRun(api);
    await age(created.runId, 'heartbeat_at', '2 hours');
    const extracted = await completeRun(api);
    await age(extracted.runId, 'heartbeat_at', '3 hours');
    const validating = await toStageValidating(api);
    await age(validating.runId, 'heartbeat_at', '3 hours');
    const validated = await toStagingValidated(api);
    await age(validated.runId, 'heartbeat_at', '3 hours');
    const publishing = await toStagingValidated(api);
    await api.gql(CLAIM_PUBLISH, { input: { runId: publishing.runId, publishToken: randomUUID() } });
    await age(publishing.runId, 'heartbeat_at', '3 hours');
    const published = await toPublished(api);
    await age(published.runId, 'heartbeat_at', '3 hours');
    const fresh = await toStagingValidated(api);
    await age(fresh.runId, 'heartbeat_at', '1 hour');
    const unknown = await toPublishUnknown('unknown');
    await age(unknown.runId, 'heartbeat_at', '3 hours');

    const stale = (await summary()).summary!.alerts.filter((a) => a.kind === 'RUN_STALE');
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
    const { rows } = await api.sql.query('SELECT heartbeat_at FROM nifi_ops.load_run WHERE run_id = $1', [created.runId]);
    expect(createdAlert.at).toBe((rows[0].heartbeat_at as Date).toISOString());
  });

  it('judges an EXTRACTING run by its most recent partition heartbeat, not only its own', async () => {
    const run = await startRun(api, [3, 4]);
    const owner = await claim(api, run.runId, '0000');
    await age(run.runId, 'heartbeat_at', '3 hours');
    const staleIds = async () => (await summary()).summary!.alerts.filter((a) => a.kind === 'RUN_STALE').map((a) => a.runId);
    expect(await staleIds()).toEqual([]);

    await api.sql.query(`UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp() - interval '2 hours' WHERE run_id = $1`, [
      run.runId,
    ]);
    expect(await staleIds()).toEqual([run.runId]);
    // a chunk report moves the partition, and so the run
    await report(api, chunkInput(run, '0000', owner.claimToken, 0, 2, 1));
    expect(await staleIds()).toEqual([]);
  });

  it('alerts RUN_FAILED for failures of the last 24 hours, not for cancellations, and counts both as recent', async () => {
    const failed = await createRun(api);
    await api.gql(FAIL_RUN, {
      input: {
        runId: failed.runId,
        expectedStatus: 'CREATED',
        failStatus: 'FAILED_MANIFEST',
        errorStage: 'M',
        errorCode: 'BAD_PLAN',
        message: 'gap',
      },
    });
    const cancelled = await createRun(api);
    await api.gql(
      `mutation($input: CancelRunInput!) { cancelRun(input: $input) { changed } }`,
      { input: { runId: cancelled.runId, reason: 'wrong business date' } },
      { token: 'operator' },
    );
    const s = (await summary()).summary!;
    expect(s.alerts.map((a) => [a.kind, a.runId, a.message])).toEqual([['RUN_FAILED', failed.runId, 'BAD_PLAN gap']]);
    expect(s.recentRuns).toEqual([
      { status: 'FAILED_MANIFEST', count: 1 },
      { status: 'CANCELLED', count: 1 },
    ]);
  });

  it('shows one CLEANUP_FAILED alert per run with the latest message, until the run is cleaned', async () => {
    const run = await createRun(api);
    await api.gql(FAIL_RUN, {
      input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'M', errorCode: 'E' },
    });
    await age(run.runId, 'completed_at', '20 days');
    for (const message of ['hdfs unavailable', 'still unavailable', 'permission denied on staging dir']) {
      const res = await api.gql(RECORD_EVENT, {
        input: { runId: run.runId, level: 'ERROR', name: 'CLEANUP_FAILED', processGroup: 'PG-70', message },
      });
      expect(res.body.errors).toBeUndefined();
    }
    await api.sql.query(
      `INSERT INTO nifi_ops.load_event (event_id, event_time, event_level, event_name, run_id, message)
       VALUES (gen_random_uuid(), clock_timestamp() - interval '2 days', 'ERROR', 'CLEANUP_FAILED', $1, 'too old')`,
      [run.runId],
    );
    const s = (await summary()).summary!;
    expect(s.cleanupDue).toBe(1);
    const alerts = s.alerts.filter((a) => a.kind === 'CLEANUP_FAILED');
    expect(alerts).toEqual([
      expect.objectContaining({
        severity: 'WARN',
        runId: run.runId,
        status: null,
        message: 'permission denied on staging dir',
        dispatchId: null,
      }),
    ]);

    await api.gql(`mutation($input: RecordCleanupInput!) { recordCleanup(input: $input) { changed } }`, { input: { runId: run.runId } });
    const after = (await summary()).summary!;
    expect(after.alerts.filter((a) => a.kind === 'CLEANUP_FAILED')).toEqual([]);
    expect(after.cleanupDue).toBe(0);
  });

  it('shows DEPENDENCIES_NOT_READY refusals until the refused step happened', async () => {
    const gated = await toStagingValidated(api);
    const insertRefusal = (runId: string | null, jobKey: string, businessKey: string, message: string) =>
      api.sql.query(
        `INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, run_id, job_key, business_key, message, actor)
         VALUES (gen_random_uuid(), 'WARN', 'DEPENDENCIES_NOT_READY', $1, $2, $3, $4, 'nifi-cluster')`,
        [runId, jobKey, businessKey, message],
      );
    await insertRefusal(gated.runId, 'ORACLE_INSP_DTL_DAILY', gated.businessKey, 'ERP_DAILY: RUNNING');
    await insertRefusal(null, 'ORACLE_SALES_DAILY', '2026-10-22', 'ERP_DAILY: MISSING');

    const alerts = (await summary()).summary!.alerts.filter((a) => a.kind === 'DEPENDENCIES_NOT_READY');
    expect(alerts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ severity: 'WARN', runId: gated.runId, status: 'STAGING_VALIDATED', message: 'ERP_DAILY: RUNNING' }),
        expect.objectContaining({ severity: 'WARN', runId: null, jobKey: 'ORACLE_SALES_DAILY', businessKey: '2026-10-22', status: null }),
      ]),
    );
    expect(alerts).toHaveLength(2);

    await api.gql(CLAIM_PUBLISH, { input: { runId: gated.runId, publishToken: randomUUID() } });
    await createRun(api, { jobKey: 'ORACLE_SALES_DAILY', businessKey: '2026-10-22' });
    expect((await summary()).summary!.alerts.filter((a) => a.kind === 'DEPENDENCIES_NOT_READY')).toEqual([]);
  });

  it("records a CHUNK_CONFLICT warning when a successful partition's chunk changes, and alerts on it", async () => {
    const run = await startRun(api, [10, 5]);
    const owner = await claim(api, run.runId, '0000');
    const chunk = chunkInput(run, '0000', owner.claimToken, 0, 1, 10);
    expect((await report(api, chunk)).result!.partitionStatus).toBe('SUCCESS');
    const conflict = await api.gql(REPORT, { input: { ...chunk, recordCount: '9' } });
    expect(conflict.status).toBe(409);
    expect(conflict.code).toBe('CHUNK_CONFLICT');
    const stored = await api.sql.query('SELECT record_count FROM nifi_ops.load_file WHERE run_id = $1', [run.runId]);
    expect(stored.rows).toEqual([{ record_count: '10' }]);
    const { rows } = await api.sql.query(
      `SELECT event_level, partition_id, actor, error_code, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'CHUNK_CONFLICT'`,
      [run.runId],
    );
    expect(rows).toEqual([
      {
        event_level: 'WARN',
        partition_id: '0000',
        actor: 'nifi-cluster',
        error_code: 'CHUNK_CONFLICT',
        details: { chunkIndex: 0, chunkCount: 1, hdfsPath: chunk.hdfsPath, recordCount: '9', byteCount: '100' },
      },
    ]);
    // an identical re-report is no conflict
    expect((await report(api, chunk)).status).toBe(200);

    const alerts = (await summary()).summary!.alerts.filter((a) => a.kind === 'CHUNK_CONFLICT');
    expect(alerts).toEqual([
      expect.objectContaining({
        severity: 'WARN',
        runId: run.runId,
        status: 'EXTRACTING',
        partitionId: '0000',
        message: 'chunk 0 of partition 0000 changed after the partition succeeded',
      }),
    ]);
  });

  it('limits the alerts, ERROR first, cuts messages to 500 characters, and refuses a limit outside 1..500 with 422', async () => {
    await toPublishUnknown('m'.repeat(2000));
    const stale = await createRun(api);
    await age(stale.runId, 'heartbeat_at', '2 hours');
    const all = (await summary()).summary!.alerts;
    expect(all.map((a) => a.kind)).toEqual(['PUBLISH_UNKNOWN', 'RUN_STALE']);
    expect(all[0]!.message).toHaveLength(500);
    expect((await summary(1)).summary!.alerts.map((a) => a.kind)).toEqual(['PUBLISH_UNKNOWN']);
    for (const limit of [0, 501]) {
      const res = await summary(limit);
      expect(res.status).toBe(422);
      expect(res.details).toMatchObject({ field: 'alertLimit' });
    }
  });
});
