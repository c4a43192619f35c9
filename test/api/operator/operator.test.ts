import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCEL_RUN as CANCEL, RESEND_DISPATCH as RESEND, RESOLVE_UNKNOWN as RESOLVE } from '../../../schema/documents/operator.js';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import {
  CLAIM,
  CLAIM_PUBLISH,
  CREATE_RUN,
  FAIL_PARTITION,
  HDFS_ROOT,
  JOB,
  MARK_SUCCESS,
  START_VALIDATION,
  chunkInput,
  claim,
  completeRun,
  createRun,
  metric,
  recordMetrics,
  report,
  startRun,
  toPublished,
  toStageValidating,
  toPublishUnknown as publishUnknown,
  toStagingValidated,
  REISSUE_PARTITION,
} from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const REASON = 'checked the target table by hand';

const resolve = (runId: string, resolution: string, reason = REASON, token: TokenName | null = 'operator') =>
  api.gql(RESOLVE, { input: { runId, resolution, reason } }, { token });
const resend = (runId: string, dispatchId: string, extra: Record<string, unknown> = {}, token: TokenName | null = 'operator') =>
  api.gql(RESEND, { input: { runId, dispatchId, ...extra } }, { token });
const cancel = (runId: string, reason = 'business date loaded twice', token: TokenName | null = 'operator') =>
  api.gql(CANCEL, { input: { runId, reason } }, { token });

