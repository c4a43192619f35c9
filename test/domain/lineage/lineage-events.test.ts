// Which LINEAGE_EVENT calls the ledger writes (prisma/functions/06_lineage.sql's trigger): one per run and eventType,
// in the transaction of the move, only while lineage is on; a run's end leaves them be; the lease hands them out
// only to a worker that has lineage enabled. Their delivery and their bodies against the standard: test/openlineage/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { cancelUnwantedDispatchesOperation, leaseDispatchesOperation } from '../../../src/domain/dispatch/lease.js';
import { setLineageDelivery } from '../../../src/domain/lineage/lineage-switch.js';
import { resolveUnknownOperation } from '../../../src/domain/operator/resolve-unknown.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { sweepOnceOperation } from '../../../src/domain/sweeper/sweep.js';
import { transitionRun } from '../../../src/domain/transitions.js';
import {
  cancelled,
  chunk,
  claimed,
  createdRun,
  failedRun,
  OPERATOR,
  publishedRun,
  publishUnknownRun,
  startDomainTest,
  startedRun,
  succeeded,
  type DomainTest,
} from '../support/fixtures.js';

let t: DomainTest;

beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await setLineageDelivery(t.sql, true);
});

/** A run's LINEAGE_EVENT calls, oldest first: [eventType, status]. */
async function lineageCalls(runId: string): Promise<Array<[string, string]>> {
  const { rows } = await t.sql.query<{ lineage_event_type: string; status: string }>(
    `SELECT lineage_event_type, status FROM nifi_ops.load_dispatch
      WHERE run_id = $1 AND dispatch_type = 'LINEAGE_EVENT' ORDER BY created_at, lineage_event_type`,
    [runId],
  );
  return rows.map((r) => [r.lineage_event_type, r.status]);
}

