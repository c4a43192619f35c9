// The PUBLISH_UNKNOWN decision kit (src/domain/publish/publish-unknown-kit.ts): who raised it, what PG-50 reported,
// and the job's check on the target (console.publishChecks) filled from the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { fillPlaceholders, publishUnknownKit, type PublishCheck } from '../../../src/domain/publish/publish-unknown-kit.js';
import { reportPublishResultOperation } from '../../../src/domain/publish/report-publish-result.js';
import { getRun } from '../../../src/domain/runs/queries.js';
import { sweepStalePublishing } from '../../../src/domain/sweeper/stale-publishing.js';
import { ACTOR, type DomainTest, publishedRun, publishingRun, startDomainTest } from '../support/fixtures.js';

const CHECKS: PublishCheck[] = [
  { job: 'KIT_NONE_*', target: null, query: 'SELECT 1' },
  {
    job: 'KIT_*',
    target: 'dwh.{parameters.targetTable} PARTITION (business_date = {businessKey})',
    query:
      "SELECT count(*) FROM dwh.{parameters.targetTable} WHERE business_date = '{businessKey}' -- expect {expectedRows}, query {queryId}",
  },
];

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const kitOf = async (runId: string, checks = CHECKS) => publishUnknownKit(t.db.prisma, await getRun(t.db.prisma, runId), checks);

describe('publishUnknownKit', () => {
  it('shows what PG-50 reported — message, query id, details — and the job’s check filled from the run', async () => {
    const run = await publishingRun(t, [3, 4], { jobKey: 'KIT_ORDERS', parameters: { targetTable: 'orders' } });
    await perform(t.db, reportPublishResultOperation, {
      runId: run.runId,
      publishToken: run.publishToken,
      outcome: 'PUBLISH_UNKNOWN',
      errorCode: 'HS2_TIMEOUT',
      message: 'no answer from HiveServer2 after 600 s',
      queryId: 'hive_20261203_0042',
      details: { hiveServer: 'hs2-02', operationHandle: 'op-7' },
      actor: ACTOR,
    });
    const kit = await kitOf(run.runId);
    expect(kit).toMatchObject({
      raisedBy: 'PG50',
      actor: ACTOR,
      errorCode: 'HS2_TIMEOUT',
      message: 'no answer from HiveServer2 after 600 s',
      reportedDetails: { hiveServer: 'hs2-02', operationHandle: 'op-7' },
      queryId: 'hive_20261203_0042',
      expectedRows: 7n,
      checkJob: 'KIT_*',
      target: `dwh.orders PARTITION (business_date = ${run.businessKey})`,
      checkQuery: `SELECT count(*) FROM dwh.orders WHERE business_date = '${run.businessKey}' -- expect 7, query hive_20261203_0042`,
    });
    expect(kit!.publishStartedAt!.getTime()).toBeLessThanOrEqual(kit!.raisedAt.getTime());
  });

  it('says the sweeper raised it, with the sweeper’s reason, never as PG-50’s words', async () => {
    const run = await publishingRun(t, [3, 4], { jobKey: 'KIT_STALE' });
    await t.sql.query(`UPDATE nifi_ops.load_run SET publish_started_at = clock_timestamp() - interval '3 hours' WHERE run_id = $1`, [
      run.runId,
    ]);
    await inTransaction(t.db, (tx) => sweepStalePublishing(tx, { recovery: t.config.recovery, dispatch: t.config.dispatch }));
    const kit = await kitOf(run.runId);
    expect(kit).toMatchObject({ raisedBy: 'SWEEPER', actor: 'sweeper', errorCode: 'PUBLISH_STALE', reportedDetails: null, queryId: null });
    expect(kit!.message).toMatch(/^no publish result within /);
    // no targetTable parameter: the placeholder stays for the operator to fill
    expect(kit!.target).toBe(`dwh.{parameters.targetTable} PARTITION (business_date = ${run.businessKey})`);
  });

  it('has no check for a job no entry matches, and no kit for a run never unknown', async () => {
    const run = await publishedRun(t, [3, 4], { jobKey: 'OTHER_JOB' });
    expect(await kitOf(run.runId)).toBeNull();
    const unknown = await publishingRun(t, [3, 4], { jobKey: 'OTHER_JOB' });
    await perform(t.db, reportPublishResultOperation, {
      runId: unknown.runId,
      publishToken: unknown.publishToken,
      outcome: 'PUBLISH_UNKNOWN',
      errorCode: null,
      message: 'lost the connection',
      queryId: null,
      details: {},
      actor: ACTOR,
    });
    expect(await kitOf(unknown.runId)).toMatchObject({
      raisedBy: 'PG50',
      checkJob: null,
      target: null,
      checkQuery: null,
      reportedDetails: {},
    });
  });

  it('fills only the placeholders it knows, and leaves objects and unknown names as written', () => {
    expect(
      fillPlaceholders('{runId} {nope} {parameters.a} {parameters.o} {queryId}', { runId: 'r1', queryId: null }, { a: 5, o: { x: 1 } }),
    ).toBe('r1 {nope} 5 {parameters.o} {queryId}');
  });
});