async function runRow(runId: string) {
  const { rows } = await api.sql.query(
    `SELECT status, published_at, completed_at, error_stage, error_code, error_message, publish_token::text
       FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function lastEvent(runId: string, name: string) {
  const { rows } = await api.sql.query(
    `SELECT event_level, actor, message, details FROM nifi_ops.load_event
      WHERE run_id = $1 AND event_name = $2 ORDER BY event_time DESC LIMIT 1`,
    [runId, name],
  );
  return rows[0];
}

const toPublishUnknown = (errorCode?: string) => publishUnknown(api, errorCode);

describe('resolveUnknown', () => {
  it('resolves PUBLISH_UNKNOWN to PUBLISHED for an operator, clears the publish error and records name and reason', async () => {
    const run = await toPublishUnknown('HS2_TIMEOUT');
    const asNifi = await resolve(run.runId, 'PUBLISHED', REASON, 'nifi');
    expect(asNifi.status).toBe(403);
    expect(asNifi.code).toBe('FORBIDDEN');
    const short = await resolve(run.runId, 'PUBLISHED', 'x');
    expect(short.status).toBe(422);
    expect(short.details).toMatchObject({ field: 'input.reason' });
    expect((await resolve(run.runId, 'PUBLISHED', '   ab   ')).status).toBe(422);
    expect((await resolve(run.runId, 'PUBLISHED', 'r'.repeat(2001))).status).toBe(422);
    expect((await runRow(run.runId)).status).toBe('PUBLISH_UNKNOWN');

    const res = await resolve(run.runId, 'PUBLISHED');
    expect(res.body.data!.resolveUnknown).toEqual({ runStatus: 'PUBLISHED', changed: true });
    const replay = await resolve(run.runId, 'PUBLISHED');
    expect(replay.body.data!.resolveUnknown).toEqual({ runStatus: 'PUBLISHED', changed: false });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'PUBLISHED', error_stage: null, error_code: null, error_message: null, completed_at: null });
    expect(row.published_at).toBeInstanceOf(Date);
    expect(await lastEvent(run.runId, 'PUBLISH_UNKNOWN_RESOLVED')).toEqual({
      event_level: 'WARN',
      actor: 'alice-operator',
      message: REASON,
      details: { resolution: 'PUBLISHED', reason: REASON },
    });

    // target validation is still required after an operator's PUBLISHED
    const success = await api.gql(MARK_SUCCESS, { input: { runId: run.runId } });
    expect(success.body.data!.markSuccess.reasons).toEqual(['NO_METRICS']);
    await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect((await api.gql(MARK_SUCCESS, { input: { runId: run.runId } })).body.data!.markSuccess.success).toBe(true);
  });

  it('resolves PUBLISH_UNKNOWN to FAILED_PUBLISH, ending the run with the reason as its error message', async () => {
    const run = await toPublishUnknown();
    const res = await resolve(run.runId, 'FAILED_PUBLISH', 'target partition was not replaced');
    expect(res.body.data!.resolveUnknown).toEqual({ runStatus: 'FAILED_PUBLISH', changed: true });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({
      status: 'FAILED_PUBLISH',
      error_stage: 'PUBLISH',
      error_code: 'PUBLISH_UNKNOWN_RESOLVED',
      error_message: 'target partition was not replaced',
    });
    expect(row.completed_at).toBeInstanceOf(Date);
    expect((await resolve(run.runId, 'FAILED_PUBLISH')).body.data!.resolveUnknown).toEqual({ runStatus: 'FAILED_PUBLISH', changed: false });
    const other = await resolve(run.runId, 'PUBLISHED');
    expect(other.status).toBe(409);
    expect(other.details).toEqual({ runStatus: 'FAILED_PUBLISH' });
  });

  it('takes exactly one of two operators resolving concurrently in different ways', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await toPublishUnknown();
      const [published, failed] = await Promise.all([resolve(run.runId, 'PUBLISHED'), resolve(run.runId, 'FAILED_PUBLISH')]);
      const winner = published.status === 200 ? published : failed;
      const loser = winner === published ? failed : published;
      expect(winner.body.data!.resolveUnknown.changed).toBe(true);
      expect(loser.status).toBe(409);
      expect(loser.details).toEqual({ runStatus: winner.body.data!.resolveUnknown.runStatus });
      expect((await runRow(run.runId)).status).toBe(winner.body.data!.resolveUnknown.runStatus);
      const { rows } = await api.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN_RESOLVED'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('refuses a run that is not PUBLISH_UNKNOWN with 409 RUN_STATUS_MISMATCH, and an unknown run with 404', async () => {
    const run = await toStagingValidated(api);
    const res = await resolve(run.runId, 'PUBLISHED');
    expect(res.status).toBe(409);
    expect(res.code).toBe('RUN_STATUS_MISMATCH');
    expect(res.details).toEqual({ runStatus: 'STAGING_VALIDATED' });
    expect((await runRow(run.runId)).status).toBe('STAGING_VALIDATED');
    expect((await resolve(randomUUID(), 'PUBLISHED')).code).toBe('RUN_NOT_FOUND');
  });
});

describe('resendDispatch', () => {
  async function deadDispatch() {
    const run = await completeRun(api);
    await api.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'DEAD', attempt_count = 20, last_error = 'max attempts reached: 503',
              dead_at = clock_timestamp(), next_attempt_at = clock_timestamp() + interval '1 hour'
        WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    return run;
  }

  it('puts a DEAD dispatch back to PENDING with a fresh attempt budget, once, recording the operator and reason', async () => {
    const run = await deadDispatch();
    expect((await resend(run.runId, run.dispatchId, {}, 'nifi')).status).toBe(403);
    const res = await resend(run.runId, run.dispatchId, { reason: 'NiFi receiver is back' });
    expect(res.status).toBe(200);
    expect(res.body.data!.resendDispatch).toEqual({ dispatchId: run.dispatchId, status: 'PENDING' });
    const { rows } = await api.sql.query(
      `SELECT status, attempt_count, last_error, dead_at, next_attempt_at <= clock_timestamp() AS due
         FROM nifi_ops.load_dispatch WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    expect(rows[0]).toEqual({ status: 'PENDING', attempt_count: 0, last_error: null, dead_at: null, due: true });
    expect(await lastEvent(run.runId, 'DISPATCH_RESENT')).toEqual({
      event_level: 'WARN',
      actor: 'alice-operator',
      message: 'NiFi receiver is back',
      details: { dispatchId: run.dispatchId, dispatchType: 'VALIDATE_RUN', previousStatus: 'DEAD', reason: 'NiFi receiver is back' },
    });

    const again = await resend(run.runId, run.dispatchId);
    expect(again.status).toBe(409);
    expect(again.code).toBe('DISPATCH_STATUS_MISMATCH');
    expect(again.details).toEqual({ status: 'PENDING' });
  });

  it('resends an unacknowledged SENT dispatch, refuses an ACKED one, and wakes the dispatcher after commit', async () => {
    const run = await completeRun(api);
    await api.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'SENT', sent_at = clock_timestamp(), attempt_count = 3 WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    const listener = await api.sql.connect();
    const woken: string[] = [];
    listener.on('notification', (n) => woken.push(n.payload ?? ''));
    await listener.query('LISTEN load_dispatch');
    try {
      expect((await resend(run.runId, run.dispatchId)).body.data!.resendDispatch.status).toBe('PENDING');
      for (let i = 0; i < 100 && !woken.includes(run.runId); i++) await new Promise((r) => setTimeout(r, 50));
      expect(woken).toContain(run.runId);
    } finally {
      await listener.query('UNLISTEN load_dispatch');
      listener.release();
    }
    expect(await lastEvent(run.runId, 'DISPATCH_RESENT')).toMatchObject({
      message: null,
      details: expect.objectContaining({ previousStatus: 'SENT' }),
    });

    await api.gql(START_VALIDATION, { input: { runId: run.runId, dispatchId: run.dispatchId } });
    const acked = await resend(run.runId, run.dispatchId);
    expect(acked.status).toBe(409);
    expect(acked.details).toEqual({ status: 'ACKED' });
  });

  it('resends once under concurrent requests; the others see it PENDING already', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await deadDispatch();
      const results = await Promise.all(Array.from({ length: 4 }, () => resend(run.runId, run.dispatchId)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of results.filter((x) => x.status !== 200)) {
        expect(r.code).toBe('DISPATCH_STATUS_MISMATCH');
        expect(r.details).toEqual({ status: 'PENDING' });
      }
      const { rows } = await api.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'DISPATCH_RESENT'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('answers 404 DISPATCH_NOT_FOUND for a dispatch of another run, 404 RUN_NOT_FOUND for an unknown run, 422 for a short reason', async () => {
    const a = await deadDispatch();
    const b = await deadDispatch();
    const foreign = await resend(a.runId, b.dispatchId);
    expect(foreign.status).toBe(404);
    expect(foreign.code).toBe('DISPATCH_NOT_FOUND');
    expect((await resend(a.runId, randomUUID())).code).toBe('DISPATCH_NOT_FOUND');
    expect((await resend(randomUUID(), a.dispatchId)).code).toBe('RUN_NOT_FOUND');
    const short = await resend(a.runId, a.dispatchId, { reason: 'go' });
    expect(short.status).toBe(422);
    expect(short.details).toMatchObject({ field: 'input.reason' });
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = ANY($1)', [
      [a.dispatchId, b.dispatchId],
    ]);
    expect(rows.map((r) => r.status)).toEqual(['DEAD', 'DEAD']);
  });
});

