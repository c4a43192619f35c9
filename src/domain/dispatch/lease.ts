import type pg from 'pg';
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { asStatements, inOneTransaction } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { NIFI_DISPATCH_TYPES, type DispatchType } from '../states.js';
import { transitionDispatch } from '../transitions.js';
import type { DecisionEvidence } from '../gate/decisions.js';
import type { LeasedLineage } from '../lineage/run-event.js';
import { formatOfColumn, type GateReceiverFormat } from '../gate/receiver-formats.js';
import { ALERT_NOTIFICATION_JSON, type AlertNotification } from '../notifications/alert-notification.js';
import { DISPATCH_SUBJECTS, stillWaiting, type ConfiguredReceivers } from './waiting.js';

/** What a GATE_READY call delivers: one readiness decision, to the gate's receiver. */
export interface LeasedDecision {
  consumer: string;
  businessDate: string;
  version: number;
  ready: boolean;
  evidence: DecisionEvidence[];
  decidedAt: string;
  notifyUrl: string;
  format: GateReceiverFormat;
  /** The orchestrator's asset (receiver-formats.ts); null for GENERIC. */
  asset: string | null;
}

/** What an ALERT_WEBHOOK call delivers: one alert occurrence, to one receiver of alerts.webhooks. */
export interface LeasedAlert {
  receiver: string;
  occurrence: AlertNotification;
}

/** A call this worker now owns until the lease expires: the row stays PENDING, its attempt counted. */
export interface LeasedDispatch {
  dispatchId: string;
  /** Null for a GATE_READY call: it is about a gate's decision, which `decision` holds. */
  runId: string | null;
  dispatchType: DispatchType;
  partitionId: string | null;
  /** Attempts so far, this one included. */
  attempt: number;
  /** The due time the lease set (PostgreSQL's text, microseconds and all): it and `attempt` identify the lease. */
  leasedUntil: string;
  jobKey: string | null;
  businessKey: string | null;
  snapshotScn: string | null;
  hdfsRunPath: string | null;
  lowerBound: string | null;
  upperBound: string | null;
  upperInclusive: boolean | null;
  isNullPartition: boolean | null;
  expectedRowCount: string | null;
  decision: LeasedDecision | null;
  alert: LeasedAlert | null;
  /** A LINEAGE_EVENT call's facts about its run. */
  lineage: LeasedLineage | null;
  /** A START_LOAD call's backfill (its business key and job key are the date's and the backfill's). */
  backfillId: string | null;
}

export interface LeaseOptions extends ConfiguredReceivers {
  batch: number;
  leaseMs: number;
  /** nifi.receiverUrl is set: NiFi's calls are leased too. Without it they are left waiting, neither leased nor cancelled. */
  nifi: boolean;
}

export interface LeaseResult {
  leased: LeasedDispatch[];
  /** Due calls no longer wanted (their run moved on, their gate has no receiver): not leased, to be cancelled. */
  unwanted: string[];
}

interface LeaseRow {
  leased: boolean;
  dispatch_id: string;
  run_id: string | null;
  dispatch_type: DispatchType;
  partition_id: string | null;
  attempt_count: number;
  leased_until: string;
  job_key: string | null;
  business_key: string | null;
  snapshot_scn: string | null;
  hdfs_run_path: string | null;
  lower_bound: string | null;
  upper_bound: string | null;
  upper_inclusive: boolean | null;
  is_null_partition: boolean | null;
  expected_row_count: string | null;
  consumer: string | null;
  business_date: string | null;
  readiness_version: number | null;
  notify_url: string | null;
  notify_format: string | null;
  notify_asset: string | null;
  ready: boolean | null;
  evidence: DecisionEvidence[] | null;
  decided_at: string | null;
  receiver: string | null;
  alert: AlertNotification | null;
  lineage: LeasedLineage | null;
  backfill_id: string | null;
}

/** A LINEAGE_EVENT call's LeasedLineage, as SQL over the aliases `l` (its leased row) and `r` (its run). */
const LEASED_LINEAGE_JSON = Prisma.sql`CASE WHEN l.dispatch_type = 'LINEAGE_EVENT' THEN jsonb_build_object(
  'eventType', l.lineage_event_type,
  'eventTime', to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  'jobKey', r.job_key, 'businessKey', r.business_key, 'status', r.status, 'snapshotScn', r.snapshot_scn::text,
  'sourceCount', r.source_count, 'extractedCount', r.extracted_count, 'targetCount', r.target_count,
  'parameters', r.parameters, 'errorStage', r.error_stage, 'errorCode', r.error_code, 'errorMessage', r.error_message,
  'publishQueryId', r.publish_query_id, 'backfillId', r.backfill_id,
  'flowRegistry', r.flow_registry, 'flowBucket', r.flow_bucket, 'flowId', r.flow_id, 'flowVersion', r.flow_version,
  'validations', COALESCE((SELECT jsonb_agg(jsonb_build_object('stage', v.stage, 'metricName', v.metric_name, 'result', v.result)
                                    ORDER BY v.validation_id)
                             FROM nifi_ops.load_validation v WHERE v.run_id = l.run_id), '[]'::jsonb)) END`;

