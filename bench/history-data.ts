// The synthetic ledger of bench/history.ts, written directly in SQL (INSERT … SELECT over generate_series): 100
// jobs, one run per job and business date, most of them SUCCESS and cleaned up, some failed in each way a run
// can fail, and on the last business date a few runs still active (one of them a 2,000-partition run halfway
// through its extraction). Statuses, counters and timestamps follow src/domain/states.ts and the CHECK
// constraints: a run's counters are its partitions' sums, an ended run has no unfinished partition or
// undelivered dispatch left, a cleaned run ended longer ago than its retention, and so on. Rows are written in
// time order (business date, then job), as a ledger is appended to; the run-level events follow the partition
// events rather than interleaving with them.
import pg from 'pg';
import { ACTIVE_RUN_STATUSES } from '../src/domain/states.js';

export const JOBS = 100;
/** Jobs 0..3 plan 2,000 partitions a run; job 0's run of the last business date is halfway through its extraction. */
export const LARGE_RUN_PARTITIONS = 2000;
export const ACTIVE_JOB = 'JOB_000';
/** A gate whose required jobs are Load Control jobs and external ones (readiness reads both). */
export const BENCH_CONSUMER = 'MART_0';
const LEDGER_TABLES = ['load_run', 'load_partition', 'load_file', 'load_validation', 'load_dispatch', 'load_event'];
const GATE_TABLES = [
  'gate',
  'gate_required_job',
  'gate_observation',
  'gate_publication',
  'gate_publication_evidence',
  'gate_publish_claim_evidence',
];
export const TABLES = [...LEDGER_TABLES, ...GATE_TABLES];

export interface GenerationStep {
  step: string;
  rows: number;
  seconds: number;
}

