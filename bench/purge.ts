// Ledger purge benchmark (src/domain/retention/): what one batch costs and what a sweeper cycle gets done.
//   big run      — one run with 10,000 partitions, 50,000 files and 2,000 events, purged in batches of
//                  PURGE_BATCH_ROWS: per-batch p50/p99/max, and the whole run
//   next run     — the plan and time of the query that picks the next due run, with history behind it
//                  (already purged runs and old SUCCESS runs nobody cleaned up, which stay candidates' neighbours)
//   big run exported — the same run again, purged with --export (purge-archive.ts): per-batch times, rows/s, and the
//                  archive's bytes, beside the run purged without
//   sweeper      — cycles of SWEEPER_PURGE_BUDGET_MS over small due runs: elapsed per cycle, rows per cycle
// Usage: npx tsx bench/purge.ts   (BENCH_PURGED_RUNS, default 30000; BENCH_UNCLEANED, default 5000;
// BENCH_SMALL_RUNS, default 300; DATABASE_URL optional: the benchmark creates and drops its own database there)
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { createDb, type Db } from '../src/db/client.js';
import { openPurgeArchive } from '../src/domain/retention/purge-archive.js';
import { PURGE_BATCH_ROWS, SWEEPER_PURGE_BUDGET_MS, nextDueRun, purgeLedger } from '../src/domain/retention/purge.js';
import { Prisma } from '../src/generated/prisma/client.js';
import { benchDatabase, fmt, printTable } from './support.js';

const PURGED_RUNS = Number(process.env.BENCH_PURGED_RUNS ?? 30_000);
const UNCLEANED = Number(process.env.BENCH_UNCLEANED ?? 5_000);
const SMALL_RUNS = Number(process.env.BENCH_SMALL_RUNS ?? 300);
const JOB = 'BENCH_PURGE';

/** One run with 10,000 partitions, 50,000 files and 2,000 events that ended 100 days ago. */
async function insertBigRun(sql: pg.Pool, businessKey: string): Promise<string> {
  const big = randomUUID();
  await sql.query(
    `INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, started_at, completed_at)
                   VALUES ($1, $2, $3, 'FAILED_EXTRACT', now() - interval '101 days', now() - interval '100 days')`,
    [big, JOB, businessKey],
  );
  await sql.query(
    `INSERT INTO nifi_ops.load_partition (run_id, partition_id, lower_bound, upper_bound, expected_row_count, status)
                   SELECT $1, lpad(p::text, 6, '0'), p, p + 1, 10, 'SUCCESS' FROM generate_series(1, 10000) p`,
    [big],
  );
  await sql.query(
    `INSERT INTO nifi_ops.load_file (run_id, partition_id, chunk_index, fragment_count, hdfs_path, record_count)
                   SELECT $1, lpad(p::text, 6, '0'), c, 5, '/bench/big/' || p || '-' || c || '.parquet', 2
                     FROM generate_series(1, 10000) p, generate_series(0, 4) c`,
    [big],
  );
  await sql.query(
    `INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, run_id)
                   SELECT gen_random_uuid(), 'INFO', 'BENCH', $1 FROM generate_series(1, 2000)`,
    [big],
  );
  return big;
}

