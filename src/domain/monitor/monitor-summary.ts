import type { Config } from '../../config/config.js';
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { cleanupDue, type Retention } from '../cleanup/retention.js';
import { ALERT_KINDS, ALERT_SEVERITIES, type AlertKind, type AlertSeverity } from '../../config/alert-kinds.js';
import { PROCESS_ALERTS_SQL } from '../processes/processes.js';
import { runMovedAt, staleThresholds, type StaleThresholds } from '../runs/stale-runs.js';
import { deadlineMessage } from '../sweeper/observation-deadlines.js';
import { stalledRunAlerts } from './stalls.js';
import {
  ACTIVE_RUN_STATUSES,
  BACKLOG_DISPATCH_STATUSES,
  FAILED_RUN_STATUSES,
  RUN_STATUSES,
  parseRunStatus,
  type DispatchStatus,
  type RunStatus,
} from '../states.js';

const RECENT_WINDOW_HOURS = 24;
const MESSAGE_MAX = 500;
// An operator's cancellation is deliberate, not a failure to alert on.
const ALERTING_FAILED_STATUSES = FAILED_RUN_STATUSES.filter((s) => s !== 'CANCELLED');

/** The stale runs' thresholds (stale-runs.ts) but PUBLISH_UNKNOWN's: that is an ERROR alert of its own for as long as it lasts. */
function runStaleThresholds(recovery: StaleThresholds): Array<[RunStatus, number]> {
  return staleThresholds(recovery).filter(([status]) => status !== 'PUBLISH_UNKNOWN');
}

/** The thresholds alerts are judged by: the stale runs' (recovery.*) and the stalled runs' (monitor.stallAfter), in ms. */
export type AlertThresholds = StaleThresholds & { stallAfter: number };

export const alertThresholds = (config: Pick<Config, 'recovery' | 'monitor'>): AlertThresholds => ({
  ...config.recovery,
  stallAfter: config.monitor.stallAfter,
});

export interface MonitorSummaryQuery {
  alertLimit: number;
  recovery: AlertThresholds;
  retention: Retention;
  maxBatch: number;
}

export interface StatusCount<S extends RunStatus | DispatchStatus> {
  status: S;
  count: number;
}

export interface Alert {
  kind: AlertKind;
  severity: AlertSeverity;
  runId: string | null;
  jobKey: string | null;
  businessKey: string | null;
  status: RunStatus | null;
  at: Date | null;
  message: string | null;
  dispatchId: string | null;
  partitionId: string | null;
  /** The gate an alert is about: OBSERVATION_* (whose deadline passed) and a GATE_READY call's DISPATCH_DEAD. */
  consumer: string | null;
  /** The group of alerts with the same kind and cause (ALERT_GROUPED below): what an operator acknowledges or snoozes. */
  groupKey: string;
}

/** What a group's alerts have in common: the webhook receiver, the gate (consumer), the job, or the processes. */
export const ALERT_CAUSE_TYPES = ['RECEIVER', 'CONSUMER', 'JOB', 'PROCESSES'] as const;
type AlertCauseType = (typeof ALERT_CAUSE_TYPES)[number];

/** The alerts present now of one kind and one cause, however many there are, and what an operator said of them. */
export interface AlertGroup {
  groupKey: string;
  kind: AlertKind;
  /** ERROR when any of its alerts is. */
  severity: AlertSeverity;
  causeType: AlertCauseType;
  /** The receiver's name, the consumer, the job key; empty for the processes. */
  cause: string;
  count: number;
  firstAt: Date | null;
  lastAt: Date | null;
  /** Its newest alert. */
  latest: Alert;
  acknowledgement: { at: Date; by: string; note: string } | null;
  /** Its alerts the acknowledgement does not cover (all of them when never acknowledged): more than 0 re-raises it. */
  unacknowledgedCount: number;
  /** Present while the snooze lasts. */
  snooze: { until: Date; at: Date; by: string; note: string } | null;
}

export interface MonitorSummary {
  serverTime: Date;
  activeRuns: StatusCount<RunStatus>[];
  recentRuns: StatusCount<RunStatus>[];
  recentWindowHours: number;
  dispatches: StatusCount<DispatchStatus>[];
  cleanupDue: number;
  alerts: Alert[];
  /** Every group of the alerts present now (at most MAX_ALERT_GROUPS), snoozed ones included. */
  alertGroups: AlertGroup[];
}

