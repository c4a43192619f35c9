// monitorSummary over HTTP: the counts and alerts end to end, the roles, and the alert limit's bounds. Each alert's
// rule is in test/domain/monitor/monitor.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import {
  CLAIM_PUBLISH,
  FAIL_PARTITION,
  FAIL_RUN,
  REPORT_PUBLISH_RESULT,
  claim,
  completeRun,
  createRun,
  startRun,
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
