// What the Jobs page, the job × business-date matrix and the run page's event page cost with a history behind them:
// bench/history-data.ts writes `BENCH_JOBS_DAYS` business dates (default 30: 100 jobs, 3,000 runs) into a fresh
// ledger; each read is then timed `BENCH_JOBS_SAMPLES` times (default 200) as the API runs it, and the jobs page's
// statements are EXPLAINed. Prints numbers; asserts nothing.
// Usage: npx tsx bench/jobs.ts   (DATABASE_URL names the server, else an embedded one)
import { createDb } from '../src/db/client.js';
import { runEventPage } from '../src/domain/events/events.js';
import { gateJobs, jobMatrix } from '../src/domain/jobs/job-matrix.js';
import { jobPage } from '../src/domain/jobs/job-summaries.js';
import { ACTIVE_JOB, BENCH_CONSUMER, generateHistory, JOBS } from './history-data.js';
import { benchDatabase, fmt, printTable } from './support.js';

const DAYS = Number(process.env.BENCH_JOBS_DAYS ?? 30);
const SAMPLES = Number(process.env.BENCH_JOBS_SAMPLES ?? 200);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function timed(name: string, op: () => Promise<unknown>): Promise<Record<string, string | number>> {
  for (let i = 0; i < 10; i++) await op();
  const ms: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const began = performance.now();
    await op();
    ms.push(performance.now() - began);
  }
  ms.sort((a, b) => a - b);
  return { read: name, p50_ms: fmt(percentile(ms, 0.5), 2), p99_ms: fmt(percentile(ms, 0.99), 2), max_ms: fmt(ms.at(-1)!, 2) };
}

const database = await benchDatabase();
try {
  const began = performance.now();
  await generateHistory(database.url, { days: DAYS });
  const db = createDb(database.url, { poolSize: 2 });
  await db.prisma.$executeRawUnsafe('ANALYZE');
  const [{ runs }] = await db.prisma.$queryRaw<Array<{ runs: number }>>`SELECT count(*)::int AS runs FROM nifi_ops.load_run`;
  console.log(`history: ${JOBS} jobs × ${DAYS} business dates = ${runs} runs, written in ${fmt((performance.now() - began) / 1000)} s`);
  const [{ largest }] = await db.prisma.$queryRaw<Array<{ largest: string }>>`
    SELECT run_id::text AS largest FROM nifi_ops.load_event GROUP BY run_id ORDER BY count(*) DESC LIMIT 1`;
  const endDate = new Date().toISOString().slice(0, 10);
  const consumerJobs = await gateJobs(db.prisma, BENCH_CONSUMER);
  const filter = { minLevel: null, name: null, partitionId: null, operatorActions: false };
  const rows = [
    await timed('jobs(first: 50, recentRuns: 20)', () => jobPage(db.prisma, { jobKeyContains: null }, 50, 20, null)),
    await timed('jobs(first: 50) 2nd page', () => jobPage(db.prisma, { jobKeyContains: null }, 50, 20, 'JOB_049')),
    await timed('jobs(jobKeyContains: "09")', () => jobPage(db.prisma, { jobKeyContains: '09' }, 50, 20, null)),
    await timed('jobMatrix(1 job, 14 dates)', () => jobMatrix(db.prisma, [ACTIVE_JOB], endDate, 14, null)),
    await timed(`jobMatrix(gate: ${consumerJobs.length} jobs, 31 dates)`, () =>
      jobMatrix(db.prisma, consumerJobs, endDate, 31, BENCH_CONSUMER),
    ),
    await timed('Run.eventPage(first: 50), largest run', () => runEventPage(db.prisma, largest, filter, 50, null)),
    await timed('Run.eventPage(minLevel: WARN)', () => runEventPage(db.prisma, largest, { ...filter, minLevel: 'WARN' }, 50, null)),
    await timed('Run.eventPage(operatorActions)', () => runEventPage(db.prisma, largest, { ...filter, operatorActions: true }, 50, null)),
  ];
  printTable(`reads with ${runs} runs of history (${SAMPLES} samples each, after 10 to warm up)`, rows);
  for (const [title, statement] of [
    [
      'the job keys (skip scan)',
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) WITH RECURSIVE job AS (
         (SELECT job_key FROM nifi_ops.load_run WHERE job_key > '' ORDER BY job_key LIMIT 1)
         UNION ALL SELECT (SELECT r.job_key FROM nifi_ops.load_run r WHERE r.job_key > job.job_key ORDER BY r.job_key LIMIT 1)
           FROM job WHERE job.job_key IS NOT NULL)
       SELECT job_key FROM job WHERE job_key IS NOT NULL LIMIT 51`,
    ],
    [
      'a job’s recent runs and last success',
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT
         ARRAY(SELECT r.run_id FROM nifi_ops.load_run r WHERE r.job_key = '${ACTIVE_JOB}' ORDER BY r.started_at DESC, r.run_id DESC LIMIT 20),
         (SELECT r.run_id FROM nifi_ops.load_run r WHERE r.job_key = '${ACTIVE_JOB}' AND r.status = 'SUCCESS' ORDER BY r.started_at DESC LIMIT 1)`,
    ],
  ] as const) {
    const plan = await db.prisma.$queryRawUnsafe<Array<{ 'QUERY PLAN': string }>>(statement);
    console.log(`\n${title}:\n${plan.map((line) => `  ${line['QUERY PLAN']}`).join('\n')}`);
  }
  await db.prisma.$disconnect();
} finally {
  await database.close();
}
