// The ledger's size under retention, as it runs for a while rather than right after one big purge: a history of
// RETAINED + 1 business dates (bench/history-data.ts, 100 jobs a date), then day after day a new date arrives —
// a copy of the newest ended date's runs with all their rows under new ids, a day later — SUCCESS runs that
// ended more than three days before are recorded as cleaned up (as PG-70 does after cleanup.successRetention),
// the purge takes what left retention (purgeLedger, as the sweeper and `load-control purge` do) and VACUUM runs,
// as autovacuum would between two days. Printed: each table's size on disk (heap and indexes) against RETAINED
// dates' worth, measured on a second ledger that grew to RETAINED dates the same way, day by day with no purge
// (indexes filled by insertion, as a ledger's are, not rebuilt; against the generator's freshly sorted
// indexes, the first column of ratios), after every day and at the end.
// Usage: npx tsx bench/retention-steady.ts
//   DATABASE_URL                  the server (admin connection; default postgresql://root@127.0.0.1:5432/postgres)
//   BENCH_STEADY_RETAINED_DAYS    dates kept (default 30); BENCH_STEADY_DAYS days run (default: as many)
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, type Db } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { PURGE_BATCH_ROWS, PURGED_TABLES, purgeLedger } from '../src/domain/retention/purge.js';
import { ACTIVE_RUN_STATUSES } from '../src/domain/states.js';
import { generateHistory, tableSizes, type TableSize } from './history-data.js';
import { fmt, printTable } from './support.js';

const ADMIN_URL = process.env.DATABASE_URL ?? 'postgresql://root@127.0.0.1:5432/postgres';
const RETAINED = Number(process.env.BENCH_STEADY_RETAINED_DAYS ?? 30);
const DAYS = Number(process.env.BENCH_STEADY_DAYS ?? RETAINED);
const TARGET = 1.2;
const DAY_MS = 86_400_000;
const MEASURED = ['load_run', ...PURGED_TABLES];

/**
 * The copy of one table's rows of the runs in step_map, under their new run ids: the old id is replaced in
 * every text of the row (paths, stage tables), then `patch` (SQL building a jsonb over the row `x`) is applied.
 */
function copyRows(table: string, patch = `'{}'::jsonb`, overriding = ''): string {
  // LATERAL: `(f(x)).*` would call f once per column
  return `
    INSERT INTO nifi_ops.${table} ${overriding}
    SELECT copy.* FROM nifi_ops.${table} x JOIN step_map m ON m.old_id = x.run_id,
      LATERAL jsonb_populate_record(NULL::nifi_ops.${table},
              replace(replace(to_jsonb(x)::text, m.old_id::text, m.new_id::text),
                      replace(m.old_id::text, '-', ''), replace(m.new_id::text, '-', ''))::jsonb || ${patch}) copy`;
}

/** A new business date: a date's runs and their rows, `shiftDays` later, under new ids, not cleaned up yet. */
async function arriveDay(sql: pg.Client, sourceDate: string, shiftDays: number): Promise<number> {
  const shift = `interval '${shiftDays} days'`;
  await sql.query('BEGIN');
  await sql.query(
    `
    CREATE TEMP TABLE step_map ON COMMIT DROP AS
    SELECT run_id AS old_id, gen_random_uuid() AS new_id FROM nifi_ops.load_run WHERE business_key = $1`,
    [sourceDate],
  );
  const runs = await sql.query(
    copyRows(
      'load_run',
      `jsonb_build_object(
      'business_key', (x.business_key::date + ${shiftDays})::text,
      'started_at', x.started_at + ${shift}, 'heartbeat_at', x.heartbeat_at + ${shift},
      'completed_at', x.completed_at + ${shift}, 'cleaned_at', NULL,
      'idempotency_key', x.idempotency_key || '+${shiftDays}')`,
    ),
  );
  await sql.query(copyRows('load_partition'));
  await sql.query(copyRows('load_file'));
  await sql.query(
    copyRows(
      'load_validation',
      `jsonb_build_object('validation_id', nextval('nifi_ops.load_validation_validation_id_seq'))`,
      'OVERRIDING SYSTEM VALUE',
    ),
  );
  await sql.query(copyRows('load_dispatch', `jsonb_build_object('dispatch_id', gen_random_uuid())`));
  await sql.query(copyRows('load_event', `jsonb_build_object('event_id', gen_random_uuid(), 'event_time', x.event_time + ${shift})`));
  await sql.query('COMMIT');
  return runs.rowCount ?? 0;
}

const bytes = (size: TableSize) => size.tableBytes + size.indexBytes;
type Sizes = Map<string, TableSize>;

/** On-disk size ÷ what `rows` rows take in `baseline`, heap and indexes together. */
function ratio(size: TableSize, baseline: Sizes, part: (size: TableSize) => number = bytes): number {
  const base = baseline.get(size.table)!;
  return (part(size) * base.rows) / (part(base) * size.rows);
}

interface Ledger {
  url: string;
  sql: pg.Client;
  db: Db;
  sizes(): Promise<Sizes>;
  /** The clock of day k: the generator's last date is yesterday, and each day adds one. */
  arrive(day: number): Promise<number>;
  drop(): Promise<void>;
}