/** Runs one statement (or a few) and records how long it took and how many rows it wrote. */
async function timed(sql: pg.Client, steps: GenerationStep[], step: string, text: string): Promise<void> {
  const started = performance.now();
  const result = await sql.query(text);
  const rows = (Array.isArray(result) ? result : [result]).reduce((n, r: pg.QueryResult) => n + (r.rowCount ?? 0), 0);
  steps.push({ step, rows, seconds: (performance.now() - started) / 1000 });
  process.stdout.write(`  ${step}: ${rows.toLocaleString('en')} rows in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}

interface SchemaObject {
  table: string;
  name: string;
  definition: string;
}

/** The ledger tables' keys, unique constraints, foreign keys (also those pointing at them) and full indexes. */
async function ledgerSchema(
  sql: pg.Client,
): Promise<{ constraints: SchemaObject[]; foreignKeys: SchemaObject[]; indexes: SchemaObject[] }> {
  const { rows: constraints } = await sql.query<SchemaObject & { type: string }>(
    `
    SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS definition, c.contype AS type
      FROM pg_constraint c
     WHERE c.contype IN ('p', 'u', 'f')
       AND (c.conrelid = ANY($1::regclass[]) OR c.confrelid = ANY($1::regclass[]))
     ORDER BY c.conname`,
    [LEDGER_TABLES.map((t) => `nifi_ops.${t}`)],
  );
  const { rows: indexes } = await sql.query<SchemaObject>(
    `
    SELECT i.indrelid::regclass::text AS table, i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
      FROM pg_index i
     WHERE i.indrelid = ANY($1::regclass[])
       AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.contype IN ('p', 'u'))
       -- partial indexes hold the few active or failing rows: they cost the inserts little and keep the
       -- predicates exactly as the migrations wrote them (pg_get_indexdef deparses ANY(ARRAY…) differently)
       AND i.indpred IS NULL
     ORDER BY 2`,
    [LEDGER_TABLES.map((t) => `nifi_ops.${t}`)],
  );
  return {
    constraints: constraints.filter((c) => c.type !== 'f'),
    foreignKeys: constraints.filter((c) => c.type === 'f'),
    indexes,
  };
}

const fingerprint = (s: Awaited<ReturnType<typeof ledgerSchema>>) =>
  JSON.stringify([...s.constraints, ...s.foreignKeys, ...s.indexes].map((o) => `${o.table} ${o.name} ${o.definition}`).sort());

export interface GenerationOptions {
  /** Business dates of history, the last one being yesterday (its runs started today). */
  days: number;
}

/**
 * Fills a freshly migrated database. The ledger tables' keys and indexes are dropped first and built again
 * from their own definitions once the rows are in (a sort per index instead of 40 M random insertions), and
 * the schema is compared with the one before; foreign keys are re-validated when they are added back.
 * Triggers (NOTIFY) are off for the session (session_replication_role = replica): nobody listens.
 */
export async function generateHistory(url: string, options: GenerationOptions): Promise<GenerationStep[]> {
  const { days } = options;
  const sql = new pg.Client({ connectionString: url, application_name: 'bench history generate' });
  await sql.connect();
  const steps: GenerationStep[] = [];
  try {
    await sql.query(`SET synchronous_commit = off`);
    await sql.query(`SET session_replication_role = replica`);
    await sql.query(`SET maintenance_work_mem = '1GB'`);
    await sql.query(`SET work_mem = '256MB'`);
    await sql.query(`SET client_min_messages = warning`);
    const schema = await ledgerSchema(sql);
    for (const fk of schema.foreignKeys) await sql.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);
    for (const c of schema.constraints) await sql.query(`ALTER TABLE ${c.table} DROP CONSTRAINT ${c.name}`);
    for (const index of schema.indexes) await sql.query(`DROP INDEX ${index.name}`);

    await sql.query(`
      CREATE TEMP TABLE bench_job AS
      SELECT j AS job_no, 'JOB_' || lpad(j::text, 3, '0') AS job_key,
             CASE WHEN j < 4 THEN ${LARGE_RUN_PARTITIONS} ELSE 26 + (j * 37) % 250 END AS partitions
        FROM generate_series(0, ${JOBS - 1}) j`);
    // One row per run: its fate, and the times of the steps it reached (t1 manifest, t2 extraction complete,
    // t3 stage validation started, t4 staging validated, t5 publish started, t6 published, t7 success). A
    // run of the last business date that is still active started just long enough ago to be where it is
    // now, so that no sweeper rule has reason to touch it.
    await timed(
      sql,
      steps,
      'plan (temporary)',
      `
      CREATE TEMP TABLE bench_plan AS
      WITH base AS (
        SELECT j.job_no, j.job_key, j.partitions, d AS day_no,
               date_trunc('minute', now()) - interval '4 hours' - (${days} - 1 - d) * interval '1 day' AS day_start,
               (j.job_no * 7919 + d * 104729) % 1000 AS h,
               interval '5 minutes' + j.partitions * interval '300 milliseconds' AS e
          FROM bench_job j CROSS JOIN generate_series(0, ${days - 1}) d
      ), fated AS (
        SELECT b.*, (b.day_start::date - 1)::text AS business_key,
               CASE WHEN b.day_no = ${days - 1} AND b.job_no = 0 THEN 'EXTRACTING'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 4 THEN 'EXTRACTED_VALIDATED'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 5 THEN 'STAGE_VALIDATING'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 6 THEN 'STAGING_VALIDATED'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 7 THEN 'PUBLISHING'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 8 THEN 'CREATED'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 9 THEN 'PUBLISH_UNKNOWN'
                    WHEN b.day_no = ${days - 1} AND b.job_no = 10 THEN 'PUBLISHED'
                    WHEN b.h < 10 THEN 'FAILED_EXTRACT'
                    WHEN b.h < 16 THEN 'FAILED_STAGE_VALIDATION'
                    WHEN b.h < 20 THEN 'TIMED_OUT'
                    WHEN b.h < 23 THEN 'FAILED_PUBLISH'
                    WHEN b.h < 26 THEN 'CANCELLED'
                    WHEN b.h < 28 THEN 'FAILED_MANIFEST'
                    WHEN b.h < 30 THEN 'FAILED_TARGET_VALIDATION'
                    ELSE 'SUCCESS' END AS status
          FROM base b
      ), staged AS (
        SELECT f.*,
               CASE f.status WHEN 'CREATED' THEN 0 WHEN 'FAILED_MANIFEST' THEN 0
                    WHEN 'EXTRACTING' THEN 1 WHEN 'FAILED_EXTRACT' THEN 1 WHEN 'TIMED_OUT' THEN 1 WHEN 'CANCELLED' THEN 1
                    WHEN 'EXTRACTED_VALIDATED' THEN 2
                    WHEN 'STAGE_VALIDATING' THEN 3 WHEN 'FAILED_STAGE_VALIDATION' THEN 3
                    WHEN 'STAGING_VALIDATED' THEN 4
                    WHEN 'PUBLISHING' THEN 5 WHEN 'PUBLISH_UNKNOWN' THEN 5 WHEN 'FAILED_PUBLISH' THEN 5
                    ELSE 6 END AS stage,
               -- active runs: the time since the start at which they reached their status, plus a little
               CASE f.status WHEN 'CREATED' THEN interval '2 minutes'
                    WHEN 'EXTRACTING' THEN interval '20 minutes'
                    WHEN 'EXTRACTED_VALIDATED' THEN interval '3 minutes' + f.e
                    WHEN 'STAGE_VALIDATING' THEN interval '5 minutes' + f.e
                    WHEN 'STAGING_VALIDATED' THEN interval '6 minutes' + f.e
                    WHEN 'PUBLISHING' THEN interval '7 minutes' + f.e
                    WHEN 'PUBLISH_UNKNOWN' THEN interval '2 hours 26 minutes' + f.e
                    WHEN 'PUBLISHED' THEN interval '9 minutes' + f.e END AS active_for
          FROM fated f
      )
      SELECT gen_random_uuid() AS run_id, s.*,
             CASE WHEN s.active_for IS NULL THEN s.day_start + s.job_no * interval '2 minutes'
                  ELSE date_trunc('second', now()) - s.active_for END AS t0
        FROM staged s
       -- in time order, as a ledger is appended to: every table below is written in this order
       ORDER BY s.day_no, s.job_no`,
    );
    await sql.query(`
      ALTER TABLE bench_plan ADD COLUMN t1 timestamptz, ADD COLUMN t2 timestamptz, ADD COLUMN t3 timestamptz,
        ADD COLUMN t4 timestamptz, ADD COLUMN t5 timestamptz, ADD COLUMN t6 timestamptz, ADD COLUMN t7 timestamptz,
        ADD COLUMN ended_at timestamptz, ADD COLUMN cleaned_at timestamptz, ADD COLUMN cleanup_fails boolean`);
    await sql.query(`
      UPDATE bench_plan SET t1 = t0 + interval '1 minute', t2 = t0 + interval '1 minute' + e,
        t3 = t0 + interval '3 minutes' + e, t4 = t0 + interval '4 minutes' + e, t5 = t0 + interval '5 minutes' + e,
        t6 = t0 + interval '7 minutes' + e, t7 = t0 + interval '8 minutes' + e,
        cleanup_fails = (job_no * 31 + day_no) % 1000 = 7`);
    await sql.query(`
      UPDATE bench_plan SET ended_at = CASE status
          WHEN 'SUCCESS' THEN t7 WHEN 'FAILED_TARGET_VALIDATION' THEN t7
          WHEN 'FAILED_MANIFEST' THEN t1 WHEN 'FAILED_EXTRACT' THEN t1 + e / 2 + interval '30 minutes' WHEN 'CANCELLED' THEN t1 + e / 3
          WHEN 'TIMED_OUT' THEN t0 + interval '6 hours' WHEN 'FAILED_STAGE_VALIDATION' THEN t4
          WHEN 'FAILED_PUBLISH' THEN t5 + interval '2 minutes' END`);
    // cleaned as soon as the retention (config.cleanup: P3D after SUCCESS, P14D after a failure) let it, except
    // for the odd run whose cleanup keeps failing; a run that ended TIMED_OUT after today's now is not possible,
    // so the last day's would-be timeouts end as they would have: later than now means not ended yet.
    await sql.query(`
      UPDATE bench_plan SET cleaned_at = CASE
          WHEN ended_at IS NULL OR cleanup_fails THEN NULL
          WHEN status = 'SUCCESS' AND ended_at + interval '3 days 20 minutes' < now() THEN ended_at + interval '3 days 20 minutes'
          WHEN status <> 'SUCCESS' AND ended_at + interval '14 days 20 minutes' < now() THEN ended_at + interval '14 days 20 minutes'
        END`);
    await sql.query(`UPDATE bench_plan SET status = 'SUCCESS', ended_at = t7, stage = 6 WHERE ended_at > now() - interval '1 minute'`);

    await timed(
      sql,
      steps,
      'load_run',
      `
      INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, snapshot_scn, source_null_split_count,
          source_min_split, source_max_split, expected_partition_count, hdfs_run_path, stage_table_name, publish_token,
          version_no, parameters, started_at, heartbeat_at, extract_completed_at, publish_started_at, published_at,
          completed_at, error_stage, error_code, error_message, cleaned_at, idempotency_key, request_digest, created_by)
      SELECT p.run_id, p.job_key, p.business_key, p.status,
             CASE WHEN p.stage >= 1 THEN 880000000000 + p.day_no * 1000000 + p.job_no * 1000 END,
             CASE WHEN p.stage >= 1 THEN 0 END,
             CASE WHEN p.stage >= 1 THEN 0 END,
             CASE WHEN p.stage >= 1 THEN p.partitions * 1000000::numeric - 1 END,
             CASE WHEN p.stage >= 1 THEN p.partitions END,
             '/data/raw/' || p.job_key || '/run_id=' || p.run_id,
             'tmp_' || lower(p.job_key) || '_' || replace(p.run_id::text, '-', ''),
             CASE WHEN p.stage >= 5 THEN gen_random_uuid() END,
             p.stage + 1 + (p.status NOT IN ('SUCCESS', 'EXTRACTING') AND p.stage > 0)::int,
             jsonb_build_object('sourceTable', 'SALES.' || p.job_key, 'allowEmptySource', false),
             p.t0,
             CASE WHEN p.ended_at IS NOT NULL THEN p.ended_at
                  WHEN p.status = 'PUBLISH_UNKNOWN' THEN p.t5 + interval '2 hours 1 minute'
                  ELSE (ARRAY[p.t0, p.t1, p.t2, p.t3, p.t4, p.t5, p.t6])[p.stage + 1] END,
             CASE WHEN p.stage >= 2 THEN p.t2 END,
             CASE WHEN p.stage >= 5 THEN p.t5 END,
             CASE WHEN p.stage >= 6 THEN p.t6 END,
             p.ended_at,
             CASE p.status WHEN 'FAILED_EXTRACT' THEN 'EXTRACT' WHEN 'FAILED_MANIFEST' THEN 'MANIFEST'
                  WHEN 'TIMED_OUT' THEN 'SWEEPER' WHEN 'FAILED_STAGE_VALIDATION' THEN 'STAGE_VALIDATION'
                  WHEN 'FAILED_PUBLISH' THEN 'PUBLISH' WHEN 'PUBLISH_UNKNOWN' THEN 'PUBLISH'
                  WHEN 'FAILED_TARGET_VALIDATION' THEN 'TARGET_VALIDATION' END,
             CASE p.status WHEN 'FAILED_EXTRACT' THEN 'ORA-01013' WHEN 'FAILED_MANIFEST' THEN 'MANIFEST_INVALID'
                  WHEN 'TIMED_OUT' THEN 'RUN_TIMEOUT' WHEN 'FAILED_STAGE_VALIDATION' THEN 'COUNT_MISMATCH'
                  WHEN 'FAILED_PUBLISH' THEN 'HIVE_ERROR' WHEN 'PUBLISH_UNKNOWN' THEN 'PUBLISH_STALE'
                  WHEN 'FAILED_TARGET_VALIDATION' THEN 'COUNT_MISMATCH' END,
             CASE p.status WHEN 'FAILED_EXTRACT' THEN 'partition failed: user requested cancel of current operation'
                  WHEN 'FAILED_MANIFEST' THEN 'manifest invalid: partitions overlap'
                  WHEN 'TIMED_OUT' THEN 'exceeded 6h in EXTRACTING'
                  WHEN 'FAILED_STAGE_VALIDATION' THEN 'COUNT_MISMATCH STAGE_COUNT'
                  WHEN 'FAILED_PUBLISH' THEN 'INSERT OVERWRITE failed: lock timeout'
                  WHEN 'PUBLISH_UNKNOWN' THEN 'no publish result within 2h'
                  WHEN 'FAILED_TARGET_VALIDATION' THEN 'COUNT_MISMATCH TARGET_COUNT'
                  WHEN 'CANCELLED' THEN 'cancelled by alice: source table being reloaded' END,
             p.cleaned_at,
             gen_random_uuid()::text,
             encode(sha256(convert_to(p.job_key || p.business_key, 'UTF8')), 'hex'),
             'nifi-prod'
        FROM bench_plan p`,
    );

    // Partition k of a run: its fate follows the run's (an ended run left none unfinished), its expected rows
    // 4,000..11,999 and its chunk count 1..4.
    await timed(
      sql,
      steps,
      'load_partition',
      `
      INSERT INTO nifi_ops.load_partition (run_id, partition_id, lower_bound, upper_bound, upper_inclusive, status,
          expected_row_count, actual_row_count, fragment_count, file_count, byte_count, attempt_count, claim_token,
          worker_node, claimed_by, started_at, heartbeat_at, completed_at, error_code, error_message, received_chunks,
          received_rows, received_bytes, reported_chunk_count, created_at)
      SELECT x.run_id, lpad(x.k::text, 4, '0'), x.k * 1000000::numeric, (x.k + 1) * 1000000::numeric - 1, x.k = x.partitions - 1,
             x.fate, x.rows,
             CASE WHEN x.fate = 'SUCCESS' THEN x.rows END,
             CASE WHEN x.fate = 'SUCCESS' THEN x.chunks END,
             CASE WHEN x.fate = 'SUCCESS' THEN x.chunks END,
             CASE WHEN x.fate = 'SUCCESS' THEN x.rows * 120 END,
             CASE WHEN x.fate IN ('PENDING', 'ABANDONED') THEN 0 WHEN x.reissued THEN 2 ELSE 1 END,
             CASE WHEN x.fate NOT IN ('PENDING', 'ABANDONED') THEN gen_random_uuid() END,
             CASE WHEN x.fate NOT IN ('PENDING', 'ABANDONED') THEN 'nifi-node-' || (x.k % 4 + 1) END,
             CASE WHEN x.fate NOT IN ('PENDING', 'ABANDONED') THEN 'nifi-prod' END,
             CASE WHEN x.fate NOT IN ('PENDING', 'ABANDONED') THEN x.started END,
             CASE WHEN x.fate = 'SUCCESS' THEN x.started + x.e * 0.2
                  WHEN x.fate = 'RUNNING' THEN date_trunc('second', now()) - interval '10 seconds'
                  WHEN x.fate IN ('FAILED', 'TIMED_OUT') THEN x.started + x.e * 0.1 END,
             CASE WHEN x.fate = 'SUCCESS' THEN x.started + x.e * 0.2
                  WHEN x.fate IN ('FAILED', 'TIMED_OUT', 'ABANDONED') THEN x.ended_at END,
             CASE x.fate WHEN 'FAILED' THEN 'ORA-01013' WHEN 'TIMED_OUT' THEN 'RUN_TIMEOUT' WHEN 'ABANDONED' THEN 'RUN_ENDED' END,
             CASE x.fate WHEN 'FAILED' THEN 'user requested cancel of current operation'
                         WHEN 'ABANDONED' THEN 'run ended in ' || x.status END,
             x.received, x.received_rows, x.received_rows * 120,
             CASE WHEN x.received > 0 THEN x.chunks END,
             x.t1
        FROM (
          SELECT y.*, CASE y.fate WHEN 'SUCCESS' THEN y.chunks WHEN 'RUNNING' THEN y.chunks - 1 ELSE 0 END AS received,
                 CASE y.fate WHEN 'SUCCESS' THEN y.rows WHEN 'RUNNING' THEN (y.chunks - 1) * (y.rows / y.chunks) ELSE 0 END AS received_rows
            FROM (
              SELECT p.run_id, p.partitions, p.status, p.e, p.t1, p.ended_at, k,
                     4000 + (k * 7919 + p.job_no * 31) % 8000 AS rows,
                     1 + (k * 7 + p.job_no * 3 + p.day_no) % 4 AS chunks,
                     p.t1 + (k::float8 / p.partitions) * 0.8 * p.e AS started,
                     p.status = 'FAILED_EXTRACT' AND k = (p.h * 7) % (p.partitions / 2) AS reissued,
                     CASE WHEN p.stage >= 2 THEN 'SUCCESS'
                          WHEN p.status = 'EXTRACTING' THEN CASE WHEN k < p.partitions * 0.6 THEN 'SUCCESS'
                                                                 WHEN k < p.partitions * 0.62 THEN 'RUNNING' ELSE 'PENDING' END
                          WHEN p.status = 'FAILED_EXTRACT' THEN CASE WHEN k = (p.h * 7) % (p.partitions / 2) THEN 'FAILED'
                                                                     WHEN k < p.partitions / 2 THEN 'SUCCESS' ELSE 'ABANDONED' END
                          WHEN p.status = 'TIMED_OUT' THEN CASE WHEN k < p.partitions * 0.8 THEN 'SUCCESS' ELSE 'TIMED_OUT' END
                          WHEN p.status = 'CANCELLED' THEN CASE WHEN k < p.partitions / 3 THEN 'SUCCESS' ELSE 'ABANDONED' END
                     END AS fate
                FROM bench_plan p CROSS JOIN LATERAL generate_series(0, p.partitions - 1) k
               WHERE p.stage >= 1) y
        ) x`,
    );
    await timed(
      sql,
      steps,
      'load_run counters',
      `
      UPDATE nifi_ops.load_run r
         SET source_count = s.source, success_partition_count = s.succeeded, failed_partition_count = s.failed,
             extracted_count = s.extracted,
             staging_count = CASE WHEN b.stage >= 4 THEN s.source WHEN r.status = 'FAILED_STAGE_VALIDATION' THEN s.source - 17 END,
             target_count = CASE WHEN r.status = 'SUCCESS' THEN s.source WHEN r.status = 'FAILED_TARGET_VALIDATION' THEN s.source - 17 END
        FROM (SELECT run_id, sum(expected_row_count) AS source, count(*) FILTER (WHERE status = 'SUCCESS') AS succeeded,
                     count(*) FILTER (WHERE status = 'FAILED') AS failed,
                     COALESCE(sum(actual_row_count) FILTER (WHERE status = 'SUCCESS'), 0) AS extracted
                FROM nifi_ops.load_partition GROUP BY run_id) s, bench_plan b
       WHERE r.run_id = s.run_id AND b.run_id = r.run_id`,
    );

    await timed(
      sql,
      steps,
      'load_file',
      `
      INSERT INTO nifi_ops.load_file (run_id, partition_id, chunk_index, fragment_identifier, fragment_count, hdfs_path,
          record_count, byte_count, status, written_at, updated_at, reported_by)
      SELECT p.run_id, p.partition_id, i, md5(p.run_id::text || p.partition_id), p.reported_chunk_count,
             r.hdfs_run_path || '/part-' || p.partition_id || '-' || lpad(i::text, 6, '0') || '.parquet',
             CASE WHEN i < p.reported_chunk_count - 1 THEN p.expected_row_count / p.reported_chunk_count
                  ELSE p.expected_row_count - (p.reported_chunk_count - 1) * (p.expected_row_count / p.reported_chunk_count) END,
             120 * CASE WHEN i < p.reported_chunk_count - 1 THEN p.expected_row_count / p.reported_chunk_count
                  ELSE p.expected_row_count - (p.reported_chunk_count - 1) * (p.expected_row_count / p.reported_chunk_count) END,
             'WRITTEN',
             p.started_at + (COALESCE(p.completed_at, p.heartbeat_at) - p.started_at) * ((i + 1)::float8 / p.received_chunks),
             p.started_at + (COALESCE(p.completed_at, p.heartbeat_at) - p.started_at) * ((i + 1)::float8 / p.received_chunks),
             'nifi-prod'
        FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r USING (run_id)
        CROSS JOIN LATERAL generate_series(0, p.received_chunks - 1) i
       WHERE p.received_chunks > 0`,
    );

    await timed(
      sql,
      steps,
      'load_event (partitions)',
      `
      INSERT INTO nifi_ops.load_event (event_id, event_time, event_level, event_name, run_id, job_key, business_key,
          partition_id, process_group, processor_name, attempt_no, row_count, error_code, message, details, actor)
      SELECT gen_random_uuid(), e.at, e.level, e.name, p.run_id, r.job_key, r.business_key, p.partition_id,
             'LOAD_CONTROL_API', lower(e.name), e.attempt, e.rows, e.code, e.message, e.details, 'nifi-prod'
        FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r USING (run_id)
        CROSS JOIN LATERAL (VALUES
          (p.started_at IS NOT NULL, p.started_at, 'INFO', 'PARTITION_STARTED', 1, NULL::bigint, NULL, NULL,
           jsonb_build_object('workerNode', p.worker_node, 'attempt', 1)),
          (p.attempt_count = 2, p.started_at + interval '20 minutes', 'INFO', 'PARTITION_STARTED', 2, NULL, NULL, NULL,
           jsonb_build_object('workerNode', p.worker_node, 'attempt', 2)),
          (p.status = 'SUCCESS', p.completed_at, 'INFO', 'PARTITION_SUCCESS', NULL, p.actual_row_count, NULL, NULL,
           jsonb_build_object('files', p.file_count, 'bytes', p.byte_count)),
          (p.status = 'FAILED', p.completed_at, 'ERROR', 'PARTITION_FAILED', p.attempt_count, NULL, p.error_code, p.error_message,
           jsonb_build_object('attempt', p.attempt_count))
        ) e(wanted, at, level, name, attempt, rows, code, message, details)
       WHERE e.wanted`,
    );

    await timed(
      sql,
      steps,
      'load_event (runs)',
      `
      INSERT INTO nifi_ops.load_event (event_id, event_time, event_level, event_name, run_id, job_key, business_key,
          process_group, processor_name, row_count, error_code, message, details, actor)
      SELECT gen_random_uuid(), e.at, e.level, e.name, r.run_id, r.job_key, r.business_key,
             'LOAD_CONTROL_API', lower(e.name), e.rows, e.code, e.message, e.details, e.actor
        FROM nifi_ops.load_run r JOIN bench_plan b USING (run_id)
        CROSS JOIN LATERAL (VALUES
          (true, b.t0, 'INFO', 'RUN_STARTED', NULL::bigint, NULL, NULL, '{}'::jsonb, 'nifi-prod'),
          (b.stage >= 1, b.t1, 'INFO', 'MANIFEST_CREATED', r.source_count, NULL, NULL,
           jsonb_build_object('partitions', r.expected_partition_count), 'nifi-prod'),
          (r.status = 'FAILED_MANIFEST', b.t1, 'ERROR', 'MANIFEST_INVALID', NULL, r.error_code, r.error_message, '{}', 'nifi-prod'),
          (b.stage >= 2, b.t2, 'INFO', 'EXTRACT_VALIDATED', r.extracted_count, NULL, NULL, '{}', 'nifi-prod'),
          (b.stage >= 3, b.t3, 'INFO', 'STAGE_VALIDATION_STARTED', NULL, NULL, NULL, '{}', 'nifi-prod'),
          (b.stage >= 4, b.t4, 'INFO', 'STAGE_VALIDATED', r.staging_count, NULL, NULL, '{}', 'nifi-prod'),
          (b.stage >= 5, b.t5, 'INFO', 'PUBLISH_STARTED', NULL, NULL, NULL, jsonb_build_object('publishToken', r.publish_token), 'nifi-prod'),
          (b.stage >= 6, b.t6, 'INFO', 'PUBLISH_FINISHED', NULL, NULL, NULL, '{}', 'nifi-prod'),
          (r.status = 'SUCCESS', b.t7, 'INFO', 'RUN_SUCCESS', r.target_count, NULL, NULL, '{}', 'nifi-prod'),
          (r.status = 'PUBLISH_UNKNOWN', r.heartbeat_at, 'ERROR', 'PUBLISH_UNKNOWN', NULL, r.error_code, r.error_message,
           '{"from": "PUBLISHING"}', 'sweeper'),
          (r.status IN ('FAILED_EXTRACT', 'FAILED_STAGE_VALIDATION', 'FAILED_PUBLISH', 'FAILED_TARGET_VALIDATION', 'FAILED_MANIFEST'),
           r.completed_at, 'ERROR', 'RUN_FAILED', NULL, r.error_code, r.error_message, '{}', 'nifi-prod'),
          (r.status = 'TIMED_OUT', r.completed_at, 'ERROR', 'RUN_TIMED_OUT', NULL, r.error_code, r.error_message, '{}', 'sweeper'),
          (r.status = 'CANCELLED', r.completed_at, 'WARN', 'RUN_CANCELLED', NULL, NULL, r.error_message, '{}', 'alice'),
          (r.status IN ('FAILED_EXTRACT', 'CANCELLED'), r.completed_at + interval '1 minute', 'INFO', 'RUN_WORK_ABANDONED', NULL,
           NULL, 'run ended in ' || r.status, jsonb_build_object('runStatus', r.status), 'sweeper'),
          (b.cleanup_fails AND r.completed_at + interval '3 days 20 minutes' < now(), r.completed_at + interval '3 days 20 minutes',
           'WARN', 'CLEANUP_FAILED', NULL, 'HDFS_PERMISSION', 'Permission denied: ' || r.hdfs_run_path, '{}', 'nifi-prod'),
          (r.cleaned_at IS NOT NULL, r.cleaned_at, 'INFO', 'RUN_CLEANED', NULL, NULL, NULL,
           jsonb_build_object('droppedTable', r.stage_table_name, 'deletedPath', r.hdfs_run_path), 'nifi-prod')
        ) e(wanted, at, level, name, rows, code, message, details, actor)
       WHERE e.wanted`,
    );

    await timed(
      sql,
      steps,
      'load_validation',
      `
      INSERT INTO nifi_ops.load_validation (run_id, stage, metric_name, expected_value, actual_value, tolerance, result,
          query_version, details, measured_at)
      SELECT r.run_id, m.stage, m.name, m.expected, m.actual, m.tolerance, m.result, 'v1', '{}', m.at
        FROM nifi_ops.load_run r JOIN bench_plan b USING (run_id)
        CROSS JOIN LATERAL (VALUES
          (b.stage >= 3 AND r.status <> 'STAGE_VALIDATING', 'STAGING', 'STAGE_COUNT', r.source_count::text,
           (r.source_count - CASE WHEN r.status = 'FAILED_STAGE_VALIDATION' THEN 17 ELSE 0 END)::text, '0',
           CASE WHEN r.status = 'FAILED_STAGE_VALIDATION' THEN 'FAIL' ELSE 'PASS' END, b.t3 + interval '30 seconds'),
          (b.stage >= 3 AND r.status <> 'STAGE_VALIDATING', 'STAGING', 'AMOUNT_SUM', (r.source_count * 37)::text,
           (r.source_count * 37)::text, '0.001', 'PASS', b.t3 + interval '30 seconds'),
          (b.stage >= 6 AND r.status <> 'PUBLISHED', 'TARGET', 'TARGET_COUNT', r.source_count::text, r.target_count::text, '0',
           CASE WHEN r.status = 'FAILED_TARGET_VALIDATION' THEN 'FAIL' ELSE 'PASS' END, b.t7 - interval '10 seconds')
        ) m(wanted, stage, name, expected, actual, tolerance, result, at)
       WHERE m.wanted`,
    );

    // every extraction that completed called for its validation (ACKED once it started; the one still waiting
    // was just sent), a failed partition was reissued once (and a few of those calls died), and the calls of the
    // runs that ended were left with nothing undelivered
    await timed(
      sql,
      steps,
      'load_dispatch',
      `
      INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, partition_id, status, attempt_count,
          next_attempt_at, last_http_status, last_error, created_at, sent_at, acked_at, dead_at)
      SELECT gen_random_uuid(), b.run_id, 'VALIDATE_RUN', NULL, CASE WHEN b.stage >= 3 THEN 'ACKED' ELSE 'SENT' END, 1,
             CASE WHEN b.stage >= 3 THEN b.t2 ELSE now() + interval '30 seconds' END, 202, NULL, b.t2,
             CASE WHEN b.stage >= 3 THEN b.t2 + interval '1 second' ELSE now() - interval '30 seconds' END,
             CASE WHEN b.stage >= 3 THEN b.t3 END, NULL
        FROM bench_plan b WHERE b.stage >= 2
      UNION ALL
      SELECT gen_random_uuid(), p.run_id, 'REISSUE_PARTITION', p.partition_id, CASE WHEN b.h = 0 AND b.day_no % 4 = 0 THEN 'DEAD' ELSE 'ACKED' END,
             CASE WHEN b.h = 0 AND b.day_no % 4 = 0 THEN 20 ELSE 1 END, p.started_at + interval '19 minutes',
             CASE WHEN b.h = 0 AND b.day_no % 4 = 0 THEN 503 ELSE 202 END,
             CASE WHEN b.h = 0 AND b.day_no % 4 = 0 THEN 'no ack after 20 attempts (ack timeout)' END,
             p.started_at + interval '18 minutes', p.started_at + interval '19 minutes',
             CASE WHEN NOT (b.h = 0 AND b.day_no % 4 = 0) THEN p.started_at + interval '20 minutes' END,
             CASE WHEN b.h = 0 AND b.day_no % 4 = 0 THEN p.started_at + interval '25 minutes' END
        FROM nifi_ops.load_partition p JOIN bench_plan b USING (run_id)
       WHERE b.status = 'FAILED_EXTRACT' AND p.attempt_count = 2`,
    );

    await generateGate(sql, steps, days);

    const started = performance.now();
    for (const c of schema.constraints) await sql.query(`ALTER TABLE ${c.table} ADD CONSTRAINT ${c.name} ${c.definition}`);
    for (const index of schema.indexes) await sql.query(index.definition);
    steps.push({ step: 'primary keys and indexes', rows: 0, seconds: (performance.now() - started) / 1000 });
    const validated = performance.now();
    for (const fk of schema.foreignKeys) await sql.query(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${fk.name} ${fk.definition}`);
    steps.push({ step: 'foreign keys (validated)', rows: 0, seconds: (performance.now() - validated) / 1000 });
    const rebuilt = fingerprint(await ledgerSchema(sql));
    if (rebuilt !== fingerprint(schema))
      throw new Error(`the rebuilt keys and indexes differ from the migrated ones:\n${rebuilt}\n${fingerprint(schema)}`);
    const checked = performance.now();
    await checkConsistency(sql);
    steps.push({ step: 'consistency checks', rows: 0, seconds: (performance.now() - checked) / 1000 });
    const vacuumed = performance.now();
    await sql.query(`VACUUM (ANALYZE)`);
    steps.push({ step: 'VACUUM (ANALYZE)', rows: 0, seconds: (performance.now() - vacuumed) / 1000 });
    // what a later run with BENCH_HISTORY_DB reuses: the size of the history and how long it took to write
    await sql.query(`CREATE TABLE public.bench_history (days integer NOT NULL, generated_at timestamptz NOT NULL, steps jsonb NOT NULL)`);
    await sql.query(`INSERT INTO public.bench_history VALUES ($1, now(), $2)`, [days, JSON.stringify(steps)]);
    return steps;
  } finally {
    await sql.end();
  }
}

