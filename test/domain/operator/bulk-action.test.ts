// Bulk actions (README "Bulk actions"): the dry run lists the targets and changes nothing; the apply changes each
// target through its single-row rule, in its own transaction, with an event naming the bulk action, and answers
// the summary — changed, already so, refused by code; a filter selecting more than bulk.maxTargets is refused;
// rows that moved between the dry run and the apply, or during it, are counted by what the rule answered then.
// Roles, input parsing and the HTTP contract: test/api/operator/bulk-action.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { claimPublishOperation } from '../../../src/domain/publish/claim-publish.js';
import { bulkAction, type BulkActionCommand, type BulkFilter } from '../../../src/domain/operator/bulk-action.js';
import {
  cancelled,
  chunk,
  claimed,
  createdRun,
  type DomainTest,
  extractedRun,
  OPERATOR,
  publishingRun,
  publishUnknownRun,
  refusal,
  reissued,
  stagingValidatedRun,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const STALL_AFTER_MS = 10 * 60_000;
const SETTINGS = { maxTargets: 20, stallAfterMs: STALL_AFTER_MS };
const uniqueJob = (label: string) => `BULK_${label}_${randomUUID().slice(0, 8).toUpperCase()}`;
const anyFilter: BulkFilter = { jobKey: null, status: null, businessDateFrom: null, businessDateTo: null, errorCode: null };

function bulk(action: BulkActionCommand['action'], filter: Partial<BulkFilter>, dryRun: boolean, settings = SETTINGS) {
  return bulkAction(
    t.db,
    { action, filter: { ...anyFilter, ...filter }, dryRun, reason: 'NiFi outage of 3 December', actor: OPERATOR },
    settings,
  );
}

async function statusOf(runId: string): Promise<string> {
  const { rows } = await t.sql.query(`SELECT status FROM nifi_ops.load_run WHERE run_id = $1`, [runId]);
  return rows[0].status;
}

async function eventsOf(name: string, bulkActionId: string) {
  const { rows } = await t.sql.query<{
    run_id: string | null;
    partition_id: string | null;
    actor: string;
    details: Record<string, unknown>;
  }>(
    `SELECT run_id::text, partition_id, actor, details FROM nifi_ops.load_event WHERE event_name = $1 AND details->>'bulkActionId' = $2
      ORDER BY event_time, event_id`,
    [name, bulkActionId],
  );
  return rows;
}

/** Makes a RUNNING partition's owner silent for `minutes`, as if it had stopped reporting. */
async function silence(runId: string, partitionId: string, minutes: number) {
  await t.sql.query(
    `UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp() - make_interval(mins => $3) WHERE run_id = $1 AND partition_id = $2`,
    [runId, partitionId, minutes],
  );
}

describe('CANCEL_RUNS', () => {
  it('dry run: lists the active runs of the filter with what would become of each, and changes nothing', async () => {
    const job = uniqueJob('DRY');
    const created = await createdRun(t, { jobKey: job, businessKey: '2026-11-01' });
    const extracting = await startedRun(t, [1], { jobKey: job, businessKey: '2026-11-02' });
    const publishing = await publishingRun(t, [1], { jobKey: job, businessKey: '2026-11-03' });
    const ended = await createdRun(t, { jobKey: job, businessKey: '2026-11-04' });
    await cancelled(t, ended.runId);

    const dry = await bulk('CANCEL_RUNS', { jobKey: job }, true);
    expect(dry).toMatchObject({ bulkActionId: null, dryRun: true, limit: 20, changed: 2, alreadySo: 0, refused: 1 });
    expect(dry.refusals).toEqual([{ code: 'RUN_STATUS_MISMATCH', count: 1 }]);
    expect(dry.targets.map((x) => [x.runId, x.runStatus, x.outcome, x.code])).toEqual([
      [created.runId, 'CREATED', 'CHANGED', null],
      [extracting.runId, 'EXTRACTING', 'CHANGED', null],
      [publishing.runId, 'PUBLISHING', 'REFUSED', 'RUN_STATUS_MISMATCH'],
    ]);
    expect(await statusOf(created.runId)).toBe('CREATED');
    expect(await statusOf(extracting.runId)).toBe('EXTRACTING');
  });

  it('apply: cancels each through cancelRun with an event naming the bulk action, and records the summary once', async () => {
    const job = uniqueJob('APPLY');
    const [a, b] = [await startedRun(t, [1, 1], { jobKey: job }), await createdRun(t, { jobKey: job })];
    const publishing = await publishingRun(t, [1], { jobKey: job });
    const applied = await bulk('CANCEL_RUNS', { jobKey: job }, false);
    expect(applied).toMatchObject({
      dryRun: false,
      changed: 2,
      alreadySo: 0,
      refused: 1,
      refusals: [{ code: 'RUN_STATUS_MISMATCH', count: 1 }],
    });
    expect(applied.bulkActionId).toMatch(/^[0-9a-f-]{36}$/);
    expect([await statusOf(a.runId), await statusOf(b.runId), await statusOf(publishing.runId)]).toEqual([
      'CANCELLED',
      'CANCELLED',
      'PUBLISHING',
    ]);

    const cancelEvents = await eventsOf('RUN_CANCELLED', applied.bulkActionId!);
    expect(cancelEvents.map((e) => [e.run_id, e.actor, e.details.reason])).toEqual([
      [a.runId, OPERATOR, 'NiFi outage of 3 December'],
      [b.runId, OPERATOR, 'NiFi outage of 3 December'],
    ]);
    const [summary, ...more] = await eventsOf('BULK_ACTION_APPLIED', applied.bulkActionId!);
    expect(more).toEqual([]);
    expect(summary).toMatchObject({
      run_id: null,
      actor: OPERATOR,
      details: { action: 'CANCEL_RUNS', filter: { ...anyFilter, jobKey: job }, targets: 3, changed: 2, alreadySo: 0, refused: 1 },
    });
  });

  it('narrows by status, business dates (keys that are dates) and error code', async () => {
    const job = uniqueJob('FILTER');
    const runs = [];
    for (const day of ['2026-10-01', '2026-10-02', '2026-10-03', 'NOT_A_DATE'])
      runs.push(await createdRun(t, { jobKey: job, businessKey: day }));
    const extracting = await startedRun(t, [1], { jobKey: job, businessKey: '2026-10-02_B' });
    const inRange = await bulk('CANCEL_RUNS', { jobKey: job, businessDateFrom: '2026-10-02', businessDateTo: '2026-10-03' }, true);
    expect(inRange.targets.map((x) => x.businessKey)).toEqual(['2026-10-02', '2026-10-03']);
    expect((await bulk('CANCEL_RUNS', { jobKey: job, status: 'EXTRACTING' }, true)).targets.map((x) => x.runId)).toEqual([
      extracting.runId,
    ]);

    const unknown = await publishUnknownRun(t, 'HS2_TIMEOUT');
    const byCode = await bulk('CANCEL_RUNS', { errorCode: 'HS2_TIMEOUT' }, true);
    expect(byCode.targets.map((x) => [x.runId, x.runStatus, x.outcome, x.code])).toEqual([
      [unknown.runId, 'PUBLISH_UNKNOWN', 'REFUSED', 'RUN_STATUS_MISMATCH'],
    ]);
    expect(runs).toHaveLength(4);
  });

  it('refuses a filter that selects more than bulk.maxTargets with BULK_LIMIT_EXCEEDED, dry run or not, and changes nothing', async () => {
    const job = uniqueJob('CAP');
    const runs = [await createdRun(t, { jobKey: job }), await createdRun(t, { jobKey: job }), await createdRun(t, { jobKey: job })];
    for (const dryRun of [true, false]) {
      const error = await refusal(bulk('CANCEL_RUNS', { jobKey: job }, dryRun, { ...SETTINGS, maxTargets: 2 }));
      expect([error.code, error.details]).toEqual(['BULK_LIMIT_EXCEEDED', { limit: 2 }]);
    }
    for (const run of runs) expect(await statusOf(run.runId)).toBe('CREATED');
    expect((await bulk('CANCEL_RUNS', { jobKey: job }, false, { ...SETTINGS, maxTargets: 3 })).changed).toBe(3);
  });

  it('a run that moves between the dry run and the apply is counted as it is at the apply', async () => {
    const job = uniqueJob('MOVED');
    const [stays, cancelledMeanwhile, publishedMeanwhile] = [
      await createdRun(t, { jobKey: job }),
      await createdRun(t, { jobKey: job }),
      await stagingValidatedOf(job),
    ];
    const dry = await bulk('CANCEL_RUNS', { jobKey: job }, true);
    expect(dry).toMatchObject({ changed: 3, refused: 0 });

    await cancelled(t, cancelledMeanwhile.runId, 'another operator was quicker');
    await claimPublish(publishedMeanwhile.runId);
    const applied = await bulk('CANCEL_RUNS', { jobKey: job }, false);
    expect(applied.targets.map((x) => [x.runId, x.outcome, x.code])).toEqual([
      [stays.runId, 'CHANGED', null],
      [publishedMeanwhile.runId, 'REFUSED', 'RUN_STATUS_MISMATCH'],
    ]);
    expect(await eventsOf('RUN_CANCELLED', applied.bulkActionId!)).toHaveLength(1);
  });

  it('racing single cancels of the same runs on other connections: each run cancelled once, each target counted changed or already so', async () => {
    for (let rep = 0; rep < 4; rep++) {
      const job = uniqueJob(`RACE${rep}`);
      const runs = [];
      for (let i = 0; i < 6; i++) runs.push(await startedRun(t, [1, 1], { jobKey: job }));
      const [applied] = await Promise.all([
        bulk('CANCEL_RUNS', { jobKey: job }, false),
        ...runs.map((run) => cancelled(t, run.runId, 'single cancel')),
      ]);
      // a run cancelled before the selection is no target; one cancelled after it is already so
      expect(applied.changed + applied.alreadySo).toBe(applied.targets.length);
      expect(applied.refused).toBe(0);
      for (const run of runs) expect(await statusOf(run.runId)).toBe('CANCELLED');
      const { rows } = await t.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE event_name = 'RUN_CANCELLED' AND run_id = ANY($1::uuid[])`,
        [runs.map((r) => r.runId)],
      );
      expect(rows[0]!.n).toBe(runs.length);
      expect(await eventsOf('RUN_CANCELLED', applied.bulkActionId!)).toHaveLength(applied.changed);
    }
  });
});

const stagingValidatedOf = (jobKey: string) => stagingValidatedRun(t, [1], { jobKey });
const claimPublish = (runId: string) => perform(t.db, claimPublishOperation, { runId, publishToken: randomUUID(), actor: OPERATOR });

describe('RESEND_DISPATCHES', () => {
  it('resends the DEAD dispatches of the filter through resendDispatch; one resent meanwhile is no longer a target', async () => {
    const job = uniqueJob('RESEND');
    const [one, two] = [await extractedRun(t, [1], { jobKey: job }), await extractedRun(t, [1], { jobKey: job })];
    await t.sql.query(
      `UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = ANY($1::uuid[])`,
      [[one.dispatchId, two.dispatchId]],
    );
    const dry = await bulk('RESEND_DISPATCHES', { jobKey: job }, true);
    expect(dry.targets.map((x) => [x.dispatchId, x.dispatchType, x.outcome])).toEqual([
      [one.dispatchId, 'VALIDATE_RUN', 'CHANGED'],
      [two.dispatchId, 'VALIDATE_RUN', 'CHANGED'],
    ]);
    const applied = await bulk('RESEND_DISPATCHES', { jobKey: job, status: 'EXTRACTED_VALIDATED' }, false);
    expect(applied).toMatchObject({ changed: 2, alreadySo: 0, refused: 0 });
    const { rows } = await t.sql.query(`SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = ANY($1::uuid[])`, [
      [one.dispatchId, two.dispatchId],
    ]);
    expect(rows.map((r) => r.status)).toEqual(['PENDING', 'PENDING']);
    expect((await eventsOf('DISPATCH_RESENT', applied.bulkActionId!)).map((e) => e.details.dispatchId).sort()).toEqual(
      [one.dispatchId, two.dispatchId].sort(),
    );
    expect((await bulk('RESEND_DISPATCHES', { jobKey: job }, false)).targets).toEqual([]);
  });
});

describe('REISSUE_PARTITIONS', () => {
  it('reissues the RUNNING partitions silent for monitor.stallAfter through reissuePartition; a live one is not a target', async () => {
    const job = uniqueJob('REISSUE');
    const run = await startedRun(t, [2, 2, 2], { jobKey: job });
    const owners = [await claimed(t, run.runId, '0000'), await claimed(t, run.runId, '0001'), await claimed(t, run.runId, '0002')];
    await silence(run.runId, '0000', 30);
    await silence(run.runId, '0001', 30);
    const dry = await bulk('REISSUE_PARTITIONS', { jobKey: job }, true);
    expect(dry.targets.map((x) => [x.partitionId, x.outcome])).toEqual([
      ['0000', 'CHANGED'],
      ['0001', 'CHANGED'],
    ]);

    // 0001's owner reports after the dry run: at the apply it is alive, so not selected
    await perform(t.db, reportChunkOperation, chunk(run, '0001', owners[1]!.claimToken, 0, 2, 1));
    const applied = await bulk('REISSUE_PARTITIONS', { jobKey: job }, false);
    expect(applied.targets.map((x) => [x.partitionId, x.outcome])).toEqual([['0000', 'CHANGED']]);
    const { rows } = await t.sql.query(`SELECT partition_id, status FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id`, [
      run.runId,
    ]);
    expect(rows.map((r) => r.status)).toEqual(['RETRY', 'RUNNING', 'RUNNING']);
    const [event] = await eventsOf('RECOVERY_REISSUED', applied.bulkActionId!);
    expect(event).toMatchObject({ run_id: run.runId, partition_id: '0000', actor: OPERATOR });
  });
  it('racing single reissues of the same partitions: each reissued once, each target counted changed or already so', async () => {
    for (let rep = 0; rep < 4; rep++) {
      const job = uniqueJob(`REISSUE_RACE${rep}`);
      const run = await startedRun(t, [1, 1, 1, 1, 1, 1], { jobKey: job });
      const ids = ['0000', '0001', '0002', '0003', '0004', '0005'];
      for (const id of ids) {
        await claimed(t, run.runId, id);
        await silence(run.runId, id, 30);
      }
      const [applied, ...singles] = await Promise.all([
        bulk('REISSUE_PARTITIONS', { jobKey: job }, false),
        ...ids.map((id) =>
          reissued(t, run.runId, id, 'single reissue').then(
            () => 'reissued',
            (error: { code?: string }) => error.code,
          ),
        ),
      ]);
      // a partition reissued before the selection is no target (it is RETRY); one reissued after it is already so
      expect(applied.changed + applied.alreadySo).toBe(applied.targets.length);
      expect(applied.refused).toBe(0);
      expect(singles.every((s) => s === 'reissued' || s === 'PARTITION_STATUS_MISMATCH')).toBe(true);
      const { rows } = await t.sql.query<{ partition_id: string; n: number }>(
        `SELECT partition_id, count(*)::int AS n FROM nifi_ops.load_event WHERE event_name = 'RECOVERY_REISSUED' AND run_id = $1
          GROUP BY partition_id ORDER BY partition_id`,
        [run.runId],
      );
      expect(rows).toEqual(ids.map((partition_id) => ({ partition_id, n: 1 })));
      expect(await eventsOf('RECOVERY_REISSUED', applied.bulkActionId!)).toHaveLength(applied.changed);
    }
  });
});