const runStatusCounts = (rows: Array<{ status: string; count: number }>): StatusCount<RunStatus>[] =>
  rows
    .map((r) => ({ status: parseRunStatus(r.status), count: r.count }))
    .sort((a, b) => RUN_STATUSES.indexOf(a.status) - RUN_STATUSES.indexOf(b.status));

/** monitorSummary (ref §3.19): what is running, what ended lately, the outbox backlog and what needs a person. */
export async function monitorSummary(tx: Tx, query: MonitorSummaryQuery): Promise<MonitorSummary> {
  const [now] = await tx.$queryRaw<Array<{ server_time: Date }>>`SELECT clock_timestamp() AS server_time`;
  const window = `${RECENT_WINDOW_HOURS} hours`;
  const [activeRuns, recentRuns, dispatchRows, due, alerts, alertGroups] = await Promise.all([
    tx.$queryRaw<Array<{ status: string; count: number }>>`
      SELECT status, count(*)::int AS count FROM nifi_ops.load_run
       WHERE status = ANY(${ACTIVE_RUN_STATUSES}::text[]) GROUP BY status`,
    tx.$queryRaw<Array<{ status: string; count: number }>>`
      SELECT status, count(*)::int AS count FROM nifi_ops.load_run
       WHERE NOT status = ANY(${ACTIVE_RUN_STATUSES}::text[])
         -- the bound in a subquery: evaluated once, it is an index condition (ix_load_run_ended, migration
         -- 0013); clock_timestamp() itself is volatile, which no index scan may use, so this read every run
         AND COALESCE(completed_at, heartbeat_at) >= (SELECT clock_timestamp() - ${window}::interval)
       GROUP BY status`,
    tx.$queryRaw<Array<{ status: string; count: number }>>`
      SELECT status, count(*)::int AS count FROM nifi_ops.load_dispatch
       WHERE status = ANY(${BACKLOG_DISPATCH_STATUSES}::text[]) GROUP BY status`,
    tx.$queryRaw<Array<{ count: number }>>`
      SELECT count(*)::int AS count FROM (SELECT 1 FROM nifi_ops.load_run r WHERE ${cleanupDue(query.retention)} LIMIT ${query.maxBatch}) due`,
    listAlerts(tx, query, window),
    listAlertGroups(tx, query.recovery),
  ]);
  return {
    serverTime: now!.server_time,
    activeRuns: runStatusCounts(activeRuns),
    recentRuns: runStatusCounts(recentRuns),
    recentWindowHours: RECENT_WINDOW_HOURS,
    dispatches: BACKLOG_DISPATCH_STATUSES.map((status) => ({ status, count: dispatchRows.find((d) => d.status === status)?.count ?? 0 })),
    cleanupDue: due[0]!.count,
    alerts,
    alertGroups,
  };
}

/**
 * The `alerts` CTE: every alert kind as one UNION ALL (the processes' kinds are written beside the processes,
 * src/domain/processes/). Event-based kinds (CLEANUP_FAILED, DEPENDENCIES_NOT_READY, CHUNK_CONFLICT) look back
 * over the recent window and show the latest event per subject, and disappear once the subject moved on
 * (cleaned, or the refused step happened since). listAlerts orders them, ERROR before WARN, newest first.
 */
