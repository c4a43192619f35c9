// The ledger's purge (src/domain/retention/purge.ts): runs past retention.ledger lose their detail rows in bounded
// batches and keep their load_run row as the summary; the gate never changes; interruptions resume; two workers
// purge each run once. The sweeper's cycle and the API's view of a purged run are in test/api/retention/purge.test.ts.
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { cutoff, detailRows, endedDaysAgo, purgeOnce } from '../../support/purge-fixtures.js';
import { DomainError } from '../../../src/contract/errors.js';
import { createDb, type Db } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { recordCleanupOperation } from '../../../src/domain/cleanup/record-cleanup.js';
import { listAttempts } from '../../../src/domain/gate/ledger.js';
import { publishOperation } from '../../../src/domain/gate/publish.js';
import { cancelRunOperation } from '../../../src/domain/operator/cancel-run.js';
import { nextDueRun, noRows, PURGED_TABLES, type PurgeBatch, previewPurge, type RowCounts } from '../../../src/domain/retention/purge.js';
import type { CreateRunCommand } from '../../../src/domain/runs/create-run.js';
import { Prisma } from '../../../src/generated/prisma/client.js';
import {
  ACTOR,
  chunk,
  claimed,
  createdRun,
  type DomainTest,
  extractedRun,
  failedRun,
  gateDefined,
  observed,
  publishedRun,
  publishUnknownRun,
  readinessOf,
  stagingPassed,
  startDomainTest,
  startedRun,
  succeeded,
  validationStarted,
} from '../support/fixtures.js';

// a purge covers the whole ledger: every test has a database of its own
let t: DomainTest;
beforeEach(async () => {
  t = await startDomainTest();
});
afterEach(async () => t?.close());

const purge = (options: Parameters<typeof purgeOnce>[1] = {}, db: Db = t.db) => purgeOnce(db, options);

const sum = (counts: RowCounts[]): RowCounts => {
  const total = noRows();
  for (const c of counts) for (const table of PURGED_TABLES) total[table] += c[table];
  return total;
};

/** Everything a purge could change, row for row: every ledger and gate table. */
async function everything(): Promise<Record<string, unknown[]>> {
  const tables = [
    'load_run',
    ...PURGED_TABLES,
    'gate',
    'gate_required_job',
    'gate_observation',
    'gate_publication',
    'gate_publication_evidence',
    'gate_publish_claim_evidence',
  ];
  const snapshot: Record<string, unknown[]> = {};
  for (const table of tables) {
    const { rows } = await t.sql.query(`SELECT * FROM nifi_ops.${table} t ORDER BY t::text`);
    snapshot[table] = rows;
  }
  return snapshot;
}

async function gateTables(): Promise<Record<string, unknown[]>> {
  const all = await everything();
  return Object.fromEntries(Object.entries(all).filter(([table]) => table.startsWith('gate')));
}

