// Alert notifications (issue 17, point 3): every sweeper cycle of every worker reads the alerts present now,
// records each occurrence not seen before under its dedup key, and — in the same statement — puts one
// ALERT_WEBHOOK call per configured receiver into the outbox. The occurrence's primary key decides who saw it
// first: a second worker's INSERT … ON CONFLICT DO NOTHING waits for the first's commit and then records and
// enqueues nothing, so two workers side by side never post an occurrence twice.
import { createHash } from 'node:crypto';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { UNNOTIFIED_ALERT_KINDS, type AlertKind } from '../../config/alert-kinds.js';
import { readAlerts, type Alert, type AlertThresholds } from '../monitor/monitor-summary.js';

/** How many alerts one cycle looks at, ERROR before WARN and newest first: a bounded read and statement. */
export const NOTIFIED_ALERTS_PER_CYCLE = 500;

/** A configured receiver as the outbox knows it: its name, and the kinds it wants (null: every kind). */
export interface AlertReceiverSubscription {
  name: string;
  kinds: readonly AlertKind[] | null;
}

const iso = (at: Date | null) => (at ? new Date(at).toISOString() : '');

/**
 * What makes two reads of an alert the same occurrence: the kind, its subject and when this occurrence
 * began. A subject that clears and comes back begins again later, so it is a new occurrence; the kinds whose
 * `at` moves while the alert lasts (a newer event of the same streak) are keyed by what does not move.
 * `movedOn` is, for DEPENDENCIES_NOT_READY, when the job + business key last started a run or a publish:
 * the streak of refusals since then is one occurrence however often NiFi retries.
 */
function occurrenceIdentity(alert: Alert, movedOn: Date | null): string[] {
  switch (alert.kind) {
    // a run enters PUBLISH_UNKNOWN at most once, and ends failed once (states.ts)
    case 'PUBLISH_UNKNOWN':
    case 'RUN_FAILED':
      return [alert.kind, alert.runId ?? ''];
    // a resent dispatch that dies again has a new dead_at
    case 'DISPATCH_DEAD':
      return [alert.kind, alert.dispatchId ?? '', iso(alert.at)];
    // stale since it last moved: moving clears it, stopping again is a new moved-at
    case 'RUN_STALE':
      return [alert.kind, alert.runId ?? '', alert.status ?? '', iso(alert.at)];
    // lasts until the run is cleaned, which ends it for good; each retry's failure is the same occurrence
    case 'CLEANUP_FAILED':
      return [alert.kind, alert.runId ?? ''];
    case 'DEPENDENCIES_NOT_READY':
      return [alert.kind, alert.jobKey ?? '', alert.businessKey ?? '', iso(movedOn)];
    // silent since its longest silent partition last reported: a report ends it, silence again is a new one
    case 'STALLED_RUN':
      return [alert.kind, alert.runId ?? '', iso(alert.at)];
    // the partition's conflicts in the recent window: one occurrence
    case 'CHUNK_CONFLICT':
      return [alert.kind, alert.runId ?? '', alert.partitionId ?? ''];
    // the message names the instance and when it was last seen: beating again clears it
    case 'WORKER_STALE':
      return [alert.kind, iso(alert.at), alert.message ?? ''];
    // checked once per job and business date (gate_deadline_check's key)
    case 'OBSERVATION_MISSING':
    case 'OBSERVATION_LATE':
      return [alert.kind, alert.jobKey ?? '', alert.businessKey ?? ''];
    case 'NO_DISPATCHER':
      return [alert.kind, iso(alert.at)];
  }
}

/**
 * The occurrence's dedup key: its kind and a digest of its identity — ASCII whatever the job keys hold, so it
 * can travel as the Idempotency-Key header.
 */
function dedupKey(alert: Alert, movedOn: Date | null = null): string {
  const digest = createHash('sha256').update(occurrenceIdentity(alert, movedOn).join('\u001f')).digest('hex');
  return `${alert.kind}-${digest.slice(0, 40)}`;
}

