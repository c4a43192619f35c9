// The ledger's purge as the worker and the API see it: the sweeper's cycle purges and counts, and a purged run reads
// as its summary. The purge's rules are in test/domain/retention/purge.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { FAIL_RUN, chunkInput, claim, report, startRun } from '../../support/fixtures.js';
import { DAY, detailRows, endedDaysAgo, purgeOnce } from '../../support/purge-fixtures.js';
import { testWorker, workerConfig } from '../../support/worker.js';
import type { Db } from '../../../src/db/client.js';
import { noRows } from '../../../src/domain/retention/purge.js';
import { findArchives, verifyArchive } from '../../../src/domain/retention/purge-archive.js';

let api: TestApi;
beforeEach(async () => {
  api = await startTestApi();
});
afterEach(async () => api?.close());

const purge = (options: Parameters<typeof purgeOnce>[1] = {}, db: Db = api.db) => purgeOnce(db, options);

async function runRow(runId: string) {
  const { rows } = await api.sql.query('SELECT * FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0];
}

/** Partitions, files (two chunks for the first partition), dispatch, STAGING metrics, events; then FAILED_PUBLISH. */
async function failedPublish(create: Record<string, unknown> = {}) {
  const run = await startRun(api, [3, 4, 5], { create });
  const first = await claim(api, run.runId, '0000');
  await report(api, chunkInput(run, '0000', first.claimToken, 0, 2, 1));
  await report(api, chunkInput(run, '0000', first.claimToken, 1, 2, 2));
  for (const [pid, rows] of [
    ['0001', 4],
    ['0002', 5],
  ] as const) {
    const { claimToken } = await claim(api, run.runId, pid);
    await report(api, chunkInput(run, pid, claimToken, 0, 1, rows));
  }
  return failStagingValidated(await toStagingValidatedFrom(run));
}

async function toStagingValidatedFrom<T extends { runId: string }>(run: T): Promise<T> {
  const { rows } = await api.sql.query(
    `SELECT dispatch_id::text, extracted_count::text FROM nifi_ops.load_dispatch JOIN nifi_ops.load_run USING (run_id) WHERE run_id = $1`,
    [run.runId],
  );
  await api.gql(`mutation($input: StartValidationInput!) { startValidation(input: $input) { started } }`, {
    input: { runId: run.runId, dispatchId: rows[0].dispatch_id, node: 'nifi-01' },
  });
  await api.gql(`mutation($input: RecordMetricsInput!) { recordMetrics(input: $input) { recorded } }`, {
    input: {
      runId: run.runId,
      stage: 'STAGING',
      queryVersion: 'v1',
      metrics: [
        { metricName: 'STAGE_COUNT', result: 'PASS', actualValue: rows[0].extracted_count, expectedValue: rows[0].extracted_count },
      ],
    },
  });
  const res = await api.gql(`mutation($input: MarkStageValidatedInput!) { markStageValidated(input: $input) { stageValidated } }`, {
    input: { runId: run.runId },
  });
  expect(res.body.data!.markStageValidated.stageValidated).toBe(true);
  return run;
}

async function failStagingValidated<T extends { runId: string }>(run: T): Promise<T> {
  const res = await api.gql(FAIL_RUN, {
    input: { runId: run.runId, expectedStatus: 'STAGING_VALIDATED', failStatus: 'FAILED_PUBLISH', errorStage: 'PUBLISH', errorCode: 'E' },
  });
  expect(res.body.data!.failRun.runStatus).toBe('FAILED_PUBLISH');
  return run;
}

/** A failed run ended 100 days ago, with all its detail rows. */
async function dueRun() {
  const run = await failedPublish();
  await endedDaysAgo(api, run.runId, 100);
  return { ...run, rows: await detailRows(api, run.runId) };
}

describe('the sweeper', () => {
  async function counters(registry: import('prom-client').Registry) {
    const runs = (await registry.getSingleMetric('lc_ledger_purged_runs_total')!.get()).values.map((v) => v.value);
    const rows = (await registry.getSingleMetric('lc_ledger_purged_rows_total')!.get()).values
      .map((v) => [v.labels.table, v.value] as const)
      .filter(([, n]) => n > 0);
    return { runs, rows: Object.fromEntries(rows) };
  }

  it('purges what is past retention.ledger in its cycle and counts it in lc_ledger_purged_*_total', async () => {
    const due = await dueRun();
    const inside = await failedPublish();
    await endedDaysAgo(api, inside.runId, 60);
    const insideRows = await detailRows(api, inside.runId);
    const worker = testWorker(api, workerConfig(api, { url: 'http://127.0.0.1:9/' }));
    try {
      await worker.sweeper.cycle();
      expect(await detailRows(api, due.runId)).toEqual(noRows());
      expect((await runRow(due.runId)).purged_at).toBeInstanceOf(Date);
      expect(await detailRows(api, inside.runId)).toEqual(insideRows);
      expect(await counters(worker.registry)).toEqual({
        runs: [1],
        rows: Object.fromEntries(Object.entries(due.rows).filter(([, n]) => n > 0)),
      });
    } finally {
      await worker.close();
    }
  });

  it('first exports what it purges to retention.exportDir: one archive per cycle, its counts the rows deleted', async () => {
    const due = await dueRun();
    const exportDir = mkdtempSync(join(tmpdir(), 'lc-sweeper-export-'));
    const worker = testWorker(api, { ...workerConfig(api, { url: 'http://127.0.0.1:9/' }), retention: { ledger: 90 * DAY, exportDir } });
    try {
      await worker.sweeper.cycle();
      expect(await detailRows(api, due.runId)).toEqual(noRows());
      const archives = await findArchives(exportDir);
      expect(archives).toHaveLength(1);
      const { manifest } = await verifyArchive(archives[0]!);
      expect(manifest).toMatchObject({ complete: true, copied: { load_run: 1 } });
      expect(manifest!.deleted).toEqual(due.rows);
      // a cycle that deletes nothing writes no archive
      await worker.sweeper.cycle();
      expect(await findArchives(exportDir)).toHaveLength(1);
    } finally {
      await worker.close();
      rmSync(exportDir, { recursive: true, force: true });
    }
  });

  it('keeps what retention.ledger still covers', async () => {
    const run = await dueRun();
    const worker = testWorker(api, {
      ...workerConfig(api, { url: 'http://127.0.0.1:9/' }),
      retention: { ledger: 200 * DAY, exportDir: null },
    });
    try {
      await worker.sweeper.cycle();
      expect(await detailRows(api, run.runId)).toEqual(run.rows);
      expect(await counters(worker.registry)).toEqual({ runs: [0], rows: {} });
    } finally {
      await worker.close();
    }
  });
});

describe('the API', () => {
  const RUN_DETAIL = `query($runId: UUID!) { run(runId: $runId) {
    runId status purgedAt extractedCount successPartitionCount expectedPartitionCount completedAt
    partitionCounts { status count } partitions { partitionId } dispatches { dispatchId } metrics { metricName } events(last: 50) { name } } }`;

  it('shows a purged run as its summary with purgedAt, and its partitions, dispatches, metrics and events empty', async () => {
    const run = await dueRun();
    const kept = await failedPublish();
    const before = await api.gql(RUN_DETAIL, { runId: run.runId }, { token: 'viewer' });
    expect(before.body.data!.run).toMatchObject({ purgedAt: null, extractedCount: 12, successPartitionCount: 3 });
    expect(before.body.data!.run.partitions).toHaveLength(3);

    await purge();

    const res = await api.gql(RUN_DETAIL, { runId: run.runId }, { token: 'viewer' });
    expect(res.status).toBe(200);
    const purgedAt = (await runRow(run.runId)).purged_at as Date;
    expect(res.body.data!.run).toEqual({
      ...before.body.data!.run,
      purgedAt: purgedAt.toISOString(),
      partitionCounts: [],
      partitions: [],
      dispatches: [],
      metrics: [],
      events: [],
    });
    const other = await api.gql(RUN_DETAIL, { runId: kept.runId }, { token: 'viewer' });
    expect(other.body.data!.run.purgedAt).toBeNull();
    expect(other.body.data!.run.partitions).toHaveLength(3);
    const listed = await api.gql(`{ runs(first: 10) { nodes { runId purgedAt } } }`, {}, { token: 'viewer' });
    expect(listed.body.data!.runs.nodes).toEqual(
      expect.arrayContaining([
        { runId: run.runId, purgedAt: purgedAt.toISOString() },
        { runId: kept.runId, purgedAt: null },
      ]),
    );
  });
});