/**
 * Five external upstream jobs observed every business date (now and then a failed first attempt and a
 * second that succeeded; the last date's EXT_PRICING still running), eight consumers each needing two
 * Load Control jobs and two external ones, publishing every date their jobs all succeeded, and two gates
 * bound to Load Control jobs (JOB_098, JOB_099) whose publish claims carry the external evidence.
 */
async function generateGate(sql: pg.Client, steps: GenerationStep[], days: number): Promise<void> {
  await sql.query(`
    CREATE TEMP TABLE bench_ext AS
    SELECT e AS ext_no, (ARRAY['EXT_GL_BALANCES', 'EXT_FX_RATES', 'EXT_CRM_ACCOUNTS', 'EXT_HR_STAFF', 'EXT_PRICING'])[e + 1] AS job_id
      FROM generate_series(0, 4) e`);
  await timed(
    sql,
    steps,
    'gate_observation',
    `
    INSERT INTO nifi_ops.gate_observation (job_id, business_date, attempt, run_id, state, started_at, first_observed_at,
        observed_at, observed_by)
    SELECT x.job_id, x.business_date, a, 'EXT-' || x.job_id || '-' || x.business_date || '-' || a,
           CASE WHEN x.last_day AND x.ext_no = 4 THEN 'RUNNING' WHEN a < x.attempts THEN 'FAILED' ELSE 'SUCCEEDED' END,
           x.day_start - interval '3 hours' + (a - 1) * interval '1 hour',
           x.day_start - interval '3 hours' + (a - 1) * interval '1 hour' + interval '1 minute',
           x.day_start - interval '3 hours' + (a - 1) * interval '1 hour' + interval '20 minutes', 'ext-scheduler'
      FROM (SELECT e.ext_no, e.job_id, d = ${days - 1} AS last_day,
                   date_trunc('minute', now()) - interval '4 hours' - (${days} - 1 - d) * interval '1 day' AS day_start,
                   ((date_trunc('minute', now()) - interval '4 hours' - (${days} - 1 - d) * interval '1 day')::date - 1) AS business_date,
                   CASE WHEN (e.ext_no * 13 + d) % 50 = 0 THEN 2 ELSE 1 END AS attempts
              FROM bench_ext e CROSS JOIN generate_series(0, ${days - 1}) d) x
      CROSS JOIN LATERAL generate_series(1, x.attempts) a`,
  );
  await timed(
    sql,
    steps,
    'gate, gate_required_job',
    `
    INSERT INTO nifi_ops.gate (consumer, bound_job_key, defined_at, defined_by)
    SELECT 'MART_' || c, NULL, now() - ${days + 1} * interval '1 day', 'alice' FROM generate_series(0, 7) c
    UNION ALL SELECT 'JOB_098_GATE', 'JOB_098', now() - ${days + 1} * interval '1 day', 'alice'
    UNION ALL SELECT 'JOB_099_GATE', 'JOB_099', now() - ${days + 1} * interval '1 day', 'alice';
    INSERT INTO nifi_ops.gate_required_job (consumer, job_id)
    SELECT 'MART_' || c, j FROM generate_series(0, 7) c
      CROSS JOIN LATERAL unnest(ARRAY['JOB_' || lpad((11 + c * 10)::text, 3, '0'), 'JOB_' || lpad((12 + c * 10)::text, 3, '0'),
                                      (SELECT job_id FROM bench_ext WHERE ext_no = c % 5),
                                      (SELECT job_id FROM bench_ext WHERE ext_no = (c + 1) % 5)]) j
    UNION ALL SELECT 'JOB_098_GATE', unnest(ARRAY['EXT_GL_BALANCES', 'EXT_FX_RATES'])
    UNION ALL SELECT 'JOB_099_GATE', unnest(ARRAY['EXT_FX_RATES', 'EXT_HR_STAFF'])`,
  );
  // each upstream job's latest attempt for a date: Load Control's are its runs (one per job and date here)
  await sql.query(`
    CREATE TEMP TABLE bench_latest AS
    SELECT job_key AS job_id, business_key::date AS business_date, 1 AS attempt, run_id::text AS run_id,
           CASE WHEN status = 'SUCCESS' THEN 'SUCCEEDED' ELSE 'OTHER' END AS state, completed_at AS done_at
      FROM nifi_ops.load_run
    UNION ALL
    SELECT DISTINCT ON (job_id, business_date) job_id, business_date, attempt, run_id, state, observed_at
      FROM nifi_ops.gate_observation ORDER BY job_id, business_date, attempt DESC`);
  await timed(
    sql,
    steps,
    'gate_publication, gate_publication_evidence',
    `
    CREATE TEMP TABLE bench_published AS
    SELECT q.consumer, l.business_date, max(l.done_at) + interval '15 minutes' AS published_at
      FROM nifi_ops.gate_required_job q JOIN nifi_ops.gate g USING (consumer) JOIN bench_latest l ON l.job_id = q.job_id
     WHERE g.bound_job_key IS NULL
     GROUP BY q.consumer, l.business_date
    HAVING bool_and(l.state = 'SUCCEEDED') AND count(*) = (SELECT count(*) FROM nifi_ops.gate_required_job r WHERE r.consumer = q.consumer)
       AND max(l.done_at) + interval '15 minutes' < now();
    INSERT INTO nifi_ops.gate_publication (consumer, business_date, output, output_hash, published_by, published_at)
    SELECT consumer, business_date, o.output, encode(sha256(convert_to(o.output::text, 'UTF8')), 'hex'), 'mart-loader', published_at
      FROM bench_published
      CROSS JOIN LATERAL (SELECT jsonb_build_object('table', lower(consumer), 'partition', business_date::text) AS output) o;
    INSERT INTO nifi_ops.gate_publication_evidence (consumer, business_date, job_id, attempt, run_id)
    SELECT p.consumer, p.business_date, q.job_id, l.attempt, l.run_id
      FROM bench_published p JOIN nifi_ops.gate_required_job q USING (consumer)
      JOIN bench_latest l ON l.job_id = q.job_id AND l.business_date = p.business_date`,
  );
  await timed(
    sql,
    steps,
    'gate_publish_claim_evidence',
    `
    INSERT INTO nifi_ops.gate_publish_claim_evidence (run_id, job_id, consumer, business_date, publish_token, attempt,
        upstream_run_id, recorded_at)
    SELECT r.run_id, q.job_id, g.consumer, r.business_key::date, r.publish_token, l.attempt, l.run_id, r.publish_started_at
      FROM nifi_ops.load_run r JOIN nifi_ops.gate g ON g.bound_job_key = r.job_key
      JOIN nifi_ops.gate_required_job q ON q.consumer = g.consumer
      JOIN bench_latest l ON l.job_id = q.job_id AND l.business_date = r.business_key::date
     WHERE r.publish_token IS NOT NULL`,
  );
}