describe('lineage off', () => {
  it('writes no call for any move while lineage.enabled is false, the default', async () => {
    expect(t.config.lineage.enabled).toBe(false);
    expect(await setLineageDelivery(t.sql, t.config.lineage.enabled)).toBe(true);
    expect(await setLineageDelivery(t.sql, false)).toBe(false);
    const done = await publishedRun(t);
    await succeeded(t, done.runId);
    const failed = await createdRun(t);
    await failedRun(t, failed.runId);
    const aborted = await startedRun(t, [3]);
    await cancelled(t, aborted.runId);
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE dispatch_type = 'LINEAGE_EVENT'`);
    expect(rows[0].n).toBe(0);
  });
});

describe('lineage on: one call per run and eventType, written with the move', () => {
  it('START when extraction starts, COMPLETE at SUCCESS', async () => {
    const run = await createdRun(t);
    expect(await lineageCalls(run.runId)).toEqual([]);
    const done = await publishedRun(t);
    expect(await lineageCalls(done.runId)).toEqual([['START', 'PENDING']]);
    await succeeded(t, done.runId);
    expect(await lineageCalls(done.runId)).toEqual([
      ['START', 'PENDING'],
      ['COMPLETE', 'PENDING'],
    ]);
  });

  it('FAIL when report_chunk fails the extraction in SQL, and a cancel leaves the run’s lineage calls be (ABORT)', async () => {
    const run = await startedRun(t, [3, 4]);
    const { claimToken } = await claimed(t, run.runId, '0000');
    // 2 rows where the manifest expects 3: the partition gate fails the run inside nifi_ops.report_chunk
    await perform(t.db, reportChunkOperation, chunk(run, '0000', claimToken, 0, 1, 2));
    const { rows } = await t.sql.query(`SELECT status FROM nifi_ops.load_run WHERE run_id = $1`, [run.runId]);
    expect(rows[0].status).toBe('FAILED_EXTRACT');
    expect(await lineageCalls(run.runId)).toEqual([
      ['START', 'PENDING'],
      ['FAIL', 'PENDING'],
    ]);

    const aborted = await startedRun(t, [3]);
    const answer = await cancelled(t, aborted.runId);
    expect(answer.runStatus).toBe('CANCELLED');
    // the sweeper's R6 cancels what an ended run leaves undelivered: not its lineage calls
    await perform(t.db, sweepOnceOperation, t.config);
    expect(await lineageCalls(aborted.runId)).toEqual([
      ['START', 'PENDING'],
      ['ABORT', 'PENDING'],
    ]);
  });

  it('gives a run that ended before extraction its START with its end', async () => {
    const run = await createdRun(t);
    await failedRun(t, run.runId);
    expect(await lineageCalls(run.runId)).toEqual([
      ['START', 'PENDING'],
      ['FAIL', 'PENDING'],
    ]);
  });

  it('makes the resolution of PUBLISH_UNKNOWN an event: RUNNING when published (COMPLETE follows), FAIL when not', async () => {
    const published = await publishUnknownRun(t);
    const resolve = (runId: string, resolution: 'PUBLISHED' | 'FAILED_PUBLISH') =>
      perform(t.db, resolveUnknownOperation, { runId, resolution, reason: 'checked the metastore', actor: OPERATOR });
    await resolve(published.runId, 'PUBLISHED');
    expect(await lineageCalls(published.runId)).toEqual([
      ['START', 'PENDING'],
      ['RUNNING', 'PENDING'],
    ]);
    await succeeded(t, published.runId);
    expect((await lineageCalls(published.runId)).map(([type]) => type)).toEqual(['START', 'RUNNING', 'COMPLETE']);

    const failed = await publishUnknownRun(t);
    await resolve(failed.runId, 'FAILED_PUBLISH');
    expect((await lineageCalls(failed.runId)).map(([type]) => type)).toEqual(['START', 'FAIL']);
  });

  it('writes nothing when the move rolls back', async () => {
    const run = await createdRun(t);
    await expect(
      inTransaction(t.db, async (tx) => {
        await transitionRun(tx, { runId: run.runId }, { from: ['CREATED'], to: 'CANCELLED' });
        expect(
          (
            await tx.$queryRaw<Array<{ n: number }>>`
          SELECT count(*)::int AS n FROM nifi_ops.load_dispatch WHERE run_id = ${run.runId}::uuid`
          )[0]!.n,
        ).toBe(2);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await lineageCalls(run.runId)).toEqual([]);
  });

  it('holds one call per run and eventType: a second one is refused', async () => {
    const run = await startedRun(t, [3]);
    const duplicate = t.sql.query(
      `INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, lineage_event_type) VALUES ($1, $2, 'LINEAGE_EVENT', 'START')`,
      [randomUUID(), run.runId],
    );
    await expect(duplicate).rejects.toMatchObject({ code: '23505', constraint: 'uq_load_dispatch_lineage_event' });
    const noType = t.sql.query(`INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type) VALUES ($1, $2, 'LINEAGE_EVENT')`, [
      randomUUID(),
      run.runId,
    ]);
    await expect(noType).rejects.toMatchObject({ code: '23514', constraint: 'ck_load_dispatch_target' });
    const unknownType = t.sql.query(
      `INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, lineage_event_type) VALUES ($1, $2, 'LINEAGE_EVENT', 'OTHER')`,
      [randomUUID(), run.runId],
    );
    await expect(unknownType).rejects.toMatchObject({ code: '23514', constraint: 'ck_load_dispatch_lineage_event_type' });
  });
});

describe('leasing lineage calls', () => {
  it('leases them with their run’s facts to a worker with lineage enabled; one without cancels them', async () => {
    // nothing else due: only this test's calls are leased
    await t.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp() WHERE status = 'PENDING'`);
    const run = await publishedRun(t);
    await succeeded(t, run.runId);
    const { leased, unwanted } = await perform(t.db, leaseDispatchesOperation, {
      batch: 100,
      leaseMs: 60_000,
      alertReceivers: [],
      lineage: true,
      nifi: true,
    });
    expect(unwanted).toEqual([]);
    const complete = leased.find((d) => d.runId === run.runId && d.lineage?.eventType === 'COMPLETE');
    expect(complete?.lineage).toEqual({
      eventType: 'COMPLETE',
      eventTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      jobKey: 'ORACLE_INSP_DTL_DAILY',
      businessKey: run.businessKey,
      status: 'SUCCESS',
      snapshotScn: expect.stringMatching(/^\d+$/),
      sourceCount: 7,
      extractedCount: 7,
      targetCount: 7,
      parameters: { allowEmptySource: false },
      errorStage: null,
      errorCode: null,
      errorMessage: null,
      publishQueryId: null,
      backfillId: null,
      flowRegistry: null,
      flowBucket: null,
      flowId: null,
      flowVersion: null,
      validations: [
        { stage: 'SOURCE', metricName: 'SOURCE_COUNT', result: 'PASS' },
        { stage: 'SOURCE', metricName: 'AMOUNT_SUM', result: 'PASS' },
        { stage: 'STAGING', metricName: 'STAGE_COUNT', result: 'PASS' },
        { stage: 'STAGING', metricName: 'DUP_PK_COUNT', result: 'PASS' },
        { stage: 'TARGET', metricName: 'TARGET_COUNT', result: 'PASS' },
      ],
    });

    const aborted = await startedRun(t, [3]);
    await cancelled(t, aborted.runId);
    const off = await perform(t.db, leaseDispatchesOperation, {
      batch: 100,
      leaseMs: 60_000,
      alertReceivers: [],
      lineage: false,
      nifi: true,
    });
    expect(off.leased.filter((d) => d.runId === aborted.runId)).toEqual([]);
    expect(off.unwanted).toHaveLength(2);
    const gone = await perform(t.db, cancelUnwantedDispatchesOperation, {
      dispatchIds: off.unwanted,
      actor: 'dispatcher',
      receivers: { alertReceivers: [], lineage: false },
    });
    expect(gone.map((c) => c.reason)).toEqual(['lineage is not enabled (lineage.enabled)', 'lineage is not enabled (lineage.enabled)']);
    expect(await lineageCalls(aborted.runId)).toEqual([
      ['START', 'CANCELLED'],
      ['ABORT', 'CANCELLED'],
    ]);
  });
});