async function runRow(runId: string) {
  const { rows } = await t.sql.query('SELECT * FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0];
}

const report = (command: ReturnType<typeof chunk>) => perform(t.db, reportChunkOperation, command);

/** Partitions, files (two chunks for the first partition), dispatch, STAGING metrics, events; then FAILED_PUBLISH. */
async function failedPublish(create: Partial<CreateRunCommand> = {}) {
  const run = await startedRun(t, [3, 4, 5], create);
  const first = await claimed(t, run.runId, '0000');
  await report(chunk(run, '0000', first.claimToken, 0, 2, 1));
  await report(chunk(run, '0000', first.claimToken, 1, 2, 2));
  for (const [pid, rows] of [
    ['0001', 4],
    ['0002', 5],
  ] as const) {
    const { claimToken } = await claimed(t, run.runId, pid);
    await report(chunk(run, pid, claimToken, 0, 1, rows));
  }
  const { rows } = await t.sql.query(`SELECT dispatch_id::text FROM nifi_ops.load_dispatch WHERE run_id = $1`, [run.runId]);
  await validationStarted(t, { runId: run.runId, dispatchId: rows[0].dispatch_id });
  await stagingPassed(t, run.runId, '12');
  return failStagingValidated(run);
}

async function failStagingValidated<T extends { runId: string }>(run: T): Promise<T> {
  const failed = await failedRun(t, run.runId, {
    expectedStatus: 'STAGING_VALIDATED',
    failStatus: 'FAILED_PUBLISH',
    errorStage: 'PUBLISH',
    errorCode: 'E',
  });
  expect(failed.runStatus).toBe('FAILED_PUBLISH');
  return run;
}

async function successfulRun(create: Partial<CreateRunCommand> = {}) {
  const run = await publishedRun(t, [3, 4], create);
  await succeeded(t, run.runId);
  return run;
}

async function cleanedUp(runId: string) {
  const cleaned = await perform(t.db, recordCleanupOperation, {
    runId,
    droppedTable: null,
    deletedPath: null,
    retention: t.config.cleanup,
    actor: ACTOR,
  });
  expect(cleaned.changed).toBe(true);
}

/** A failed run ended 100 days ago, with all its detail rows. */
async function dueRun() {
  const run = await failedPublish();
  await endedDaysAgo(t, run.runId, 100);
  return { ...run, rows: await detailRows(t, run.runId) };
}

describe('purgeLedger', () => {
  it('purges runs that ended before the cutoff and keeps each load_run row as the summary, stamped purged_at', async () => {
    const failed = await failedPublish();
    await endedDaysAgo(t, failed.runId, 100);
    const success = await successfulRun();
    await endedDaysAgo(t, success.runId, 120);
    await cleanedUp(success.runId);
    const cancelled = await startedRun(t, [3]);
    await perform(t.db, cancelRunOperation, { runId: cancelled.runId, reason: 'not needed', actor: 'alice-operator' });
    await endedDaysAgo(t, cancelled.runId, 95);
    const before = {
      failed: [await runRow(failed.runId), await detailRows(t, failed.runId)],
      success: [await runRow(success.runId), await detailRows(t, success.runId)],
      cancelled: [await runRow(cancelled.runId), await detailRows(t, cancelled.runId)],
    } as const;
    for (const [, rows] of Object.values(before)) expect(Object.values(rows).some((n) => n > 0)).toBe(true);
    // two files for the first partition; SOURCE metrics from the manifest and the fixture's two STAGING ones
    expect(before.failed[1]).toMatchObject({ load_file: 4, load_partition: 3, load_validation: 4, load_dispatch: 1 });
    expect(before.failed[1].load_event).toBeGreaterThan(0);

    const summary = await purge();

    expect(summary.complete).toBe(true);
    expect(summary.purgedRuns.map((r) => r.runId)).toEqual([success.runId, failed.runId, cancelled.runId]);
    expect(summary.deleted).toEqual(sum(Object.values(before).map(([, rows]) => rows)));
    for (const [id, [row]] of [
      [failed.runId, before.failed],
      [success.runId, before.success],
      [cancelled.runId, before.cancelled],
    ] as const) {
      expect(await detailRows(t, id)).toEqual(noRows());
      const after = await runRow(id);
      expect(after.purged_at).toBeInstanceOf(Date);
      expect({ ...after, purged_at: null }).toEqual(row);
    }
    expect((await purge()).purgedRuns).toEqual([]);
  });

  it('leaves active runs, PUBLISH_UNKNOWN, runs inside retention and a SUCCESS run not cleaned up untouched', async () => {
    const extracting = await startedRun(t, [3, 4]);
    await endedDaysAgo(t, extracting.runId, 200);
    const unknown = await publishUnknownRun(t);
    await endedDaysAgo(t, unknown.runId, 200);
    const recentFailure = await failedPublish();
    await endedDaysAgo(t, recentFailure.runId, 80);
    const recentSuccess = await successfulRun();
    await endedDaysAgo(t, recentSuccess.runId, 10);
    await cleanedUp(recentSuccess.runId);
    const notCleaned = await successfulRun();
    await endedDaysAgo(t, notCleaned.runId, 200);
    const published = await publishedRun(t);
    await endedDaysAgo(t, published.runId, 200);
    const snapshot = await everything();

    const summary = await purge();
    expect(summary).toEqual({ purgedRuns: [], deleted: noRows(), batches: 0, complete: true });
    expect(await everything()).toEqual(snapshot);
    expect(await previewPurge(t.db.prisma, cutoff())).toEqual([]);
  });

  it('never changes the gate: observations, publications, evidence, readiness and attempt ordinals stay as they were', async () => {
    const D = '2026-03-02';
    const jobKey = unique('SALES').toUpperCase();
    const upstream = unique('dim_customer');
    await gateDefined(t, unique('sales_gate'), [upstream], { boundJobKey: jobKey });
    await observed(t, { jobId: upstream, businessDate: D, state: 'FAILED' });
    await observed(t, { jobId: upstream, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    const first = await failedPublish({ jobKey, businessKey: D });
    const second = await successfulRun({ jobKey, businessKey: D });
    const downstream = unique('report_gate');
    await gateDefined(t, downstream, [jobKey, upstream]);
    const published = await perform(t.db, publishOperation, {
      consumer: downstream,
      businessDate: D,
      output: { totalCents: 17_500 },
      actor: ACTOR,
    });
    expect(published.published).toBe(true);
    for (const run of [first, second]) await endedDaysAgo(t, run.runId, 100);
    await cleanedUp(second.runId);

    const gateBefore = await gateTables();
    expect(gateBefore.gate_publish_claim_evidence).toHaveLength(1);
    expect(gateBefore.gate_publication_evidence).toHaveLength(2);
    const readinessBefore = await readinessOf(t, downstream, D);
    expect(readinessBefore.ready).toBe(true);
    expect(readinessBefore.jobs.find((j) => j.jobId === jobKey)!.latest).toMatchObject({
      attempt: 2,
      runId: second.runId,
      state: 'SUCCEEDED',
    });
    const attemptsBefore = await listAttempts(t.db.prisma, jobKey, D);

    expect((await purge()).purgedRuns.map((r) => r.runId).sort()).toEqual([first.runId, second.runId].sort());

    expect(await gateTables()).toEqual(gateBefore);
    expect(await readinessOf(t, downstream, D)).toEqual(readinessBefore);
    const attemptsAfter = await listAttempts(t.db.prisma, jobKey, D);
    expect(attemptsAfter).toEqual(attemptsBefore);
    expect(attemptsAfter.map((o) => [o.attempt, o.runId])).toEqual([
      [1, first.runId],
      [2, second.runId],
    ]);
    const third = (await createdRun(t, { jobKey, businessKey: D, stageTablePrefix: 'TMP_GATED_' })).runId;
    const attempts = await listAttempts(t.db.prisma, jobKey, D);
    expect(attempts.at(-1)).toMatchObject({ attempt: 3, runId: third, state: 'RUNNING' });
  });

  it('deletes a big run in batches of at most batchRows and stamps it in the last batch only', async () => {
    const counts = Array.from({ length: 40 }, () => 1);
    const run = await extractedRun(t, counts);
    await validationStarted(t, run);
    await stagingPassed(t, run.runId, '40');
    await failStagingValidated(run);
    await endedDaysAgo(t, run.runId, 100);
    const rows = await detailRows(t, run.runId);
    const total = Object.values(rows).reduce((a, b) => a + b, 0);
    expect(rows.load_file).toBe(40);

    const batches: PurgeBatch[] = [];
    const summary = await purge({ batchRows: 7, afterBatch: (b) => void batches.push(b) });

    for (const b of batches) expect(Object.values(b.deleted).reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(7);
    expect(batches.map((b) => b.purged)).toEqual([...Array(batches.length - 1).fill(false), true]);
    expect(batches.length).toBe(Math.floor(total / 7) + 1);
    expect(summary.deleted).toEqual(rows);
    expect(await detailRows(t, run.runId)).toEqual(noRows());
    // files go before their partitions (RESTRICT): no batch deletes a partition while files remain
    const filesGoneAt = batches.findIndex((_, i) => batches.slice(0, i + 1).reduce((n, x) => n + x.deleted.load_file, 0) === 40);
    expect(batches.slice(0, filesGoneAt).every((b) => b.deleted.load_partition === 0)).toBe(true);
  });

  it('tells the listeners of the run (lc_run_changed) when its purge completes', async () => {
    const run = await dueRun();
    const listener = new pg.Client({ connectionString: t.database.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on('notification', (n) => heard.push(`${n.channel} ${n.payload}`));
      await listener.query('LISTEN lc_run_changed');
      await purge();
      await listener.query('SELECT 1');
      expect(heard).toEqual([`lc_run_changed ${run.runId}`]);
    } finally {
      await listener.end();
    }
  });

  it('finds its next run through ix_load_run_purge: the query states the partial index predicate', async () => {
    const plan = await t.db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL enable_seqscan = off`;
      return tx.$queryRaw<Array<{ 'QUERY PLAN': string }>>(Prisma.sql`EXPLAIN (COSTS OFF) ${nextDueRun(cutoff())}`);
    });
    expect(plan.map((line) => line['QUERY PLAN']).join('\n')).toMatch(
      /Index Scan using ix_load_run_purge on load_run r\n\s+Index Cond: \(completed_at < /,
    );
  });

  it('starts no batch once its time budget is spent', async () => {
    const run = await dueRun();
    expect(await purge({ budgetMs: 0 })).toEqual({ purgedRuns: [], deleted: noRows(), batches: 0, complete: false });
    expect(await detailRows(t, run.runId)).toEqual(run.rows);
  });

  it('resumes a purge interrupted between batches (the process died) and completes it, counting every row once', async () => {
    const run = await dueRun();
    const died = new Error('killed between batches');
    await expect(
      purge({
        batchRows: 3,
        afterBatch: () => {
          throw died;
        },
      }),
    ).rejects.toBe(died);
    const left = await detailRows(t, run.runId);
    expect(Object.values(left).reduce((a, b) => a + b, 0)).toBe(Object.values(run.rows).reduce((a, b) => a + b, 0) - 3);
    expect((await runRow(run.runId)).purged_at).toBeNull();

    const resumed = await purge({ batchRows: 3 });
    expect(resumed.purgedRuns.map((r) => r.runId)).toEqual([run.runId]);
    expect(resumed.deleted).toEqual(left);
    expect(await detailRows(t, run.runId)).toEqual(noRows());
    expect((await runRow(run.runId)).purged_at).toBeInstanceOf(Date);
  });

  it('resumes a purge whose database connection was cut between batches', async () => {
    const run = await dueRun();
    const server = new URL(inject('testAdminDatabaseUrl'));
    const proxy = await startTcpProxy(server.hostname, Number(server.port || 5432));
    const viaProxy = new URL(t.database.url);
    viaProxy.port = String(proxy.port);
    const db = createDb(viaProxy.toString(), {
      poolSize: 2,
      timeouts: { connectTimeout: 500, acquireTimeout: 1000, statementTimeout: 1500 },
    });
    try {
      const cut = purge({ batchRows: 2, afterBatch: () => proxy.cut() }, db);
      await expect(cut).rejects.toSatisfy((e) => e instanceof DomainError && e.code === 'SERVICE_UNAVAILABLE');
      expect((await runRow(run.runId)).purged_at).toBeNull();
      const left = await detailRows(t, run.runId);
      expect(sum([left, { ...noRows(), load_file: 2 }])).toEqual(run.rows);
      await proxy.restore();
      const resumed = await purge({ batchRows: 2 }, db);
      expect(resumed.deleted).toEqual(left);
      expect(resumed.purgedRuns.map((r) => r.runId)).toEqual([run.runId]);
    } finally {
      await db.close();
      await proxy.close();
    }
  });

  it('lets two workers on their own connections purge at once: each run purged exactly once, every row gone, counted once', async () => {
    const workers = [createDb(t.database.url, { poolSize: 2 }), createDb(t.database.url, { poolSize: 2 })];
    try {
      for (let rep = 0; rep < 8; rep++) {
        const runs = [await dueRun(), await dueRun(), await dueRun()];
        const summaries = await Promise.all(workers.map((db) => purge({ batchRows: 4 }, db)));
        const purged = summaries.flatMap((s) => s.purgedRuns.map((r) => r.runId));
        expect(purged.sort()).toEqual(runs.map((r) => r.runId).sort());
        expect(sum(summaries.map((s) => s.deleted))).toEqual(sum(runs.map((r) => r.rows)));
        for (const run of runs) {
          expect(await detailRows(t, run.runId)).toEqual(noRows());
          expect((await runRow(run.runId)).purged_at).toBeInstanceOf(Date);
        }
      }
    } finally {
      await Promise.all(workers.map((db) => db.close()));
    }
  });
});

describe('previewPurge', () => {
  it('lists the due runs with their rows per table, oldest first, and changes nothing', async () => {
    const older = await failedPublish();
    await endedDaysAgo(t, older.runId, 150);
    const newer = await failedPublish();
    await endedDaysAgo(t, newer.runId, 100);
    const inside = await failedPublish();
    await endedDaysAgo(t, inside.runId, 30);
    const snapshot = await everything();

    const preview = await inTransaction(t.db, (tx) => previewPurge(tx, cutoff()));

    expect(preview).toEqual([
      {
        runId: older.runId,
        jobKey: expect.any(String),
        businessKey: older.businessKey,
        status: 'FAILED_PUBLISH',
        completedAt: expect.any(Date),
        rows: await detailRows(t, older.runId),
      },
      {
        runId: newer.runId,
        jobKey: expect.any(String),
        businessKey: newer.businessKey,
        status: 'FAILED_PUBLISH',
        completedAt: expect.any(Date),
        rows: await detailRows(t, newer.runId),
      },
    ]);
    expect(await everything()).toEqual(snapshot);
  });
});