function alertsCte(recovery: AlertThresholds, window: string): Prisma.Sql {
  const thresholds = runStaleThresholds(recovery);
  return Prisma.sql`
    WITH thresholds AS (
      SELECT * FROM unnest(${thresholds.map(([s]) => s)}::text[], ${thresholds.map(([, ms]) => ms)}::double precision[])
          AS t(status, ms)
    ), stale AS (
      SELECT r.*, t.ms, ${runMovedAt} AS moved_at
        FROM nifi_ops.load_run r JOIN thresholds t ON t.status = r.status
       -- said again as a filter the planner can take to an index: through the join alone it reads every run
       -- (and estimates the partitions' subquery for each, which is what turns JIT compilation on)
       WHERE r.status = ANY(${thresholds.map(([s]) => s)}::text[])
    ), alerts AS (
      SELECT 'PUBLISH_UNKNOWN' AS kind, 'ERROR' AS severity, r.run_id, r.job_key, r.business_key, r.status,
             r.heartbeat_at AS at, r.error_message AS message, NULL::uuid AS dispatch_id, NULL::text AS partition_id,
             NULL::text AS consumer
        FROM nifi_ops.load_run r WHERE r.status = 'PUBLISH_UNKNOWN'
      UNION ALL
      -- a GATE_READY call has no run: its business date stands for the business key
      SELECT 'DISPATCH_DEAD', 'ERROR', r.run_id, r.job_key, COALESCE(r.business_key, to_char(d.business_date, 'YYYY-MM-DD')),
             r.status, d.dead_at,
             d.dispatch_type || COALESCE(' v' || d.readiness_version, '') || COALESCE(' to ' || d.receiver, '') || ': '
               || COALESCE(d.last_error, ''),
             d.dispatch_id, d.partition_id, d.consumer
        FROM nifi_ops.load_dispatch d LEFT JOIN nifi_ops.load_run r ON r.run_id = d.run_id WHERE d.status = 'DEAD'
      UNION ALL
      SELECT 'RUN_FAILED', 'ERROR', r.run_id, r.job_key, r.business_key, r.status, COALESCE(r.completed_at, r.heartbeat_at),
             concat_ws(' ', r.error_code, r.error_message), NULL, NULL, NULL
        FROM nifi_ops.load_run r
       WHERE r.status = ANY(${ALERTING_FAILED_STATUSES}::text[])
         AND COALESCE(r.completed_at, r.heartbeat_at) >= (SELECT clock_timestamp() - ${window}::interval)
      UNION ALL
      SELECT 'RUN_STALE', 'WARN', s.run_id, s.job_key, s.business_key, s.status, s.moved_at,
             'no progress in ' || s.status || ' since ' || to_char(s.moved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             NULL, NULL, NULL
        FROM stale s WHERE s.moved_at < clock_timestamp() - s.ms * interval '1 millisecond'
      UNION ALL
      SELECT * FROM (
        SELECT DISTINCT ON (e.run_id) 'CLEANUP_FAILED', 'WARN', r.run_id, r.job_key, r.business_key, NULL::text,
               e.event_time, e.message, NULL::uuid, NULL::text, NULL::text
          FROM nifi_ops.load_event e JOIN nifi_ops.load_run r ON r.run_id = e.run_id
         WHERE e.event_name = 'CLEANUP_FAILED' AND e.event_time >= clock_timestamp() - ${window}::interval
           AND r.cleaned_at IS NULL
         ORDER BY e.run_id, e.event_time DESC) cleanup_failed
      UNION ALL
      SELECT * FROM (
        SELECT DISTINCT ON (e.job_key, e.business_key) 'DEPENDENCIES_NOT_READY', 'WARN', e.run_id, e.job_key,
               e.business_key, r.status, e.event_time, e.message, NULL::uuid, NULL::text, NULL::text
          FROM nifi_ops.load_event e LEFT JOIN nifi_ops.load_run r ON r.run_id = e.run_id
         WHERE e.event_name = 'DEPENDENCIES_NOT_READY' AND e.event_time >= clock_timestamp() - ${window}::interval
         ORDER BY e.job_key, e.business_key, e.event_time DESC) gated
       -- until the refused step happened since (a run was started or began publishing), or the refused run ended
       WHERE NOT EXISTS (
               SELECT 1 FROM nifi_ops.load_run m
                WHERE m.job_key = gated.job_key AND m.business_key = gated.business_key
                  AND (m.started_at > gated.event_time OR m.publish_started_at > gated.event_time))
         AND (gated.run_id IS NULL OR gated.status = ANY(${ACTIVE_RUN_STATUSES}::text[]))
      UNION ALL
      SELECT * FROM (
        SELECT DISTINCT ON (e.run_id, e.partition_id) 'CHUNK_CONFLICT', 'WARN', e.run_id, r.job_key, r.business_key,
               r.status, e.event_time, e.message, NULL::uuid, e.partition_id, NULL::text
          FROM nifi_ops.load_event e LEFT JOIN nifi_ops.load_run r ON r.run_id = e.run_id
         WHERE e.event_name = 'CHUNK_CONFLICT' AND e.event_time >= clock_timestamp() - ${window}::interval
         ORDER BY e.run_id, e.partition_id, e.event_time DESC) conflicts
      UNION ALL
      ${stalledRunAlerts(recovery.stallAfter)}
      UNION ALL
      ${Prisma.raw(PROCESS_ALERTS_SQL)}
      UNION ALL
      -- an expected-by deadline the sweeper found passed (observation-deadlines.ts), until the job's latest
      -- attempt for the date succeeded
      SELECT c.outcome, 'WARN', NULL::uuid, c.job_id, to_char(c.business_date, 'YYYY-MM-DD'), NULL::text, c.deadline,
             ${deadlineMessage('c')}, NULL::uuid, NULL::text, c.consumer
        FROM nifi_ops.gate_deadline_check c
       WHERE c.outcome <> 'MET' AND c.checked_at >= (SELECT clock_timestamp() - ${window}::interval)
         AND NOT EXISTS (
               SELECT 1 FROM (SELECT a.state FROM nifi_ops.gate_attempts(ARRAY[c.job_id::text], c.business_date) a
                               ORDER BY a.attempt DESC, a.source LIMIT 1) latest
                WHERE latest.state = 'SUCCEEDED')
    )`;
}