/** For each job + business key refused by a gate: when it last started a run or a publish (null: never). */
async function lastMovedOn(tx: Tx, alerts: Alert[]): Promise<Map<string, Date>> {
  const gated = alerts.filter((a) => a.kind === 'DEPENDENCIES_NOT_READY' && a.jobKey !== null && a.businessKey !== null);
  if (gated.length === 0) return new Map();
  const rows = await tx.$queryRaw<Array<{ job_key: string; business_key: string; moved_on: Date | null }>>`
    SELECT g.job_key, g.business_key, max(GREATEST(r.started_at, r.publish_started_at)) AS moved_on
      FROM unnest(${gated.map((a) => a.jobKey)}::text[], ${gated.map((a) => a.businessKey)}::text[]) AS g(job_key, business_key)
      JOIN nifi_ops.load_run r ON r.job_key = g.job_key AND r.business_key = g.business_key
     GROUP BY g.job_key, g.business_key`;
  return new Map(rows.flatMap((r) => (r.moved_on ? [[`${r.job_key}\u001f${r.business_key}`, r.moved_on] as const] : [])));
}

export interface RecordedNotifications {
  /** Occurrences this call saw first. */
  recorded: Array<{ dedupKey: string; kind: AlertKind }>;
  /** The ALERT_WEBHOOK calls it put into the outbox. */
  enqueued: Array<{ dispatchId: string; receiver: string; dedupKey: string; kind: AlertKind }>;
  /** Receivers seen configured for the first time: the alerts present now are not sent to them. */
  newReceivers: string[];
}

/**
 * Records the occurrences among `alerts` that are new and enqueues one ALERT_WEBHOOK call per receiver that
 * wants the kind, in one statement. Left out: NO_DISPATCHER (UNNOTIFIED_ALERT_KINDS) and the DISPATCH_DEAD of
 * an ALERT_WEBHOOK call — a receiver that is down must not raise webhooks about itself, one per failed
 * webhook, without end; it shows in the console and in lc_alerts. A receiver registered by this call gets
 * nothing from it: what is present when it is first configured is its baseline, not news.
 */
export async function recordAlertOccurrences(
  tx: Tx,
  alerts: Alert[],
  receivers: readonly AlertReceiverSubscription[],
): Promise<RecordedNotifications> {
  if (receivers.length === 0) return { recorded: [], enqueued: [], newReceivers: [] };
  const notified = alerts.filter((a) => !UNNOTIFIED_ALERT_KINDS.includes(a.kind));
  const movedOn = await lastMovedOn(tx, notified);
  const keyed = new Map<string, Alert>();
  for (const alert of notified) {
    const key = dedupKey(alert, movedOn.get(`${alert.jobKey}\u001f${alert.businessKey}`) ?? null);
    if (!keyed.has(key)) keyed.set(key, alert);
  }
  const incoming = [...keyed.entries()];
  const column = <T>(pick: (a: Alert) => T) => incoming.map(([, a]) => pick(a));
  const [result] = await tx.$queryRaw<
    [{ new_receivers: string[]; recorded: RecordedNotifications['recorded']; enqueued: RecordedNotifications['enqueued'] }]
  >`
    WITH new_receivers AS (
      INSERT INTO nifi_ops.alert_receiver (name)
      SELECT unnest(${receivers.map((r) => r.name)}::text[])
      ON CONFLICT (name) DO NOTHING
      RETURNING name
    ), incoming AS (
      SELECT i.* FROM unnest(${incoming.map(([key]) => key)}::text[], ${column((a) => a.kind)}::text[],
                            ${column((a) => a.severity)}::text[], ${column((a) => a.runId)}::uuid[],
                            ${column((a) => a.jobKey)}::text[], ${column((a) => a.businessKey)}::text[],
                            ${column((a) => a.status)}::text[], ${column((a) => a.dispatchId)}::uuid[],
                            ${column((a) => a.partitionId)}::text[], ${column((a) => a.consumer)}::text[],
                            ${column((a) => a.message)}::text[], ${column((a) => a.at)}::timestamptz[])
          AS i(dedup_key, kind, severity, run_id, job_key, business_key, status, dispatch_id, partition_id, consumer,
               message, alert_at)
       WHERE NOT EXISTS (SELECT 1 FROM nifi_ops.load_dispatch d
                          WHERE i.kind = 'DISPATCH_DEAD' AND d.dispatch_id = i.dispatch_id AND d.dispatch_type = 'ALERT_WEBHOOK')
       -- the insertion order is the lock order of the keys: two workers inserting the same new occurrences
       -- wait for each other instead of deadlocking
       ORDER BY i.dedup_key
    ), recorded AS (
      INSERT INTO nifi_ops.alert_occurrence (dedup_key, kind, severity, run_id, job_key, business_key, status,
                                             dispatch_id, partition_id, consumer, message, alert_at)
      SELECT dedup_key, kind, severity, run_id, job_key, business_key, status, dispatch_id, partition_id, consumer,
             left(message, 2000), alert_at
        FROM incoming
      ON CONFLICT (dedup_key) DO NOTHING
      RETURNING dedup_key, kind
    ), enqueued AS (
      INSERT INTO nifi_ops.load_dispatch (dispatch_id, dispatch_type, receiver, alert_dedup_key)
      SELECT gen_random_uuid(), 'ALERT_WEBHOOK', r.name, o.dedup_key
        FROM recorded o
        JOIN unnest(${receivers.map((r) => r.name)}::text[], ${receivers.map((r) => r.kinds?.join(',') ?? null)}::text[])
             AS r(name, kinds)
          ON r.kinds IS NULL OR o.kind = ANY(string_to_array(r.kinds, ','))
       WHERE r.name NOT IN (SELECT name FROM new_receivers)
       ORDER BY r.name, o.dedup_key
      ON CONFLICT (receiver, alert_dedup_key) WHERE dispatch_type = 'ALERT_WEBHOOK' DO NOTHING
      RETURNING dispatch_id, receiver, alert_dedup_key
    )
    SELECT (SELECT COALESCE(array_agg(name ORDER BY name), '{}') FROM new_receivers) AS new_receivers,
           (SELECT COALESCE(json_agg(json_build_object('dedupKey', dedup_key, 'kind', kind) ORDER BY dedup_key), '[]')
              FROM recorded) AS recorded,
           (SELECT COALESCE(json_agg(json_build_object('dispatchId', e.dispatch_id, 'receiver', e.receiver,
                                                       'dedupKey', e.alert_dedup_key, 'kind', o.kind)
                                     ORDER BY e.receiver, e.alert_dedup_key), '[]')
              FROM enqueued e JOIN recorded o ON o.dedup_key = e.alert_dedup_key) AS enqueued`;
  return { recorded: result.recorded, enqueued: result.enqueued, newReceivers: result.new_receivers };
}