describe('cancelRun', () => {
  async function expectCancelled(runId: string, from: string, reason = 'business date loaded twice') {
    const row = await runRow(runId);
    expect(row).toMatchObject({ status: 'CANCELLED', error_stage: 'OPERATOR', error_code: 'RUN_CANCELLED', error_message: reason });
    expect(row.completed_at).toBeInstanceOf(Date);
    const event = await lastEvent(runId, 'RUN_CANCELLED');
    expect(event).toMatchObject({ event_level: 'WARN', actor: 'alice-operator', details: expect.objectContaining({ from, reason }) });
    return event;
  }

  it('cancels a CREATED run, replays as unchanged, and frees the business key', async () => {
    const run = await createRun(api);
    const res = await cancel(run.runId);
    expect(res.body.data!.cancelRun).toEqual({ runStatus: 'CANCELLED', changed: true, abandonedPartitions: 0, cancelledDispatches: 0 });
    const event = await expectCancelled(run.runId, 'CREATED');
    expect(event.message).toBe('business date loaded twice');
    expect(event.details.publishedThenCancelled).toBe(false);
    expect((await cancel(run.runId, 'another reason')).body.data!.cancelRun).toEqual({
      runStatus: 'CANCELLED',
      changed: false,
      abandonedPartitions: 0,
      cancelledDispatches: 0,
    });
    const next = await api.gql(CREATE_RUN, {
      input: { jobKey: JOB, businessKey: run.businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_' },
    });
    expect(next.body.data!.createRun.created).toBe(true);
  });

  it('cancels an EXTRACTING run: unfinished partitions become ABANDONED, undelivered dispatches CANCELLED, finished ones stay', async () => {
    const run = await startRun(api, [3, 4, 0, 5, 6]);
    const running = await claim(api, run.runId, '0000');
    const done = await claim(api, run.runId, '0001');
    await report(api, chunkInput(run, '0001', done.claimToken, 0, 1, 4));
    // a reissued partition with its calls (the reissue itself is the sweeper's): one waiting, one sent, one acknowledged
    await api.sql.query(`UPDATE nifi_ops.load_partition SET status = 'RETRY' WHERE run_id = $1 AND partition_id = '0004'`, [run.runId]);
    await api.sql.query(
      `INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, partition_id, status)
       VALUES (gen_random_uuid(), $1, 'REISSUE_PARTITION', '0004', 'PENDING'), (gen_random_uuid(), $1, 'REISSUE_PARTITION', '0004', 'SENT'),
              (gen_random_uuid(), $1, 'REISSUE_PARTITION', '0004', 'ACKED')`,
      [run.runId],
    );

    const res = await cancel(run.runId);
    expect(res.body.data!.cancelRun).toEqual({ runStatus: 'CANCELLED', changed: true, abandonedPartitions: 3, cancelledDispatches: 2 });
    await expectCancelled(run.runId, 'EXTRACTING');
    const partitions = await api.sql.query(
      `SELECT partition_id, status, error_code, completed_at IS NOT NULL AS completed FROM nifi_ops.load_partition
        WHERE run_id = $1 ORDER BY partition_id`,
      [run.runId],
    );
    expect(partitions.rows).toEqual([
      { partition_id: '0000', status: 'ABANDONED', error_code: 'RUN_CANCELLED', completed: true },
      { partition_id: '0001', status: 'SUCCESS', error_code: null, completed: true },
      { partition_id: '0002', status: 'SUCCESS', error_code: null, completed: true },
      { partition_id: '0003', status: 'ABANDONED', error_code: 'RUN_CANCELLED', completed: true },
      { partition_id: '0004', status: 'ABANDONED', error_code: 'RUN_CANCELLED', completed: true },
    ]);
    const dispatches = await api.sql.query(
      `SELECT status, cancelled_at IS NOT NULL AS cancelled FROM nifi_ops.load_dispatch WHERE run_id = $1 ORDER BY status`,
      [run.runId],
    );
    expect(dispatches.rows).toEqual([
      { status: 'ACKED', cancelled: false },
      { status: 'CANCELLED', cancelled: true },
      { status: 'CANCELLED', cancelled: true },
    ]);

    // the owner's late chunk is still recorded and told the run ended; nobody can claim any more
    const late = await report(api, chunkInput(run, '0000', running.claimToken, 0, 1, 3));
    expect(late.result).toMatchObject({ recorded: true, partitionStatus: 'ABANDONED', runStatus: 'CANCELLED', validationScheduled: false });
    const reclaim = await api.gql(CLAIM, {
      input: { runId: run.runId, partitionId: '0003', claimToken: randomUUID(), workerNode: 'nifi-02' },
    });
    expect(reclaim.body.data!.claimPartition).toMatchObject({ claimed: false, runStatus: 'CANCELLED', partitionStatus: 'ABANDONED' });
    const failLate = await api.gql(FAIL_PARTITION, {
      input: {
        runId: run.runId,
        partitionId: '0000',
        claimToken: running.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'SQL',
        errorCode: 'E',
      },
    });
    expect(failLate.status).toBe(409);
    expect(failLate.details).toEqual({ partitionStatus: 'ABANDONED' });
  });

  it('cancels an EXTRACTED_VALIDATED run and its waiting validation call; a late start then loses', async () => {
    const run = await completeRun(api);
    const res = await cancel(run.runId);
    expect(res.body.data!.cancelRun).toEqual({ runStatus: 'CANCELLED', changed: true, abandonedPartitions: 0, cancelledDispatches: 1 });
    await expectCancelled(run.runId, 'EXTRACTED_VALIDATED');
    const start = await api.gql(START_VALIDATION, { input: { runId: run.runId, dispatchId: run.dispatchId } });
    expect(start.body.data!.startValidation).toMatchObject({ started: false, runStatus: 'CANCELLED' });
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [run.dispatchId]);
    expect(rows[0].status).toBe('CANCELLED');
  });

  it.each([
    ['STAGE_VALIDATING', toStageValidating],
    ['STAGING_VALIDATED', toStagingValidated],
  ])('cancels a %s run', async (from, to) => {
    const run = await to(api);
    expect((await cancel(run.runId)).body.data!.cancelRun).toMatchObject({ runStatus: 'CANCELLED', changed: true, cancelledDispatches: 0 });
    await expectCancelled(run.runId, from);
  });

  it('cancels a PUBLISHED run only as published-then-cancelled in the events', async () => {
    const run = await toPublished(api);
    const res = await cancel(run.runId, 'wrong source snapshot was published');
    expect(res.body.data!.cancelRun).toMatchObject({ runStatus: 'CANCELLED', changed: true });
    const event = await expectCancelled(run.runId, 'PUBLISHED', 'wrong source snapshot was published');
    expect(event.message).toBe('published, then cancelled: wrong source snapshot was published');
    expect(event.details.publishedThenCancelled).toBe(true);
    expect((await runRow(run.runId)).published_at).toBeInstanceOf(Date);
  });

  it('refuses PUBLISHING, PUBLISH_UNKNOWN and ended runs with 409 RUN_STATUS_MISMATCH and changes nothing', async () => {
    const publishing = await toStagingValidated(api);
    await api.gql(CLAIM_PUBLISH, { input: { runId: publishing.runId, publishToken: randomUUID() } });
    const unknown = await toPublishUnknown();
    const failed = await startRun(api, [3]);
    const owner = await claim(api, failed.runId, '0000');
    await report(api, chunkInput(failed, '0000', owner.claimToken, 0, 1, 2));
    for (const [run, status] of [
      [publishing, 'PUBLISHING'],
      [unknown, 'PUBLISH_UNKNOWN'],
      [failed, 'FAILED_EXTRACT'],
    ] as const) {
      const res = await cancel(run.runId);
      expect(res.status).toBe(409);
      expect(res.code).toBe('RUN_STATUS_MISMATCH');
      expect(res.details).toEqual({ runStatus: status });
      expect((await runRow(run.runId)).status).toBe(status);
      expect(await lastEvent(run.runId, 'RUN_CANCELLED')).toBeUndefined();
    }
  });

  it('needs the operator role, a reason of 5..2000 characters, and an existing run', async () => {
    const run = await createRun(api);
    expect((await cancel(run.runId, 'a good reason', 'nifi')).status).toBe(403);
    expect((await cancel(run.runId, 'a good reason', 'viewer')).status).toBe(403);
    expect((await cancel(run.runId, 'a good reason', null)).status).toBe(401);
    for (const reason of ['nope', '    ', 'r'.repeat(2001)]) {
      const res = await cancel(run.runId, reason);
      expect(res.status).toBe(422);
      expect(res.details).toMatchObject({ field: 'input.reason' });
    }
    const missingReason = await api.gql(CANCEL, { input: { runId: run.runId } }, { token: 'operator' });
    expect(missingReason.status).toBe(400);
    expect((await runRow(run.runId)).status).toBe('CREATED');
    const unknown = await cancel(randomUUID());
    expect(unknown.status).toBe(404);
    expect(unknown.code).toBe('RUN_NOT_FOUND');
  });

  it('cancels once under concurrent requests', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startRun(api, [3, 4]);
      const results = await Promise.all(Array.from({ length: 4 }, () => cancel(run.runId)));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      const changed = results.filter((r) => r.body.data!.cancelRun.changed);
      expect(changed).toHaveLength(1);
      expect(changed[0]!.body.data!.cancelRun.abandonedPartitions).toBe(2);
      const { rows } = await api.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CANCELLED'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('races claimPublish: exactly one of them wins and the final state agrees', async () => {
    const outcomes = { cancelled: 0, claimed: 0 };
    for (let rep = 0; rep < 12; rep++) {
      const run = await toStagingValidated(api, [2]);
      const publishToken = randomUUID();
      const [cancelled, claimed] = await Promise.all([
        cancel(run.runId),
        api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } }),
      ]);
      const row = await runRow(run.runId);
      if (claimed.body.data!.claimPublish.claimed) {
        outcomes.claimed++;
        expect(cancelled.status).toBe(409);
        expect(cancelled.details).toEqual({ runStatus: 'PUBLISHING' });
        expect(row).toMatchObject({ status: 'PUBLISHING', publish_token: publishToken });
      } else {
        outcomes.cancelled++;
        expect(cancelled.body.data!.cancelRun).toMatchObject({ runStatus: 'CANCELLED', changed: true });
        expect(claimed.body.data!.claimPublish).toEqual({ claimed: false, runStatus: 'CANCELLED' });
        expect(row).toMatchObject({ status: 'CANCELLED', publish_token: null });
      }
      const { rows } = await api.sql.query(
        `SELECT count(*) FILTER (WHERE event_name = 'RUN_CANCELLED')::int AS cancels,
                count(*) FILTER (WHERE event_name = 'PUBLISH_STARTED')::int AS claims
           FROM nifi_ops.load_event WHERE run_id = $1`,
        [run.runId],
      );
      expect(rows[0].cancels + rows[0].claims).toBe(1);
    }
    expect(outcomes.cancelled + outcomes.claimed).toBe(12);
  });

  it('races the last chunk report: the run ends CANCELLED with no unfinished partition and no undelivered dispatch', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startRun(api, [2, 3]);
      const first = await claim(api, run.runId, '0000');
      await report(api, chunkInput(run, '0000', first.claimToken, 0, 1, 2));
      const last = await claim(api, run.runId, '0001');
      const [cancelled, reported] = await Promise.all([cancel(run.runId), report(api, chunkInput(run, '0001', last.claimToken, 0, 1, 3))]);
      expect(cancelled.body.data!.cancelRun).toMatchObject({ runStatus: 'CANCELLED', changed: true });
      expect(reported.status).toBe(200);
      const { rows } = await api.sql.query(
        `SELECT (SELECT status FROM nifi_ops.load_run WHERE run_id = $1) AS run_status,
                (SELECT count(*)::int FROM nifi_ops.load_partition WHERE run_id = $1 AND status IN ('PENDING', 'RUNNING', 'RETRY')) AS unfinished,
                (SELECT count(*)::int FROM nifi_ops.load_dispatch WHERE run_id = $1 AND status IN ('PENDING', 'SENT')) AS undelivered,
                (SELECT status FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0001') AS last_partition`,
        [run.runId],
      );
      expect(rows[0]).toMatchObject({ run_status: 'CANCELLED', unfinished: 0, undelivered: 0 });
      // either the report completed extraction first (and the cancel took its validation call), or it came too late
      if (reported.result!.validationScheduled) {
        expect(rows[0].last_partition).toBe('SUCCESS');
        expect(cancelled.body.data!.cancelRun.cancelledDispatches).toBe(1);
      } else {
        expect(rows[0].last_partition).toBe('ABANDONED');
        expect(reported.result!.runStatus).toBe('CANCELLED');
      }
    }
  });
});