/** The alerts present now, at most `limit`, ERROR before WARN and newest first: what the webhooks are sent for. */
export function readAlerts(tx: Tx, recovery: AlertThresholds, limit: number): Promise<Alert[]> {
  return listAlerts(tx, { alertLimit: limit, recovery }, `${RECENT_WINDOW_HOURS} hours`);
}

/**
 * The `grouped` CTE: every alert with its cause and group key, and `member`, the digest of its identity (the same
 * as the monitor feed's: a new `at` is a new alert) that an acknowledgement records. The cause: a DEAD
 * ALERT_WEBHOOK call's receiver (one broken receiver is one group however many webhooks die), else the gate an
 * alert names (a GATE_READY call, an expected-by deadline), else its job, else the processes (WORKER_STALE,
 * NO_DISPATCHER).
 */
export function groupedAlertsCte(recovery: AlertThresholds, window: string): Prisma.Sql {
  return Prisma.sql`
    ${alertsCte(recovery, window)}, caused AS (
      SELECT a.*, c.cause_type, c.cause
        FROM alerts a
        LEFT JOIN nifi_ops.load_dispatch d ON a.kind = 'DISPATCH_DEAD' AND d.dispatch_id = a.dispatch_id
        CROSS JOIN LATERAL (
          SELECT CASE WHEN d.dispatch_type = 'ALERT_WEBHOOK' THEN 'RECEIVER' WHEN a.consumer IS NOT NULL THEN 'CONSUMER'
                      WHEN a.job_key IS NOT NULL THEN 'JOB' ELSE 'PROCESSES' END AS cause_type,
                 CASE WHEN d.dispatch_type = 'ALERT_WEBHOOK' THEN d.receiver
                      ELSE COALESCE(a.consumer, a.job_key, '') END AS cause) c
    ), grouped AS (
      SELECT caused.*, kind || ':' || cause_type || ':' || cause AS group_key,
             md5(concat_ws('|', kind, run_id, dispatch_id, partition_id, job_key, business_key, consumer,
                           extract(epoch FROM at))) AS member
        FROM caused
    )`;
}

const ALERT_COLUMNS = Prisma.sql`kind, severity, run_id::text AS "runId", job_key AS "jobKey", business_key AS "businessKey",
           status, at, NULLIF(left(btrim(message), ${MESSAGE_MAX}), '') AS message, dispatch_id::text AS "dispatchId",
           partition_id AS "partitionId", consumer, group_key AS "groupKey"`;

type AlertRow = Omit<Alert, 'status'> & { status: string | null };
const toAlert = (a: AlertRow): Alert => ({ ...a, status: a.status === null ? null : parseRunStatus(a.status) });

/** At most this many groups: a cause per job, receiver and gate. */
export const MAX_ALERT_GROUPS = 200;