/** Purges the big run alone (a cutoff before the small runs' end), timing each batch. */
async function purgeBigRun(db: Db, big: string, archive?: ReturnType<typeof openPurgeArchive>) {
  const batchMs: number[] = [];
  let last = performance.now();
  const started = last;
  const summary = await purgeLedger(db, {
    before: new Date(Date.now() - 98 * 86_400_000),
    batchRows: PURGE_BATCH_ROWS,
    archive,
    afterBatch: (batch) => {
      const now = performance.now();
      batchMs.push(now - last);
      if (process.env.BENCH_VERBOSE) console.log(`  batch ${fmt(now - last)} ms: ${JSON.stringify(batch.deleted)}`);
      last = now;
    },
  });
  await archive?.finish(summary.complete);
  if (summary.purgedRuns.map((r) => r.runId).join() !== big) throw new Error('expected the big run alone to be purged');
  const rows = Object.values(summary.deleted).reduce((a, b) => a + b, 0);
  return { batchMs: [...batchMs].sort((a, b) => a - b), seconds: (performance.now() - started) / 1000, rows };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function main(): Promise<void> {
  const database = await benchDatabase();
  const db = createDb(database.url, { poolSize: 4, timeouts: { connectTimeout: 2000, acquireTimeout: 3000, statementTimeout: 30_000 } });
  try {
    const sql = db.pool;
    const generated = performance.now();
    const big = await insertBigRun(sql, 'BIG');
    // history the next-run query walks past: purged runs left the partial index, uncleaned SUCCESS runs did not
    await sql.query(
      `INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, started_at, completed_at, cleaned_at, purged_at)
                     SELECT gen_random_uuid(), $1, 'PURGED_' || i, 'SUCCESS', now() - (400 - i % 300) * interval '1 day',
                            now() - (399 - i % 300) * interval '1 day', now() - interval '200 days', now() - interval '1 day'
                       FROM generate_series(1, $2::int) i`,
      [JOB, PURGED_RUNS],
    );
    await sql.query(
      `INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, started_at, completed_at)
                     SELECT gen_random_uuid(), $1, 'UNCLEANED_' || i, 'SUCCESS', now() - interval '300 days', now() - interval '299 days'
                       FROM generate_series(1, $2::int) i`,
      [JOB, UNCLEANED],
    );
    const small = await sql.query<{ run_id: string }>(
      `INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, started_at, completed_at)
       SELECT gen_random_uuid(), $1, 'SMALL_' || i, 'CANCELLED', now() - interval '120 days', now() - interval '95 days' + i * interval '1 second'
         FROM generate_series(1, $2::int) i RETURNING run_id::text`,
      [JOB, SMALL_RUNS],
    );
    await sql.query(
      `INSERT INTO nifi_ops.load_partition (run_id, partition_id, lower_bound, upper_bound, expected_row_count, status)
                     SELECT r, lpad(p::text, 4, '0'), p, p + 1, 10, 'SUCCESS' FROM unnest($1::uuid[]) r, generate_series(1, 20) p`,
      [small.rows.map((r) => r.run_id)],
    );
    await sql.query(
      `INSERT INTO nifi_ops.load_file (run_id, partition_id, chunk_index, fragment_count, hdfs_path, record_count)
                     SELECT run_id, partition_id, 0, 1, '/bench/small/' || run_id || '/' || partition_id, 10 FROM nifi_ops.load_partition
                      WHERE run_id = ANY($1::uuid[])`,
      [small.rows.map((r) => r.run_id)],
    );
    await sql.query('ANALYZE');
    console.log(`generated in ${fmt((performance.now() - generated) / 1000)} s`);

    const before = new Date(Date.now() - 90 * 86_400_000);
    const plan = await db.prisma.$transaction(async (tx) =>
      tx.$queryRaw<Array<{ 'QUERY PLAN': string }>>(Prisma.sql`EXPLAIN (ANALYZE, COSTS OFF) ${nextDueRun(before)}`),
    );
    console.log(`\nnext due run, with ${PURGED_RUNS} purged and ${UNCLEANED} uncleaned SUCCESS runs behind it:`);
    for (const line of plan) console.log(`  ${line['QUERY PLAN']}`);

    // a cutoff between the big run's end (100 days ago) and the small runs' (95 days ago): the big run alone
    const plain = await purgeBigRun(db, big);
    const sorted = plain.batchMs;
    const exportDir = mkdtempSync(join(tmpdir(), 'lc-bench-purge-export-'));
    const archive = openPurgeArchive(exportDir, new Date(Date.now() - 98 * 86_400_000));
    const exported = await purgeBigRun(db, await insertBigRun(sql, 'BIG_EXPORTED'), archive);
    rmSync(exportDir, { recursive: true, force: true });
    const row = (name: string, r: typeof plain, bytes: number | null) => ({
      '': name,
      batches: r.batchMs.length,
      'p50 ms': fmt(percentile(r.batchMs, 50)),
      'p99 ms': fmt(percentile(r.batchMs, 99)),
      'max ms': fmt(r.batchMs.at(-1)!),
      'whole run s': fmt(r.seconds, 2),
      'rows/s': fmt(r.rows / r.seconds, 0),
      'archive bytes': bytes === null ? '-' : fmt(bytes, 0),
      'bytes/row': bytes === null ? '-' : fmt(bytes / r.rows, 1),
    });
    printTable(`big run: 10,000 partitions, 50,000 files, 2,000 events in batches of ${PURGE_BATCH_ROWS} rows`, [
      row('purge', plain, null),
      row('purge --export', exported, archive.bytesWritten()),
    ]);

    const cycles: Array<Record<string, number>> = [];
    for (;;) {
      const started = performance.now();
      const summary = await purgeLedger(db, { before, batchRows: PURGE_BATCH_ROWS, budgetMs: SWEEPER_PURGE_BUDGET_MS });
      cycles.push({
        ms: performance.now() - started,
        runs: summary.purgedRuns.length,
        rows: Object.values(summary.deleted).reduce((a, b) => a + b, 0),
      });
      if (summary.complete) break;
    }
    const cycleMs = cycles.map((c) => c.ms!).sort((a, b) => a - b);
    printTable(`sweeper cycles (${SWEEPER_PURGE_BUDGET_MS} ms budget) over ${SMALL_RUNS} runs of 20 partitions and 20 files`, [
      {
        cycles: cycles.length,
        'p50 ms': fmt(percentile(cycleMs, 50)),
        'max ms': fmt(cycleMs.at(-1)!),
        'runs per full cycle': fmt(cycles[0]!.runs!, 0),
        'rows per full cycle': fmt(cycles[0]!.rows!, 0),
      },
    ]);
    console.log(
      JSON.stringify({
        bench: 'purge',
        bigRunBatches: sorted.length,
        bigRunBatchP99Ms: fmt(percentile(sorted, 99)),
        exportedBatchP99Ms: fmt(percentile(exported.batchMs, 99)),
        exportedRowsPerSecond: Math.round(exported.rows / exported.seconds),
        plainRowsPerSecond: Math.round(plain.rows / plain.seconds),
        archiveBytes: archive.bytesWritten(),
        cycleMaxMs: fmt(cycleMs.at(-1)!),
        runsPerCycle: cycles[0]!.runs,
      }),
    );
  } finally {
    await db.close();
    await database.close();
  }
}

await main();
