// The operator's rules (ref §5): resolveUnknown, resendDispatch and cancelRun — their transitions, refusals and
// records, and their races with each other and with NiFi's calls on separate connections — performed on the
// database directly. Roles, input parsing and Run.allowedActions: test/api/operator/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { resendDispatchOperation } from '../../../src/domain/operator/resend-dispatch.js';
import { resolveUnknownOperation } from '../../../src/domain/operator/resolve-unknown.js';
import { claimPartitionOperation } from '../../../src/domain/partitions/claim-partition.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import { markSuccessOperation } from '../../../src/domain/publish/mark-success.js';
import { startValidationOperation } from '../../../src/domain/validation/start-validation.js';
import {
  ACTOR,
  cancelled,
  chunk,
  claimed,
  createdRun,
  type DomainTest,
  extractedRun,
  measured as metric,
  metricsRecorded,
  OPERATOR,
  partitionFailed,
  publishedRun,
  publishUnknownRun,
  refusal,
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

const REASON = 'checked the target table by hand';

const resolve = (runId: string, resolution: 'PUBLISHED' | 'FAILED_PUBLISH', reason = REASON) =>
  perform(t.db, resolveUnknownOperation, { runId, resolution, reason, actor: OPERATOR });
const resend = (runId: string, dispatchId: string, reason: string | null = null) =>
  perform(t.db, resendDispatchOperation, { runId, dispatchId, reason, actor: OPERATOR });
const cancel = (runId: string, reason = 'business date loaded twice') => cancelled(t, runId, reason);
const markSuccess = (runId: string) => perform(t.db, markSuccessOperation, { runId, targetCount: null, actor: ACTOR });
const claimPublish = (runId: string, publishToken: string) => perform(t.db, claimPublishOperation, { runId, publishToken, actor: ACTOR });
const report = (cmd: Parameters<typeof chunk>) => perform(t.db, reportChunkOperation, chunk(...cmd));

async function runRow(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT status, published_at, completed_at, error_stage, error_code, error_message, publish_token::text
       FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function lastEvent(runId: string, name: string) {
  const { rows } = await t.sql.query(
    `SELECT event_level, actor, message, details FROM nifi_ops.load_event
      WHERE run_id = $1 AND event_name = $2 ORDER BY event_time DESC LIMIT 1`,
    [runId, name],
  );
  return rows[0];
}

describe('resolveUnknown', () => {
  it('resolves PUBLISH_UNKNOWN to PUBLISHED for an operator, clears the publish error and records name and reason', async () => {
    const run = await publishUnknownRun(t, 'HS2_TIMEOUT');
    expect(await resolve(run.runId, 'PUBLISHED')).toEqual({ runStatus: 'PUBLISHED', changed: true });
    expect(await resolve(run.runId, 'PUBLISHED')).toEqual({ runStatus: 'PUBLISHED', changed: false });
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
    expect((await markSuccess(run.runId)).reasons).toEqual(['NO_METRICS']);
    await metricsRecorded(t, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')]);
    expect((await markSuccess(run.runId)).success).toBe(true);
  });

  it('resolves PUBLISH_UNKNOWN to FAILED_PUBLISH, ending the run with the reason as its error message', async () => {
    const run = await publishUnknownRun(t);
    expect(await resolve(run.runId, 'FAILED_PUBLISH', 'target partition was not replaced')).toEqual({
      runStatus: 'FAILED_PUBLISH',
      changed: true,
    });
    const row = await runRow(run.runId);
    expect(row).toMatchObject({
      status: 'FAILED_PUBLISH',
      error_stage: 'PUBLISH',
      error_code: 'PUBLISH_UNKNOWN_RESOLVED',
      error_message: 'target partition was not replaced',
    });
    expect(row.completed_at).toBeInstanceOf(Date);
    expect(await resolve(run.runId, 'FAILED_PUBLISH')).toEqual({ runStatus: 'FAILED_PUBLISH', changed: false });
    const other = await refusal(resolve(run.runId, 'PUBLISHED'));
    expect(other.httpStatus).toBe(409);
    expect(other.details).toEqual({ runStatus: 'FAILED_PUBLISH' });
  });

  it('takes exactly one of two operators resolving concurrently in different ways', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await publishUnknownRun(t);
      const outcomes = await Promise.allSettled([resolve(run.runId, 'PUBLISHED'), resolve(run.runId, 'FAILED_PUBLISH')]);
      const winner = outcomes.find((o) => o.status === 'fulfilled');
      const loser = outcomes.find((o) => o.status === 'rejected');
      expect(winner!.value.changed).toBe(true);
      expect(loser!.reason).toMatchObject({ httpStatus: 409 });
      expect(loser!.reason.details).toEqual({ runStatus: winner!.value.runStatus });
      expect((await runRow(run.runId)).status).toBe(winner!.value.runStatus);
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN_RESOLVED'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('refuses a run that is not PUBLISH_UNKNOWN with 409 RUN_STATUS_MISMATCH, and an unknown run with 404', async () => {
    const run = await stagingValidatedRun(t);
    const res = await refusal(resolve(run.runId, 'PUBLISHED'));
    expect([res.httpStatus, res.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
    expect(res.details).toEqual({ runStatus: 'STAGING_VALIDATED' });
    expect((await runRow(run.runId)).status).toBe('STAGING_VALIDATED');
    const missing = await refusal(resolve(randomUUID(), 'PUBLISHED'));
    expect([missing.httpStatus, missing.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });
});

describe('resendDispatch', () => {
  async function deadDispatch() {
    const run = await extractedRun(t);
    await t.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'DEAD', attempt_count = 20, last_error = 'max attempts reached: 503',
              dead_at = clock_timestamp(), next_attempt_at = clock_timestamp() + interval '1 hour'
        WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    return run;
  }

  it('puts a DEAD dispatch back to PENDING with a fresh attempt budget, once, recording the operator and reason', async () => {
    const run = await deadDispatch();
    expect(await resend(run.runId, run.dispatchId, 'NiFi receiver is back')).toEqual({
      runId: run.runId,
      dispatchId: run.dispatchId,
      status: 'PENDING',
    });
    const { rows } = await t.sql.query(
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

    const again = await refusal(resend(run.runId, run.dispatchId));
    expect([again.httpStatus, again.code]).toEqual([409, 'DISPATCH_STATUS_MISMATCH']);
    expect(again.details).toEqual({ status: 'PENDING' });
  });

  it('resends an unacknowledged SENT dispatch, refuses an ACKED one, and wakes the dispatcher after commit', async () => {
    const run = await extractedRun(t);
    await t.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'SENT', sent_at = clock_timestamp(), attempt_count = 3 WHERE dispatch_id = $1`,
      [run.dispatchId],
    );
    const listener = await t.sql.connect();
    const woken: string[] = [];
    listener.on('notification', (n) => woken.push(n.payload ?? ''));
    await listener.query('LISTEN load_dispatch');
    try {
      expect((await resend(run.runId, run.dispatchId)).status).toBe('PENDING');
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

    await perform(t.db, startValidationOperation, { runId: run.runId, dispatchId: run.dispatchId, node: '', actor: ACTOR });
    const acked = await refusal(resend(run.runId, run.dispatchId));
    expect(acked.httpStatus).toBe(409);
    expect(acked.details).toEqual({ status: 'ACKED' });
  });

  it('resends once under concurrent requests; the others see it PENDING already', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await deadDispatch();
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => resend(run.runId, run.dispatchId)));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results.flatMap((x) => (x.status === 'rejected' ? [x.reason] : []))) {
        expect(r.code).toBe('DISPATCH_STATUS_MISMATCH');
        expect(r.details).toEqual({ status: 'PENDING' });
      }
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'DISPATCH_RESENT'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('answers 404 DISPATCH_NOT_FOUND for a dispatch of another run, 404 RUN_NOT_FOUND for an unknown run', async () => {
    const a = await deadDispatch();
    const b = await deadDispatch();
    const foreign = await refusal(resend(a.runId, b.dispatchId));
    expect([foreign.httpStatus, foreign.code]).toEqual([404, 'DISPATCH_NOT_FOUND']);
    expect((await refusal(resend(a.runId, randomUUID()))).code).toBe('DISPATCH_NOT_FOUND');
    expect((await refusal(resend(randomUUID(), a.dispatchId))).code).toBe('RUN_NOT_FOUND');
    const { rows } = await t.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = ANY($1)', [
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
    const run = await createdRun(t);
    expect(await cancel(run.runId)).toEqual({ runStatus: 'CANCELLED', changed: true, abandonedPartitions: 0, cancelledDispatches: 0 });
    const event = await expectCancelled(run.runId, 'CREATED');
    expect(event.message).toBe('business date loaded twice');
    expect(event.details.publishedThenCancelled).toBe(false);
    expect(await cancel(run.runId, 'another reason')).toEqual({
      runStatus: 'CANCELLED',
      changed: false,
      abandonedPartitions: 0,
      cancelledDispatches: 0,
    });
    expect((await createdRun(t, { businessKey: run.businessKey })).created).toBe(true);
  });

  it('cancels an EXTRACTING run: unfinished partitions become ABANDONED, undelivered dispatches CANCELLED, finished ones stay', async () => {
    const run = await startedRun(t, [3, 4, 0, 5, 6]);
    const running = await claimed(t, run.runId, '0000');
    const done = await claimed(t, run.runId, '0001');
    await report([run, '0001', done.claimToken, 0, 1, 4]);
    // a reissued partition with its calls (the reissue itself is the sweeper's): one waiting, one sent, one acknowledged
    await t.sql.query(`UPDATE nifi_ops.load_partition SET status = 'RETRY' WHERE run_id = $1 AND partition_id = '0004'`, [run.runId]);
    await t.sql.query(
      `INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, partition_id, status)
       VALUES (gen_random_uuid(), $1, 'REISSUE_PARTITION', '0004', 'PENDING'), (gen_random_uuid(), $1, 'REISSUE_PARTITION', '0004', 'SENT'),
              (gen_random_uuid(), $1, 'REISSUE_PARTITION', '0004', 'ACKED')`,
      [run.runId],
    );

    expect(await cancel(run.runId)).toEqual({ runStatus: 'CANCELLED', changed: true, abandonedPartitions: 3, cancelledDispatches: 2 });
    await expectCancelled(run.runId, 'EXTRACTING');
    const partitions = await t.sql.query(
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
    const dispatches = await t.sql.query(
      `SELECT status, cancelled_at IS NOT NULL AS cancelled FROM nifi_ops.load_dispatch WHERE run_id = $1 ORDER BY status`,
      [run.runId],
    );
    expect(dispatches.rows).toEqual([
      { status: 'ACKED', cancelled: false },
      { status: 'CANCELLED', cancelled: true },
      { status: 'CANCELLED', cancelled: true },
    ]);

    // the owner's late chunk is still recorded and told the run ended; nobody can claim any more
    const late = await report([run, '0000', running.claimToken, 0, 1, 3]);
    expect(late).toMatchObject({ recorded: true, partitionStatus: 'ABANDONED', runStatus: 'CANCELLED', validationScheduled: false });
    const reclaim = await perform(t.db, claimPartitionOperation, {
      runId: run.runId,
      partitionId: '0003',
      claimToken: randomUUID(),
      workerNode: 'nifi-02',
      actor: ACTOR,
    });
    expect(reclaim).toMatchObject({ claimed: false, runStatus: 'CANCELLED', partitionStatus: 'ABANDONED' });
    const failLate = await refusal(partitionFailed(t, run.runId, running.claimToken, { errorCode: 'E', message: '' }));
    expect(failLate.httpStatus).toBe(409);
    expect(failLate.details).toEqual({ partitionStatus: 'ABANDONED' });
  });

  it('cancels an EXTRACTED_VALIDATED run and its waiting validation call; a late start then loses', async () => {
    const run = await extractedRun(t);
    expect(await cancel(run.runId)).toEqual({ runStatus: 'CANCELLED', changed: true, abandonedPartitions: 0, cancelledDispatches: 1 });
    await expectCancelled(run.runId, 'EXTRACTED_VALIDATED');
    const start = await perform(t.db, startValidationOperation, { runId: run.runId, dispatchId: run.dispatchId, node: '', actor: ACTOR });
    expect(start).toMatchObject({ started: false, runStatus: 'CANCELLED' });
    const { rows } = await t.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [run.dispatchId]);
    expect(rows[0].status).toBe('CANCELLED');
  });

  it.each([
    ['STAGE_VALIDATING', stageValidatingRun],
    ['STAGING_VALIDATED', stagingValidatedRun],
  ])('cancels a %s run', async (from, to) => {
    const run = await to(t);
    expect(await cancel(run.runId)).toMatchObject({ runStatus: 'CANCELLED', changed: true, cancelledDispatches: 0 });
    await expectCancelled(run.runId, from);
  });

  it('cancels a PUBLISHED run only as published-then-cancelled in the events', async () => {
    const run = await publishedRun(t);
    expect(await cancel(run.runId, 'wrong source snapshot was published')).toMatchObject({ runStatus: 'CANCELLED', changed: true });
    const event = await expectCancelled(run.runId, 'PUBLISHED', 'wrong source snapshot was published');
    expect(event.message).toBe('published, then cancelled: wrong source snapshot was published');
    expect(event.details.publishedThenCancelled).toBe(true);
    expect((await runRow(run.runId)).published_at).toBeInstanceOf(Date);
  });

  it('refuses PUBLISHING, PUBLISH_UNKNOWN and ended runs with 409 RUN_STATUS_MISMATCH and changes nothing', async () => {
    const publishing = await stagingValidatedRun(t);
    await claimPublish(publishing.runId, randomUUID());
    const unknown = await publishUnknownRun(t);
    const failed = await startedRun(t, [3]);
    const owner = await claimed(t, failed.runId, '0000');
    await report([failed, '0000', owner.claimToken, 0, 1, 2]);
    for (const [run, status] of [
      [publishing, 'PUBLISHING'],
      [unknown, 'PUBLISH_UNKNOWN'],
      [failed, 'FAILED_EXTRACT'],
    ] as const) {
      const res = await refusal(cancel(run.runId));
      expect([res.httpStatus, res.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
      expect(res.details).toEqual({ runStatus: status });
      expect((await runRow(run.runId)).status).toBe(status);
      expect(await lastEvent(run.runId, 'RUN_CANCELLED')).toBeUndefined();
    }
  });

  it('answers 404 RUN_NOT_FOUND for an unknown run', async () => {
    const unknown = await refusal(cancel(randomUUID()));
    expect([unknown.httpStatus, unknown.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });

  it('cancels once under concurrent requests', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const run = await startedRun(t, [3, 4]);
      const results = await Promise.all(Array.from({ length: 4 }, () => cancel(run.runId)));
      const changed = results.filter((r) => r.changed);
      expect(changed).toHaveLength(1);
      expect(changed[0]!.abandonedPartitions).toBe(2);
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CANCELLED'`,
        [run.runId],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('races claimPublish: exactly one of them wins and the final state agrees', async () => {
    const outcomes = { cancelled: 0, claimed: 0 };
    for (let rep = 0; rep < 12; rep++) {
      const run = await stagingValidatedRun(t, [2]);
      const publishToken = randomUUID();
      const [cancelOutcome, claim] = await Promise.allSettled([cancel(run.runId), claimPublish(run.runId, publishToken)]);
      if (claim.status === 'rejected') throw claim.reason;
      const row = await runRow(run.runId);
      if (claim.value.claimed) {
        outcomes.claimed++;
        expect(cancelOutcome).toMatchObject({ status: 'rejected', reason: { httpStatus: 409, details: { runStatus: 'PUBLISHING' } } });
        expect(row).toMatchObject({ status: 'PUBLISHING', publish_token: publishToken });
      } else {
        outcomes.cancelled++;
        expect(cancelOutcome).toMatchObject({ status: 'fulfilled', value: { runStatus: 'CANCELLED', changed: true } });
        expect(claim.value).toEqual({ claimed: false, runStatus: 'CANCELLED' });
        expect(row).toMatchObject({ status: 'CANCELLED', publish_token: null });
      }
      const { rows } = await t.sql.query(
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
      const run = await startedRun(t, [2, 3]);
      const first = await claimed(t, run.runId, '0000');
      await report([run, '0000', first.claimToken, 0, 1, 2]);
      const last = await claimed(t, run.runId, '0001');
      const [cancelResult, reported] = await Promise.all([cancel(run.runId), report([run, '0001', last.claimToken, 0, 1, 3])]);
      expect(cancelResult).toMatchObject({ runStatus: 'CANCELLED', changed: true });
      const { rows } = await t.sql.query(
        `SELECT (SELECT status FROM nifi_ops.load_run WHERE run_id = $1) AS run_status,
                (SELECT count(*)::int FROM nifi_ops.load_partition WHERE run_id = $1 AND status IN ('PENDING', 'RUNNING', 'RETRY')) AS unfinished,
                (SELECT count(*)::int FROM nifi_ops.load_dispatch WHERE run_id = $1 AND status IN ('PENDING', 'SENT')) AS undelivered,
                (SELECT status FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0001') AS last_partition`,
        [run.runId],
      );
      expect(rows[0]).toMatchObject({ run_status: 'CANCELLED', unfinished: 0, undelivered: 0 });
      // either the report completed extraction first (and the cancel took its validation call), or it came too late
      if (reported.validationScheduled) {
        expect(rows[0].last_partition).toBe('SUCCESS');
        expect(cancelResult.cancelledDispatches).toBe(1);
      } else {
        expect(rows[0].last_partition).toBe('ABANDONED');
        expect(reported.runStatus).toBe('CANCELLED');
      }
    }
  });
});