/** The groups of the alerts present now, ERROR before WARN, the latest first. */
async function listAlertGroups(tx: Tx, recovery: AlertThresholds): Promise<AlertGroup[]> {
  const rows = await tx.$queryRaw<
    Array<
      Omit<AlertGroup, 'latest' | 'acknowledgement' | 'snooze'> & {
        latest: AlertRow;
        acknowledgedAt: Date | null;
        acknowledgedBy: string | null;
        acknowledgedNote: string | null;
        snoozedUntil: Date | null;
        snoozedAt: Date | null;
        snoozedBy: string | null;
        snoozedNote: string | null;
      }
    >
  >`
    ${groupedAlertsCte(recovery, `${RECENT_WINDOW_HOURS} hours`)}, latest AS (
      SELECT DISTINCT ON (g.group_key) g.group_key, g.kind, g.cause_type, g.cause,
             count(*) OVER w AS count, min(g.at) OVER w AS first_at, max(g.at) OVER w AS last_at,
             bool_or(g.severity = 'ERROR') OVER w AS any_error,
             count(*) FILTER (WHERE ack.acknowledged_at IS NULL OR NOT g.member = ANY(ack.acknowledged_members)) OVER w
               AS unacknowledged,
             g.severity, g.run_id, g.job_key, g.business_key, g.status, g.at, g.message, g.dispatch_id, g.partition_id,
             g.consumer
        FROM grouped g LEFT JOIN nifi_ops.alert_group_ack ack ON ack.group_key = g.group_key
      WINDOW w AS (PARTITION BY g.group_key)
       ORDER BY g.group_key, g.at DESC NULLS LAST, g.run_id
    )
    SELECT l.group_key AS "groupKey", l.kind, CASE WHEN l.any_error THEN 'ERROR' ELSE 'WARN' END AS severity,
           l.cause_type AS "causeType", l.cause, l.count::int AS count, l.first_at AS "firstAt", l.last_at AS "lastAt",
           -- the newest alert, built for the groups only (not for every alert the window functions read)
           json_build_object('kind', l.kind, 'severity', l.severity, 'runId', l.run_id, 'jobKey', l.job_key,
                             'businessKey', l.business_key, 'status', l.status, 'at', l.at,
                             'message', NULLIF(left(btrim(l.message), ${MESSAGE_MAX}), ''), 'dispatchId', l.dispatch_id,
                             'partitionId', l.partition_id, 'consumer', l.consumer, 'groupKey', l.group_key) AS latest,
           l.unacknowledged::int AS "unacknowledgedCount",
           ack.acknowledged_at AS "acknowledgedAt", ack.acknowledged_by AS "acknowledgedBy",
           ack.acknowledged_note AS "acknowledgedNote",
           CASE WHEN ack.snoozed_until > clock_timestamp() THEN ack.snoozed_until END AS "snoozedUntil",
           ack.snoozed_at AS "snoozedAt", ack.snoozed_by AS "snoozedBy", ack.snoozed_note AS "snoozedNote"
      FROM latest l LEFT JOIN nifi_ops.alert_group_ack ack ON ack.group_key = l.group_key
     ORDER BY l.any_error DESC, l.last_at DESC NULLS LAST, l.group_key
     LIMIT ${MAX_ALERT_GROUPS}`;
  return rows.map((r) => ({
    groupKey: r.groupKey,
    kind: r.kind,
    severity: r.severity,
    causeType: r.causeType,
    cause: r.cause,
    count: r.count,
    firstAt: r.firstAt,
    lastAt: r.lastAt,
    latest: toAlert({ ...r.latest, at: r.latest.at === null ? null : new Date(r.latest.at) }),
    unacknowledgedCount: r.unacknowledgedCount,
    acknowledgement:
      r.acknowledgedAt && r.acknowledgedBy ? { at: r.acknowledgedAt, by: r.acknowledgedBy, note: r.acknowledgedNote ?? '' } : null,
    snooze:
      r.snoozedUntil && r.snoozedAt && r.snoozedBy
        ? { until: r.snoozedUntil, at: r.snoozedAt, by: r.snoozedBy, note: r.snoozedNote ?? '' }
        : null,
  }));
}

async function listAlerts(tx: Tx, query: Pick<MonitorSummaryQuery, 'alertLimit' | 'recovery'>, window: string): Promise<Alert[]> {
  const alerts = await tx.$queryRaw<AlertRow[]>`
    ${groupedAlertsCte(query.recovery, window)}
    SELECT ${ALERT_COLUMNS}
      FROM grouped
     ORDER BY severity = 'ERROR' DESC, at DESC NULLS LAST, kind, run_id
     LIMIT ${query.alertLimit}`;
  return alerts.map(toAlert);
}

/** How many alerts of each kind and severity there are now (lc_alerts): every kind, zeros included. */
export async function countAlerts(
  tx: Tx,
  recovery: AlertThresholds,
): Promise<Array<{ kind: AlertKind; severity: AlertSeverity; count: number }>> {
  const rows = await tx.$queryRaw<Array<{ kind: AlertKind; severity: AlertSeverity; count: number }>>`
    ${alertsCte(recovery, `${RECENT_WINDOW_HOURS} hours`)}
    SELECT kind, severity, count(*)::int AS count FROM alerts GROUP BY kind, severity`;
  return ALERT_KINDS.flatMap((kind) =>
    ALERT_SEVERITIES.map((severity) => ({
      kind,
      severity,
      count: rows.find((r) => r.kind === kind && r.severity === severity)?.count ?? 0,
    })),
  );
}
