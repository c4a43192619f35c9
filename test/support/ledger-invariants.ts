// The exactly-once properties of extraction, checked on the ledger a test leaves behind: whatever interleaving the
// processes took, the rows must tell one consistent story. Each query returns the runs (or partitions) that break
// one property; a test asserts the whole list is empty, so a failure names the property and the rows.
import type pg from 'pg';

/** Statuses a run reaches only through a decided completion (the VALIDATE_RUN path), the failures after it included. */
const PAST_COMPLETION = [
  'EXTRACTED_VALIDATED',
  'STAGE_VALIDATING',
  'STAGING_VALIDATED',
  'PUBLISHING',
  'PUBLISHED',
  'SUCCESS',
  'FAILED_STAGE_VALIDATION',
  'FAILED_PUBLISH',
  'PUBLISH_UNKNOWN',
  'FAILED_TARGET_VALIDATION',
];

const PROPERTIES: Record<string, string> = {
  // the run's counters are the sum of its SUCCESS partitions: a lost update or a partition counted twice shows here
  'success counters equal the SUCCESS partitions': `
    SELECT r.run_id, r.status, r.success_partition_count, r.extracted_count, s.partitions, s.rows
      FROM nifi_ops.load_run r
      CROSS JOIN LATERAL (SELECT count(*) AS partitions, COALESCE(sum(p.actual_row_count), 0) AS rows
                            FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id AND p.status = 'SUCCESS') s
     WHERE r.expected_partition_count IS NOT NULL
       AND (r.success_partition_count <> s.partitions OR r.extracted_count <> s.rows)`,
  // completion is decided once: one EXTRACT_VALIDATED event at most
  'completion decided at most once': `
    SELECT run_id, count(*) AS decisions FROM nifi_ops.load_event
     WHERE event_name = 'EXTRACT_VALIDATED' GROUP BY run_id HAVING count(*) > 1`,
  // a decided completion had every partition SUCCESS and every source row extracted
  'a completed run has every partition SUCCESS and extracted = source': `
    SELECT r.run_id, r.status, r.extracted_count, r.source_count,
           (SELECT count(*) FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id AND p.status <> 'SUCCESS') AS not_success
      FROM nifi_ops.load_run r
     WHERE EXISTS (SELECT FROM nifi_ops.load_event e WHERE e.run_id = r.run_id AND e.event_name = 'EXTRACT_VALIDATED')
       AND (r.extracted_count <> r.source_count
            OR EXISTS (SELECT FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id AND p.status <> 'SUCCESS'))`,
  // a run past extraction got there through a decided completion, with its VALIDATE_RUN outbox row
  'a run past extraction has its decided completion': `
    SELECT r.run_id, r.status FROM nifi_ops.load_run r
     WHERE r.status = ANY($1::text[])
       AND (NOT EXISTS (SELECT FROM nifi_ops.load_event e WHERE e.run_id = r.run_id AND e.event_name = 'EXTRACT_VALIDATED')
            OR NOT EXISTS (SELECT FROM nifi_ops.load_dispatch d WHERE d.run_id = r.run_id AND d.dispatch_type = 'VALIDATE_RUN'))`,
  // completion is never lost: an EXTRACTING run whose partitions all succeeded with every row must have completed
  'no EXTRACTING run has every partition SUCCESS': `
    SELECT r.run_id, r.extracted_count, r.source_count FROM nifi_ops.load_run r
     WHERE r.status = 'EXTRACTING' AND r.expected_partition_count > 0
       AND NOT EXISTS (SELECT FROM nifi_ops.load_partition p WHERE p.run_id = r.run_id AND p.status <> 'SUCCESS')`,
  // each accepted success is counted once: a SUCCESS partition has one PARTITION_SUCCESS event, any other none (a
  // resumed run's carried partition: its event, like its files, is the run's that extracted it)
  'one PARTITION_SUCCESS event per SUCCESS partition': `
    SELECT p.run_id, p.partition_id, p.status, count(e.event_id) AS successes
      FROM nifi_ops.load_partition p
      LEFT JOIN nifi_ops.load_event e
        ON e.run_id = COALESCE(p.carried_from_run_id, p.run_id) AND e.partition_id = p.partition_id
       AND e.event_name = 'PARTITION_SUCCESS'
     GROUP BY p.run_id, p.partition_id, p.status
    HAVING count(e.event_id) <> CASE WHEN p.status = 'SUCCESS' THEN 1 ELSE 0 END`,
  // a SUCCESS partition's rows are its accepted chunks' rows (a reissue fails the earlier attempt's), each index once
  'a SUCCESS partition is the sum of its recorded chunks': `
    SELECT p.run_id, p.partition_id, p.actual_row_count, p.file_count, f.chunks, f.rows
      FROM nifi_ops.load_partition p
      CROSS JOIN LATERAL (SELECT count(DISTINCT chunk_index) AS chunks, COALESCE(sum(record_count), 0) AS rows
                            FROM nifi_ops.load_file
                           WHERE run_id = COALESCE(p.carried_from_run_id, p.run_id) AND partition_id = p.partition_id
                             AND status <> 'FAILED') f
     WHERE p.status = 'SUCCESS' AND (p.actual_row_count <> f.rows OR p.file_count <> f.chunks)`,
};

/** Every broken property with the rows that break it; empty when the ledger is consistent. */
export async function ledgerViolations(sql: pg.Pool): Promise<Array<{ property: string; rows: unknown[] }>> {
  const violations: Array<{ property: string; rows: unknown[] }> = [];
  for (const [property, query] of Object.entries(PROPERTIES)) {
    const { rows } = await sql.query(query, query.includes('$1') ? [PAST_COMPLETION] : []);
    if (rows.length > 0) violations.push({ property, rows });
  }
  return violations;
}