/** What a real ledger never shows; a generator bug would make the measurements meaningless. */
async function checkConsistency(sql: pg.Client): Promise<void> {
  const checks: Array<[string, string]> = [
    [
      'an ended run with unfinished partitions',
      `
      SELECT count(*) FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r USING (run_id)
       WHERE p.status IN ('PENDING', 'RUNNING', 'RETRY') AND NOT r.status = ANY($1::text[])`,
    ],
    [
      'an ended run with undelivered dispatches',
      `
      SELECT count(*) FROM nifi_ops.load_dispatch d JOIN nifi_ops.load_run r USING (run_id)
       WHERE d.status IN ('PENDING', 'SENT') AND NOT r.status = ANY($1::text[])`,
    ],
    [
      "counters that are not the partitions' sums",
      `
      SELECT count(*) FROM nifi_ops.load_run r
        JOIN (SELECT run_id, count(*) FILTER (WHERE status = 'SUCCESS') AS n, COALESCE(sum(actual_row_count), 0) AS rows
                FROM nifi_ops.load_partition GROUP BY run_id) s USING (run_id)
       WHERE r.success_partition_count <> s.n OR r.extracted_count <> s.rows`,
    ],
    [
      'a partition whose files do not add up',
      `
      SELECT count(*) FROM nifi_ops.load_partition p
        LEFT JOIN (SELECT run_id, partition_id, count(*) AS n, sum(record_count) AS rows FROM nifi_ops.load_file GROUP BY 1, 2) f
          USING (run_id, partition_id)
       WHERE p.received_chunks <> COALESCE(f.n, 0) OR p.received_rows <> COALESCE(f.rows, 0)`,
    ],
    [
      'a completed extraction whose rows differ from the source',
      `
      SELECT count(*) FROM nifi_ops.load_run WHERE extract_completed_at IS NOT NULL AND extracted_count <> source_count`,
    ],
    [
      'a run cleaned before its retention',
      `
      SELECT count(*) FROM nifi_ops.load_run
       WHERE cleaned_at < completed_at + CASE WHEN status = 'SUCCESS' THEN interval '3 days' ELSE interval '14 days' END`,
    ],
  ];
  for (const [what, query] of checks) {
    const { rows } = await sql.query<{ count: string }>(query, query.includes('$1') ? [ACTIVE_RUN_STATUSES] : []);
    if (Number(rows[0]!.count) > 0) throw new Error(`generated history is inconsistent: ${rows[0]!.count} × ${what}`);
  }
}