/**
 * Forgets occurrences raised before `before` whose calls are all done (ACKED, DEAD or CANCELLED), with those
 * calls; at most `limit` per call. An alert still present after that long is posted again, once.
 */
export async function forgetAlertOccurrences(tx: Tx, before: Date, limit: number): Promise<number> {
  const [row] = await tx.$queryRaw<[{ forgotten: number }]>`
    WITH old AS (
      SELECT o.dedup_key FROM nifi_ops.alert_occurrence o
       WHERE o.raised_at < ${before}::timestamptz
         AND NOT EXISTS (SELECT 1 FROM nifi_ops.load_dispatch d
                          WHERE d.dispatch_type = 'ALERT_WEBHOOK' AND d.alert_dedup_key = o.dedup_key
                            AND d.status IN ('PENDING', 'SENT'))
       ORDER BY o.raised_at
       LIMIT ${limit}::integer
         FOR UPDATE OF o SKIP LOCKED
    ), calls AS (
      DELETE FROM nifi_ops.load_dispatch d USING old
       WHERE d.dispatch_type = 'ALERT_WEBHOOK' AND d.alert_dedup_key = old.dedup_key
    ), gone AS (
      DELETE FROM nifi_ops.alert_occurrence o USING old WHERE o.dedup_key = old.dedup_key RETURNING 1
    )
    SELECT count(*)::int AS forgotten FROM gone`;
  return row.forgotten;
}

export const forgetAlertOccurrencesOperation = inOneTransaction((tx, { before, limit }: { before: Date; limit: number }) =>
  forgetAlertOccurrences(tx, before, limit),
);

/**
 * The alerts present now (NOTIFIED_ALERTS_PER_CYCLE of them at most), each occurrence not seen before recorded and
 * put into the outbox once per receiver; the dispatchers are woken for what was enqueued.
 */
export const notifyAlertsOperation = inOneTransaction(
  async (
    tx,
    input: { thresholds: AlertThresholds; receivers: readonly AlertReceiverSubscription[] },
    afterCommit,
  ): Promise<RecordedNotifications> => {
    const alerts = await readAlerts(tx, input.thresholds, NOTIFIED_ALERTS_PER_CYCLE);
    const recorded = await recordAlertOccurrences(tx, alerts, input.receivers);
    for (const call of recorded.enqueued) afterCommit.wakeDispatcher(call.dispatchId);
    return recorded;
  },
);