async function ledger(admin: pg.Client, dates: number): Promise<Ledger> {
  const name = `lc_bench_steady_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  const started = performance.now();
  await generateHistory(url.toString(), { days: dates });
  console.log(`${name}: generated ${dates} business dates in ${fmt((performance.now() - started) / 1000, 0)} s`);
  const sql = new pg.Client({ connectionString: url.toString() });
  await sql.connect();
  await sql.query('ANALYZE');
  // the copies are plain rows: their NOTIFY triggers would tell nobody, and the foreign keys hold by construction
  await sql.query('SET session_replication_role = replica');
  const db = createDb(url.toString(), { poolSize: 2 });
  return {
    url: url.toString(),
    sql,
    db,
    sizes: async () =>
      new Map((await tableSizes(url.toString())).filter((size) => MEASURED.includes(size.table)).map((size) => [size.table, size])),
    async arrive(day) {
      // the newest date whose runs have all ended arrives again as the date after the newest
      const {
        rows: [found],
      } = await sql.query<{ source: string; shift: number }>(
        `
        SELECT max(business_key) FILTER (WHERE NOT active) AS source,
               max(business_key)::date - max(business_key) FILTER (WHERE NOT active)::date + 1 AS shift
          FROM (SELECT business_key, bool_or(status = ANY($1)) AS active FROM nifi_ops.load_run GROUP BY business_key) d`,
        [ACTIVE_RUN_STATUSES],
      );
      const arrived = await arriveDay(sql, found!.source, found!.shift);
      await sql.query(
        `UPDATE nifi_ops.load_run SET cleaned_at = completed_at + interval '3 days'
                        WHERE status = 'SUCCESS' AND cleaned_at IS NULL AND completed_at < $1::timestamptz - interval '3 days'`,
        [new Date(Date.now() + day * DAY_MS)],
      );
      return arrived;
    },
    async drop() {
      await sql.end().catch(() => undefined);
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

const vacuum = (target: Ledger) => target.sql.query(`VACUUM (ANALYZE) ${MEASURED.map((table) => `nifi_ops.${table}`).join(', ')}`);

async function main(): Promise<number> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  const ledgers: Ledger[] = [];
  try {
    // RETAINED dates' worth: two generated dates (the last has active runs), then the rest arriving day by day
    const grown = await ledger(admin, 2);
    ledgers.push(grown);
    for (let day = 1; day <= RETAINED - 2; day++) await grown.arrive(day);
    await vacuum(grown);
    const worth = await grown.sizes();
    const retained = await ledger(admin, RETAINED + 1);
    ledgers.push(retained);
    const sorted = await retained.sizes();

    const perDay: Array<Record<string, number | string>> = [];
    for (let day = 1; day <= DAYS; day++) {
      const t0 = performance.now();
      const arrived = await retained.arrive(day);
      const t1 = performance.now();
      const summary = await purgeLedger(retained.db, {
        before: new Date(Date.now() + day * DAY_MS - RETAINED * DAY_MS),
        batchRows: PURGE_BATCH_ROWS,
      });
      const t2 = performance.now();
      await vacuum(retained);
      const t3 = performance.now();
      const sizes = await retained.sizes();
      perDay.push({
        day,
        'runs in': arrived,
        'runs purged': summary.purgedRuns.length,
        'arrive s': fmt((t1 - t0) / 1000),
        'purge s': fmt((t2 - t1) / 1000),
        'vacuum s': fmt((t3 - t2) / 1000),
        ...Object.fromEntries([...sizes.values()].map((size) => [size.table, fmt(ratio(size, worth), 2)])),
      });
      process.stdout.write(`  day ${day}: ${JSON.stringify(perDay.at(-1))}\n`);
    }
    printTable(`size on disk ÷ ${RETAINED} dates' worth, after each day (arrive, purge, VACUUM)`, perDay);
    let ok = true;
    const final = [...(await retained.sizes()).values()].map((size) => {
      ok &&= ratio(size, worth) <= TARGET;
      return {
        table: size.table,
        rows: size.rows,
        'heap MB': fmt(size.tableBytes / 2 ** 20),
        'indexes MB': fmt(size.indexBytes / 2 ** 20),
        'worth MB': fmt((bytes(worth.get(size.table)!) * size.rows) / worth.get(size.table)!.rows / 2 ** 20),
        ratio: fmt(ratio(size, worth), 2),
        'heap ratio': fmt(
          ratio(size, worth, (s) => s.tableBytes),
          2,
        ),
        'index ratio': fmt(
          ratio(size, worth, (s) => s.indexBytes),
          2,
        ),
        'ratio to sorted indexes': fmt(ratio(size, sorted), 2),
      };
    });
    printTable(`after ${DAYS} days under retention of ${RETAINED} dates (target ≤ ${TARGET}×)`, final);
    console.log(JSON.stringify({ bench: 'retention-steady', retained: RETAINED, days: DAYS, perDay, final }));
    return ok ? 0 : 1;
  } finally {
    for (const target of ledgers) await target.drop();
    await admin.end();
  }
}

process.exitCode = await main();
