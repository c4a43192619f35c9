// claimPartition's cost in the database, before and after source pools: each case claims every PENDING partition
// of its own runs once, 8 clients, one statement per claim as the API sends it.
//   before      — the claim function of BENCH_BEFORE_REF (default main), loaded under another name
//   no pool     — today's claim for a job in no pool (one more indexed read than before)
//   pool, room  — a job in a pool whose limit is never reached (the pool row's lock and the count of its RUNNING)
//   pool, full  — a job in a pool at its limit: every claim refused POOL_FULL
// Usage: npx tsx bench/claim-partition.ts   (BENCH_CLAIMS per case, default 4000; DATABASE_URL optional: the
// benchmark creates and drops its own database there, else an embedded one)
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { benchDatabase, fmt, measure, printTable } from './support.js';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 4000);
const BEFORE_REF = process.env.BENCH_BEFORE_REF ?? 'main';
const CLIENTS = 8;
const PARTITIONS_PER_RUN = 200;
/** RUNNING partitions of other runs in the roomy pool, so that its count has rows to count. */
const RUNNING_IN_POOL = 200;

async function runsOf(
  sql: pg.Pool,
  jobKey: string,
  partitions: number,
  status = 'PENDING',
): Promise<Array<{ runId: string; partitionId: string }>> {
  const targets: Array<{ runId: string; partitionId: string }> = [];
  for (let made = 0; made < partitions; made += PARTITIONS_PER_RUN) {
    const runId = randomUUID();
    await sql.query(
      `INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, source_count, expected_partition_count)
       VALUES ($1, $2, $3, 'EXTRACTING', 0, $4)`,
      [runId, jobKey, `BK_${runId.slice(0, 8)}`, PARTITIONS_PER_RUN],
    );
    await sql.query(
      `INSERT INTO nifi_ops.load_partition (run_id, partition_id, status, expected_row_count, is_null_partition, claim_token, heartbeat_at)
       SELECT $1, lpad(i::text, 4, '0'), $2::text, 1, true, CASE WHEN $2::text = 'RUNNING' THEN gen_random_uuid() END, clock_timestamp()
         FROM generate_series(0, $3::int - 1) AS i`,
      [runId, status, PARTITIONS_PER_RUN],
    );
    for (let i = 0; i < PARTITIONS_PER_RUN; i++) targets.push({ runId, partitionId: String(i).padStart(4, '0') });
  }
  return targets.slice(0, partitions);
}

async function main() {
  const database = await benchDatabase();
  const sql = new pg.Pool({ connectionString: database.url, max: CLIENTS });
  try {
    let before: string | null = null;
    try {
      const text = execFileSync('git', ['show', `${BEFORE_REF}:prisma/functions/02_claim_partition.sql`], { encoding: 'utf8' });
      if (!text.includes('claim_partition_within_pool')) {
        await sql.query(text.replaceAll('nifi_ops.claim_partition(', 'nifi_ops.claim_partition_before('));
        before = 'claim_partition_before';
      }
    } catch (error) {
      console.error(`no "before" case: ${BEFORE_REF}'s claim function could not be loaded (${(error as Error).message.split('\n')[0]})`);
    }
    await sql.query(
      `INSERT INTO nifi_ops.source_pool (pool_name, max_running, updated_by) VALUES ('roomy', 1000000, 'bench'), ('full', 0, 'bench')`,
    );
    await sql.query(
      `INSERT INTO nifi_ops.source_pool_job (job_key, pool_name, assigned_by)
       VALUES ('BENCH_ROOMY', 'roomy', 'bench'), ('BENCH_ROOMY_BUSY', 'roomy', 'bench'), ('BENCH_FULL', 'full', 'bench')`,
    );
    await runsOf(sql, 'BENCH_ROOMY_BUSY', RUNNING_IN_POOL, 'RUNNING');

    const cases: Array<{ name: string; fn: string; job: string; claimed: boolean }> = [
      ...(before ? [{ name: `before (${BEFORE_REF})`, fn: before, job: 'BENCH_BEFORE', claimed: true }] : []),
      { name: 'no pool', fn: 'claim_partition_within_pool', job: 'BENCH_FREE', claimed: true },
      { name: 'pool, room', fn: 'claim_partition_within_pool', job: 'BENCH_ROOMY', claimed: true },
      { name: 'pool, full', fn: 'claim_partition_within_pool', job: 'BENCH_FULL', claimed: false },
    ];
    const rows: Array<Record<string, string | number>> = [];
    for (const c of cases) {
      const targets = await runsOf(sql, c.job, CLAIMS);
      let wrong = 0;
      const result = await measure(CLAIMS, CLIENTS, async (i) => {
        const t = targets[i]!;
        const { rows: answer } = await sql.query({
          name: `bench_${c.fn}`,
          text: `SELECT claimed FROM nifi_ops.${c.fn}($1, $2, $3, 'bench-node', 'bench')`,
          values: [t.runId, t.partitionId, randomUUID()],
        });
        if (answer[0]?.claimed !== c.claimed) wrong++;
      });
      if (wrong > 0) throw new Error(`${c.name}: ${wrong} claims answered otherwise than claimed=${c.claimed}`);
      rows.push({
        case: c.name,
        claims: CLAIMS,
        'claims/s': fmt(result.perSecond, 0),
        'p50 ms': fmt(result.p50, 2),
        'p99 ms': fmt(result.p99, 2),
      });
    }
    printTable(`claimPartition in the database (${CLIENTS} clients)`, rows);
    console.log(JSON.stringify({ bench: 'claim-partition', cases: rows }));
  } finally {
    await sql.end();
    await database.close();
  }
}

await main();