/**
 * The dispatcher's lease (ref §5.1), one statement committed before any HTTP call: due PENDING rows are
 * taken with SKIP LOCKED, their attempt counted and their due time pushed past the lease, so a crashed
 * worker's calls become due again for anyone. It is the dispatcher's hot path, so it runs on the pool;
 * due calls the run no longer waits for are reported, not leased, for cancelUnwantedDispatches. A worker
 * without NiFi's receiver (options.nifi false) takes only the gates', alerts' and lineage calls.
 */
export async function leaseDispatches(sql: pg.Pool, options: LeaseOptions): Promise<LeaseResult> {
  const query = Prisma.sql`
    WITH picked AS (
      SELECT d.dispatch_id, d.run_id, d.partition_id, ${stillWaiting(options)} AS wanted
        FROM nifi_ops.load_dispatch d ${DISPATCH_SUBJECTS}
       -- a sub-select is evaluated once, so the due time bounds the index scan
       WHERE d.status = 'PENDING' AND d.next_attempt_at <= (SELECT clock_timestamp())
         AND (${options.nifi}::boolean OR d.dispatch_type <> ALL(${NIFI_DISPATCH_TYPES}::text[]))
       ORDER BY d.next_attempt_at
       LIMIT ${options.batch}::integer
         FOR UPDATE OF d SKIP LOCKED
    ), leased AS (
      UPDATE nifi_ops.load_dispatch AS t
         SET attempt_count = t.attempt_count + 1,
             next_attempt_at = clock_timestamp() + make_interval(secs => ${options.leaseMs / 1000}::float8)
        FROM picked
       WHERE t.dispatch_id = picked.dispatch_id AND picked.wanted
      RETURNING t.dispatch_id, t.run_id, t.dispatch_type, t.partition_id, t.attempt_count, t.next_attempt_at,
                t.consumer, t.business_date, t.readiness_version, t.receiver, t.alert_dedup_key, t.lineage_event_type, t.created_at,
                t.backfill_id
    )
    SELECT true AS leased, l.dispatch_id::text, l.run_id::text, l.dispatch_type, l.partition_id, l.attempt_count,
           l.next_attempt_at::text AS leased_until, COALESCE(r.job_key, b.job_key) AS job_key,
           COALESCE(r.business_key, CASE WHEN l.backfill_id IS NOT NULL THEN to_char(l.business_date, 'YYYY-MM-DD') END) AS business_key, r.snapshot_scn::text, r.hdfs_run_path, p.lower_bound::text, p.upper_bound::text,
           p.upper_inclusive, p.is_null_partition, p.expected_row_count::text,
           l.consumer, to_char(l.business_date, 'YYYY-MM-DD') AS business_date, l.readiness_version, g.notify_url,
           g.notify_format, g.notify_asset,
           dec.ready, dec.evidence, to_char(dec.decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS decided_at,
           l.receiver, ${ALERT_NOTIFICATION_JSON} AS alert, ${LEASED_LINEAGE_JSON} AS lineage, l.backfill_id::text
      FROM leased l
      LEFT JOIN nifi_ops.load_run r ON r.run_id = l.run_id
      LEFT JOIN nifi_ops.load_partition p ON p.run_id = l.run_id AND p.partition_id = l.partition_id
      LEFT JOIN nifi_ops.gate g ON g.consumer = l.consumer
      LEFT JOIN nifi_ops.gate_readiness_decision dec
             ON dec.consumer = l.consumer AND dec.business_date = l.business_date AND dec.version = l.readiness_version
      LEFT JOIN nifi_ops.alert_occurrence o ON o.dedup_key = l.alert_dedup_key
      LEFT JOIN nifi_ops.load_backfill b ON b.backfill_id = l.backfill_id
    UNION ALL
    SELECT false, dispatch_id::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
      FROM picked WHERE NOT wanted`;
  const { rows } = await sql.query<LeaseRow>(query.text, query.values);
  return {
    leased: rows
      .filter((row) => row.leased)
      .map((l) => ({
        dispatchId: l.dispatch_id,
        runId: l.run_id,
        dispatchType: l.dispatch_type,
        partitionId: l.partition_id,
        attempt: l.attempt_count,
        leasedUntil: l.leased_until,
        jobKey: l.job_key,
        businessKey: l.business_key,
        snapshotScn: l.snapshot_scn,
        hdfsRunPath: l.hdfs_run_path,
        lowerBound: l.lower_bound,
        upperBound: l.upper_bound,
        upperInclusive: l.upper_inclusive,
        isNullPartition: l.is_null_partition,
        expectedRowCount: l.expected_row_count,
        decision:
          l.dispatch_type === 'GATE_READY'
            ? {
                consumer: l.consumer!,
                businessDate: l.business_date!,
                version: l.readiness_version!,
                ready: l.ready!,
                evidence: l.evidence!,
                decidedAt: l.decided_at!,
                notifyUrl: l.notify_url!,
                format: formatOfColumn(l.notify_format),
                asset: l.notify_asset,
              }
            : null,
        alert: l.dispatch_type === 'ALERT_WEBHOOK' ? { receiver: l.receiver!, occurrence: l.alert! } : null,
        lineage: l.lineage,
        backfillId: l.backfill_id,
      })),
    unwanted: rows.filter((row) => !row.leased).map((row) => row.dispatch_id),
  };
}

