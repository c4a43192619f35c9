// What must hold at the end whatever the faults did: SQL over the nifi_ops tables, each answering how many
// things it checked and which of them violate it; then what the clients were told, from the ledger.
import type pg from 'pg';
import { ACTIVE_RUN_STATUSES, TERMINAL_RUN_STATUSES } from '../src/domain/states.js';
import type { ClientStats } from './client.js';
import type { Ledger } from './ledger.js';
import type { ReceiverStats } from './receiver.js';

export interface InvariantResult {
  name: string;
  checked: number;
  violations: string[];
}

interface SqlInvariant {
  name: string;
  /** One row per thing checked: `subject` names it, `violation` is null when it holds. */
  sql: string;
  params?: unknown[];
}

const SQL_INVARIANTS: SqlInvariant[] = [
  {
    name: 'runs_ended_or_alerted',
    // an active run must carry an alert: the sweeper's stale alert for its current status, PUBLISH_UNKNOWN
    // (an alert for as long as it lasts), or a dead dispatch
    sql: `
      SELECT r.run_id::text AS subject,
             CASE WHEN r.status = ANY($1::text[]) THEN NULL
                  WHEN r.status = 'PUBLISH_UNKNOWN' THEN NULL
                  WHEN EXISTS (SELECT 1 FROM nifi_ops.load_dispatch d WHERE d.run_id = r.run_id AND d.status = 'DEAD') THEN NULL
                  WHEN EXISTS (SELECT 1 FROM nifi_ops.load_event e WHERE e.run_id = r.run_id AND e.event_name = 'RUN_STALE_ALERT'
                                  AND e.details ->> 'status' = r.status) THEN NULL
                  ELSE 'active in ' || r.status || ' without an alert' END AS violation
        FROM nifi_ops.load_run r`,
    params: [TERMINAL_RUN_STATUSES],
  },
  {
    name: 'one_validate_run_per_extracted_run',
    sql: `
      SELECT r.run_id::text AS subject,
             CASE WHEN r.extract_completed_at IS NOT NULL AND d.n <> 1 THEN 'extracted, ' || d.n || ' VALIDATE_RUN dispatches'
                  WHEN r.extract_completed_at IS NULL AND d.n <> 0 THEN 'not extracted, ' || d.n || ' VALIDATE_RUN dispatches'
                  WHEN e.extracted > 1 THEN e.extracted || ' EXTRACT_VALIDATED events'
                  WHEN e.started > 1 THEN e.started || ' STAGE_VALIDATION_STARTED events' END AS violation
        FROM nifi_ops.load_run r
        CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM nifi_ops.load_dispatch
                             WHERE run_id = r.run_id AND dispatch_type = 'VALIDATE_RUN') d
        CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE event_name = 'EXTRACT_VALIDATED')::int AS extracted,
                                   count(*) FILTER (WHERE event_name = 'STAGE_VALIDATION_STARTED')::int AS started
                              FROM nifi_ops.load_event WHERE run_id = r.run_id) e`,
  },
  {
    name: 'success_partitions_complete',
    // the partition's WRITTEN chunks are exactly 0..n-1, all told the same chunk count n, rows = expected
    sql: `
      SELECT p.run_id || '/' || p.partition_id AS subject,
             CASE WHEN p.expected_row_count = 0 AND (f.written <> 0 OR p.actual_row_count <> 0) THEN 'empty partition with chunks'
                  WHEN p.expected_row_count = 0 THEN NULL
                  WHEN f.written = 0 THEN 'no chunks'
                  WHEN f.distinct_chunks <> f.written THEN 'duplicate chunk index'
                  WHEN f.lo <> 0 OR f.hi <> f.written - 1 THEN 'missing chunk: indexes ' || f.lo || '..' || f.hi || ' of ' || f.written
                  WHEN f.counts <> 1 OR f.told <> f.written THEN 'chunk count told ' || f.told || ', written ' || f.written
                  WHEN f.rows <> p.expected_row_count OR p.actual_row_count <> p.expected_row_count
                    THEN 'rows ' || f.rows || ' actual ' || p.actual_row_count || ' expected ' || p.expected_row_count
                  WHEN p.file_count <> f.written THEN 'file_count ' || p.file_count || ' written ' || f.written END AS violation
        FROM nifi_ops.load_partition p
        CROSS JOIN LATERAL (
          SELECT count(*)::int AS written, count(DISTINCT chunk_index)::int AS distinct_chunks, min(chunk_index) AS lo,
                 max(chunk_index) AS hi, count(DISTINCT fragment_count)::int AS counts, max(fragment_count) AS told,
                 COALESCE(sum(record_count), 0) AS rows
            FROM nifi_ops.load_file WHERE run_id = p.run_id AND partition_id = p.partition_id AND status = 'WRITTEN') f
       WHERE p.status = 'SUCCESS'`,
  },
  {
    name: 'success_partitions_single_owner',
    // PG-20 names each file after its owner's claim token: a SUCCESS partition's files are one owner's
    sql: `
      SELECT p.run_id || '/' || p.partition_id AS subject,
             CASE WHEN count(DISTINCT substring(f.hdfs_path FROM '/part-[0-9A-Z]+-([0-9a-f]{8})-[0-9]+[.]parquet$')) > 1
                  THEN 'chunks of ' || count(DISTINCT substring(f.hdfs_path FROM '/part-[0-9A-Z]+-([0-9a-f]{8})-[0-9]+[.]parquet$')) || ' owners' END AS violation
        FROM nifi_ops.load_partition p
        LEFT JOIN nifi_ops.load_file f ON f.run_id = p.run_id AND f.partition_id = p.partition_id AND f.status = 'WRITTEN'
       WHERE p.status = 'SUCCESS'
       GROUP BY p.run_id, p.partition_id`,
  },
  {
    name: 'extracted_equals_source',
    sql: `
      SELECT r.run_id::text AS subject,
             CASE WHEN r.extracted_count <> r.source_count THEN 'extracted ' || r.extracted_count || ' source ' || r.source_count
                  WHEN p.not_success > 0 THEN p.not_success || ' partitions not SUCCESS'
                  WHEN p.rows <> r.source_count THEN 'partition rows ' || p.rows || ' source ' || r.source_count
                  WHEN f.rows <> r.source_count THEN 'written chunk rows ' || f.rows || ' source ' || r.source_count END AS violation
        FROM nifi_ops.load_run r
        CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE status <> 'SUCCESS')::int AS not_success,
                                   COALESCE(sum(actual_row_count), 0) AS rows
                              FROM nifi_ops.load_partition WHERE run_id = r.run_id) p
        CROSS JOIN LATERAL (SELECT COALESCE(sum(record_count), 0) AS rows FROM nifi_ops.load_file
                             WHERE run_id = r.run_id AND status = 'WRITTEN') f
       WHERE r.extract_completed_at IS NOT NULL`,
  },
  {
    name: 'success_counts_agree',
    sql: `
      SELECT run_id::text AS subject,
             CASE WHEN staging_count IS DISTINCT FROM extracted_count OR target_count IS DISTINCT FROM staging_count
                  THEN 'source ' || source_count || ' extracted ' || extracted_count || ' staging ' || COALESCE(staging_count::text, 'null')
                       || ' target ' || COALESCE(target_count::text, 'null') END AS violation
        FROM nifi_ops.load_run WHERE status = 'SUCCESS'`,
  },
  {
    name: 'one_publish_owner_per_run',
    sql: `
      SELECT r.run_id::text AS subject,
             CASE WHEN e.starts > 1 THEN e.starts || ' PUBLISH_STARTED events'
                  WHEN r.publish_token IS NOT NULL AND e.starts <> 1 THEN 'publish token without PUBLISH_STARTED'
                  WHEN e.starts = 1 AND e.token IS DISTINCT FROM r.publish_token::text THEN 'PUBLISH_STARTED for another token'
                  WHEN r.publish_token IS NULL AND r.published_at IS NOT NULL THEN 'published without a publish token' END AS violation
        FROM nifi_ops.load_run r
        CROSS JOIN LATERAL (SELECT count(*)::int AS starts, max(details ->> 'publishToken') AS token FROM nifi_ops.load_event
                             WHERE run_id = r.run_id AND event_name = 'PUBLISH_STARTED') e`,
  },
  {
    name: 'cleaned_runs_ended',
    // PG-70 may record the cleanup of an ended run only
    sql: `
      SELECT run_id::text AS subject, CASE WHEN NOT (status = ANY($1::text[])) THEN 'cleaned while ' || status END AS violation
        FROM nifi_ops.load_run WHERE cleaned_at IS NOT NULL`,
    params: [TERMINAL_RUN_STATUSES],
  },
  {
    name: 'no_file_recorded_twice',
    sql: `
      SELECT hdfs_path AS subject,
             CASE WHEN count(*) > 1 THEN count(*) || ' rows for one path' END AS violation
        FROM nifi_ops.load_file GROUP BY hdfs_path
      UNION ALL
      SELECT run_id || '/' || partition_id || '/' || chunk_index, CASE WHEN count(*) > 1 THEN count(*) || ' rows for one chunk' END
        FROM nifi_ops.load_file GROUP BY run_id, partition_id, chunk_index`,
  },
  {
    name: 'gated_publications_have_evidence',
    // every publication, and every publish claim of a gated run, names exactly the gate's required jobs,
    // each by an attempt that succeeded (an external observation, or a Load Control run that succeeded)
    sql: `
      WITH required AS (SELECT consumer, array_agg(job_id ORDER BY job_id) AS jobs FROM nifi_ops.gate_required_job GROUP BY consumer),
      upstream_ok AS (
        SELECT job_id, business_date, attempt, run_id FROM nifi_ops.gate_observation WHERE state = 'SUCCEEDED'
      )
      SELECT 'publication ' || p.consumer || ' ' || p.business_date AS subject,
             CASE WHEN ev.jobs IS DISTINCT FROM q.jobs THEN 'evidence for ' || COALESCE(array_to_string(ev.jobs, ','), 'nothing')
                       || ', required ' || array_to_string(q.jobs, ',')
                  WHEN ev.unproven > 0 THEN ev.unproven || ' evidence rows without a successful attempt' END AS violation
        FROM nifi_ops.gate_publication p
        JOIN required q ON q.consumer = p.consumer
        CROSS JOIN LATERAL (
          SELECT array_agg(e.job_id ORDER BY e.job_id) AS jobs,
                 count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM upstream_ok o WHERE o.job_id = e.job_id AND o.business_date = e.business_date
                                                       AND o.attempt = e.attempt AND o.run_id = e.run_id)
                                    AND NOT EXISTS (SELECT 1 FROM nifi_ops.load_run r WHERE r.run_id::text = e.run_id AND r.job_key = e.job_id
                                                       AND r.business_key = e.business_date::text AND r.status = 'SUCCESS'))::int AS unproven
            FROM nifi_ops.gate_publication_evidence e WHERE e.consumer = p.consumer AND e.business_date = p.business_date) ev
      UNION ALL
      SELECT 'publish claim of run ' || r.run_id,
             CASE WHEN ev.jobs IS DISTINCT FROM q.jobs THEN 'evidence for ' || COALESCE(array_to_string(ev.jobs, ','), 'nothing')
                       || ', required ' || array_to_string(q.jobs, ',')
                  WHEN ev.other_token > 0 THEN 'evidence stored under another publish token'
                  WHEN ev.unproven > 0 THEN ev.unproven || ' evidence rows without a successful attempt' END
        FROM nifi_ops.load_run r
        JOIN nifi_ops.gate g ON g.bound_job_key = r.job_key
        JOIN required q ON q.consumer = g.consumer
        CROSS JOIN LATERAL (
          SELECT array_agg(e.job_id ORDER BY e.job_id) AS jobs,
                 count(*) FILTER (WHERE e.publish_token IS DISTINCT FROM r.publish_token)::int AS other_token,
                 count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM upstream_ok o WHERE o.job_id = e.job_id AND o.business_date = e.business_date
                                                       AND o.attempt = e.attempt AND o.run_id = e.upstream_run_id))::int AS unproven
            FROM nifi_ops.gate_publish_claim_evidence e WHERE e.run_id = r.run_id) ev
       WHERE r.publish_token IS NOT NULL`,
  },
];