describe('Run.allowedActions: what the state machine lets an operator do, as the console asks it', () => {
  const ALLOWED = `query($runId: UUID!) { run(runId: $runId) { status allowedActions } }`;
  const allowed = async (runId: string) => (await api.gql(ALLOWED, { runId }, { token: 'viewer' })).body.data!.run;

  it('answers each status its actions, and each listed action is accepted', async () => {
    const created = await createRun(api);
    expect(await allowed(created.runId)).toEqual({ status: 'CREATED', allowedActions: ['CANCEL', 'RESEND_DISPATCH'] });

    const extracting = await startRun(api, [3, 4]);
    expect(await allowed(extracting.runId)).toEqual({
      status: 'EXTRACTING',
      allowedActions: ['CANCEL', 'REISSUE_PARTITION', 'RESEND_DISPATCH'],
    });
    const reissued = await api.gql(
      REISSUE_PARTITION,
      { input: { runId: extracting.runId, partitionId: '0000', reason: REASON } },
      { token: 'operator' },
    );
    expect(reissued.body.errors).toBeUndefined();

    const unknown = await publishUnknown(api);
    expect(await allowed(unknown.runId)).toEqual({ status: 'PUBLISH_UNKNOWN', allowedActions: ['RESOLVE_UNKNOWN', 'RESEND_DISPATCH'] });
    expect((await resolve(unknown.runId, 'FAILED_PUBLISH')).body.data!.resolveUnknown.changed).toBe(true);
    expect(await allowed(unknown.runId)).toEqual({ status: 'FAILED_PUBLISH', allowedActions: ['RESEND_DISPATCH'] });

    const cancelled = await api.gql(CANCEL, { input: { runId: created.runId, reason: REASON } }, { token: 'operator' });
    expect(cancelled.body.data!.cancelRun.runStatus).toBe('CANCELLED');
    expect(await allowed(created.runId)).toEqual({ status: 'CANCELLED', allowedActions: ['RESEND_DISPATCH'] });
  });

  it('leaves out what the server refuses: a PUBLISH_UNKNOWN run is not cancelled, an EXTRACTING one not resolved', async () => {
    const unknown = await publishUnknown(api);
    expect((await allowed(unknown.runId)).allowedActions).not.toContain('CANCEL');
    const cancel = await api.gql(CANCEL, { input: { runId: unknown.runId, reason: REASON } }, { token: 'operator' });
    expect([cancel.status, cancel.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);

    const extracting = await startRun(api, [3]);
    expect((await allowed(extracting.runId)).allowedActions).not.toContain('RESOLVE_UNKNOWN');
    const resolved = await resolve(extracting.runId, 'PUBLISHED');
    expect([resolved.status, resolved.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
  });
});