/**
 * Gives back leases of calls that were never sent (a stopping dispatcher): due at once for any worker, the
 * attempt uncounted. Only a row still as its lease left it: PENDING with the lease's attempt count and due
 * time (a lease that expired and was taken again moved both). Returns how many were released.
 */
export async function releaseLeases(
  sql: pg.Pool,
  leases: Array<Pick<LeasedDispatch, 'runId' | 'dispatchId' | 'attempt' | 'leasedUntil'>>,
  afterCommit: AfterCommit,
): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE nifi_ops.load_dispatch AS t
        SET attempt_count = t.attempt_count - 1, next_attempt_at = clock_timestamp()
       FROM unnest($1::uuid[], $2::integer[], $3::timestamptz[]) AS l(dispatch_id, attempt, leased_until)
      WHERE t.dispatch_id = l.dispatch_id AND t.status = 'PENDING'
        AND t.attempt_count = l.attempt AND t.next_attempt_at = l.leased_until`,
    [leases.map((l) => l.dispatchId), leases.map((l) => l.attempt), leases.map((l) => l.leasedUntil)],
  );
  // due again now: another worker's dispatcher takes them at once instead of at its next poll
  for (const lease of leases) afterCommit.wakeDispatcher(lease.runId ?? lease.dispatchId);
  return rowCount ?? 0;
}

export interface CancelledDispatch {
  dispatchId: string;
  runId: string | null;
  dispatchType: DispatchType;
  partitionId: string | null;
  reason: string;
}

/**
 * PENDING calls no longer wanted → CANCELLED, never sent: their run no longer waits for them (deviation 6), their
 * gate has no receiver any more, their alert receiver is no longer configured, or lineage was turned off.
 */
export async function cancelUnwantedDispatches(
  tx: Tx,
  dispatchIds: string[],
  actor: string,
  receivers: ConfiguredReceivers,
): Promise<CancelledDispatch[]> {
  const cancelled = await transitionDispatch<{
    dispatch_id: string;
    run_id: string | null;
    dispatch_type: DispatchType;
    partition_id: string | null;
    reason: string;
    gate: { consumer: string; businessDate: string; version: number } | null;
  }>(
    tx,
    {
      picked: Prisma.sql`SELECT d.dispatch_id,
                   CASE WHEN d.dispatch_type = 'ALERT_WEBHOOK' THEN 'the alert receiver ' || d.receiver || ' is not configured any more'
                        WHEN d.dispatch_type = 'LINEAGE_EVENT' THEN 'lineage is not enabled (lineage.enabled)'
                        WHEN d.dispatch_type = 'START_LOAD' THEN 'the backfill date no longer waits: ' || COALESCE(bd.status, 'gone')
                        WHEN d.run_id IS NULL THEN 'the gate ' || d.consumer || ' has no receiver any more'
                        ELSE 'run no longer waits: run ' || r.status || COALESCE(', partition ' || p.status, '') END AS reason
              FROM nifi_ops.load_dispatch d ${DISPATCH_SUBJECTS}
             WHERE d.dispatch_id = ANY(${dispatchIds}::uuid[]) AND d.status = 'PENDING' AND NOT ${stillWaiting(receivers)}
             ORDER BY d.dispatch_id
               FOR UPDATE OF d SKIP LOCKED`,
    },
    {
      from: ['PENDING'],
      to: 'CANCELLED',
      set: Prisma.sql`last_error = picked.reason`,
      returning: Prisma.sql`t.dispatch_id::text, t.run_id::text, t.dispatch_type, t.partition_id, picked.reason,
        CASE WHEN t.consumer IS NOT NULL THEN jsonb_build_object('consumer', t.consumer,
          'businessDate', to_char(t.business_date, 'YYYY-MM-DD'), 'version', t.readiness_version) END AS gate`,
      event: (c) => ({
        level: 'INFO',
        name: 'DISPATCH_CANCELLED',
        runId: c.run_id,
        partitionId: c.partition_id,
        actor,
        message: c.reason,
        details: { dispatchId: c.dispatch_id, type: c.dispatch_type, ...c.gate },
      }),
    },
  );
  return cancelled.map((c) => ({
    dispatchId: c.dispatch_id,
    runId: c.run_id,
    dispatchType: c.dispatch_type,
    partitionId: c.partition_id,
    reason: c.reason,
  }));
}

export const leaseDispatchesOperation = asStatements(leaseDispatches);
export const releaseLeasesOperation = asStatements(releaseLeases);
export const cancelUnwantedDispatchesOperation = inOneTransaction(
  (tx, input: { dispatchIds: string[]; actor: string; receivers: ConfiguredReceivers }) =>
    cancelUnwantedDispatches(tx, input.dispatchIds, input.actor, input.receivers),
);