export interface TableSize {
  table: string;
  rows: number;
  tableBytes: number;
  indexBytes: number;
}

/** Rows (exact) and on-disk sizes (heap + TOAST, and indexes) of the ledger and gate tables. */
export async function tableSizes(url: string): Promise<TableSize[]> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const sizes: TableSize[] = [];
    for (const table of TABLES) {
      const { rows } = await sql.query<{ rows: string; table_bytes: string; index_bytes: string }>(`
        SELECT (SELECT count(*) FROM nifi_ops.${table}) AS rows, pg_table_size('nifi_ops.${table}') AS table_bytes,
               pg_indexes_size('nifi_ops.${table}') AS index_bytes`);
      sizes.push({
        table,
        rows: Number(rows[0]!.rows),
        tableBytes: Number(rows[0]!.table_bytes),
        indexBytes: Number(rows[0]!.index_bytes),
      });
    }
    return sizes;
  } finally {
    await sql.end();
  }
}

/**
 * Moves the active runs of a reused database (BENCH_HISTORY_DB) forward to now, as if they had been generated a
 * moment ago: their rows would otherwise have gone stale and the sweeper would time them out mid-benchmark.
 */
export async function freshenActiveRuns(url: string): Promise<void> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    await sql.query('BEGIN');
    // the RUNNING partitions' heartbeats were generated 10 s before the generation's now
    const { rows } = await sql.query<{ shift: string | null }>(`
      SELECT GREATEST(interval '0', date_trunc('second', now()) - interval '10 seconds' - max(heartbeat_at))::text AS shift
        FROM nifi_ops.load_partition WHERE status = 'RUNNING'`);
    const shift = rows[0]?.shift;
    if (shift) {
      const active = `(SELECT run_id FROM nifi_ops.load_run WHERE status = ANY($1::text[]))`;
      const params = [ACTIVE_RUN_STATUSES, shift];
      await sql.query(
        `
        UPDATE nifi_ops.load_run SET started_at = started_at + $2::interval, heartbeat_at = heartbeat_at + $2::interval,
               extract_completed_at = extract_completed_at + $2::interval, publish_started_at = publish_started_at + $2::interval,
               published_at = published_at + $2::interval
         WHERE run_id IN ${active}`,
        params,
      );
      await sql.query(
        `
        UPDATE nifi_ops.load_partition SET created_at = created_at + $2::interval, started_at = started_at + $2::interval,
               heartbeat_at = heartbeat_at + $2::interval, completed_at = completed_at + $2::interval
         WHERE run_id IN ${active}`,
        params,
      );
      await sql.query(
        `
        UPDATE nifi_ops.load_dispatch SET created_at = created_at + $2::interval, sent_at = sent_at + $2::interval,
               next_attempt_at = next_attempt_at + $2::interval, acked_at = acked_at + $2::interval
         WHERE run_id IN ${active}`,
        params,
      );
    }
    await sql.query('COMMIT');
  } finally {
    await sql.end();
  }
}