export async function checkDatabase(db: pg.Pool): Promise<InvariantResult[]> {
  const results: InvariantResult[] = [];
  for (const invariant of SQL_INVARIANTS) {
    const { rows } = await db.query<{ subject: string; violation: string | null }>(invariant.sql, invariant.params ?? []);
    results.push({
      name: invariant.name,
      checked: rows.length,
      violations: rows.filter((r) => r.violation !== null).map((r) => `${r.subject}: ${r.violation}`),
    });
  }
  return results;
}

/** What the clients saw, against the database where the database can say. */
export async function checkClients(db: pg.Pool, ledger: Ledger, client: ClientStats, receiver: ReceiverStats): Promise<InvariantResult[]> {
  const { rows: extracted } = await db.query<{ run_id: string; extracted: boolean; publish_token: string | null }>(
    'SELECT run_id::text, extract_completed_at IS NOT NULL AS extracted, publish_token::text FROM nifi_ops.load_run',
  );
  const byId = new Map(extracted.map((r) => [r.run_id, r]));
  const runs = [...ledger.runs.values()];
  const active = new Set<string>(ACTIVE_RUN_STATUSES);
  const terminal = new Set<string>(TERMINAL_RUN_STATUSES);
  const keys = [...ledger.keys.entries()];
  return [
    {
      name: 'no_server_errors',
      checked: client.requests,
      violations: client.serverErrors.map(
        (e) => `${e.operation}: HTTP ${e.status} ${e.code ?? ''} ${e.message ?? ''} (request ${e.requestId ?? '?'})`,
      ),
    },
    {
      // at most once, and only for an extracted run; none at all is possible: the API died, or its connection
      // was terminated, after the deciding commit and before the answer went out (the retry is a replay)
      name: 'validation_scheduled_answered_at_most_once',
      checked: runs.length,
      violations: runs.flatMap((r) => {
        const most = byId.get(r.runId)?.extracted ? 1 : 0;
        return r.validationScheduled <= most
          ? []
          : [`${r.runId}: ${r.validationScheduled} answers with validationScheduled, at most ${most} expected`];
      }),
    },
    {
      name: 'publish_claimed_by_one_token',
      checked: runs.length,
      violations: runs.flatMap((r) => {
        const stored = byId.get(r.runId)?.publish_token ?? null;
        if (r.publishClaims.size > 1) return [`${r.runId}: ${r.publishClaims.size} tokens were told claimed=true`];
        if (r.publishClaims.size === 1 && !r.publishClaims.has(stored ?? ''))
          return [`${r.runId}: the claimed token is not the stored one`];
        return [];
      }),
    },
    {
      // refused as CLAIM_MISMATCH; or, when the run ended meanwhile (another partition failed it), the soft 200 a
      // report after the run's end gets (ref §4.3), which counts nothing
      name: 'late_reports_rejected',
      checked: ledger.lateReports.length,
      violations: ledger.lateReports
        .filter((l) => l.code !== 'CLAIM_MISMATCH' && !(l.status === 200 && terminal.has(l.runStatus ?? '')))
        .map((l) => `${l.runId}/${l.partitionId}: ${l.status} ${l.code ?? ''} ${l.runStatus ?? ''}`),
    },
    {
      name: 'stalled_owners_replaced',
      checked: ledger.lateReports.length + ledger.notReissued.length,
      violations: ledger.notReissued.map((p) => `${p}: still owned by the stalled worker after 30 s`),
    },
    {
      name: 'publication_written_once',
      checked: ledger.publications.size,
      violations: [...ledger.publications.entries()]
        .filter(([, n]) => n !== 1)
        .map(([k, n]) => `${k}: ${n} publishers were told published=true`),
    },
    {
      name: 'cleanup_recorded_once',
      checked: ledger.cleaned.length,
      violations: [...new Set(ledger.cleaned)]
        .filter((runId) => ledger.cleaned.filter((r) => r === runId).length > 1)
        .map((runId) => `${runId}: recordCleanup answered changed=true more than once`),
    },
    {
      name: 'business_keys_settled',
      checked: keys.length,
      violations: keys
        .filter(([, k]) => k.outcome === 'NOT_STARTED' || k.outcome === 'UNFINISHED' || active.has(k.outcome))
        .map(([i, k]) => `key ${i}: ${k.outcome} after ${k.runIds.length} runs`),
    },
    {
      name: 'flows_completed',
      checked: runs.length,
      violations: ledger.abandonedFlows,
    },
    {
      name: 'receiver_calls_well_formed',
      checked: receiver.calls,
      violations: receiver.malformed,
    },
  ];
}
