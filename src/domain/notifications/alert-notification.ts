// What an ALERT_WEBHOOK call posts: the alert occurrence it was enqueued for (occurrences.ts), as generic JSON
// or as a Slack-style {text}, with the occurrence's dedup key as Idempotency-Key.
import { Prisma } from '../../generated/prisma/client.js';
import type { AlertKind, AlertSeverity } from '../../config/alert-kinds.js';

/** One alert occurrence, as every webhook and the API show it. */
export interface AlertNotification {
  dedupKey: string;
  kind: AlertKind;
  severity: AlertSeverity;
  message: string | null;
  runId: string | null;
  jobKey: string | null;
  businessKey: string | null;
  status: string | null;
  /** The dispatch a DISPATCH_DEAD is about (not the webhook's own call: that is X-Dispatch-Id). */
  dispatchId: string | null;
  partitionId: string | null;
  consumer: string | null;
  /** The alert's own time (when the dispatch died, the run stopped moving, …), ISO-8601 UTC. */
  at: string | null;
  /** When a sweeper first saw this occurrence, ISO-8601 UTC. */
  raisedAt: string;
}

const utc = (column: string) => Prisma.raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

/** An AlertNotification as SQL over the alias `o` (nifi_ops.alert_occurrence); null when `o` is. */
export const ALERT_NOTIFICATION_JSON = Prisma.sql`CASE WHEN o.dedup_key IS NOT NULL THEN jsonb_build_object(
  'dedupKey', o.dedup_key, 'kind', o.kind, 'severity', o.severity, 'message', o.message, 'runId', o.run_id,
  'jobKey', o.job_key, 'businessKey', o.business_key, 'status', o.status, 'dispatchId', o.dispatch_id,
  'partitionId', o.partition_id, 'consumer', o.consumer, 'at', ${utc('o.alert_at')}, 'raisedAt', ${utc('o.raised_at')}) END`;

/** A receiver of alerts.webhooks, as the dispatcher needs it. */
export interface AlertWebhookTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
  format: 'generic' | 'slack';
}

/**
 * The console's page of an alert's subject: its run, else its gate's readiness for the date (OBSERVATION_*) or the
 * gate, else its job's runs, else the dashboard. Null without the console's public URL (console.publicUrl).
 */
function consoleLink(consoleUrl: string | null, n: AlertNotification): string | null {
  if (consoleUrl === null) return null;
  const path = n.runId
    ? `/runs/${n.runId}`
    : n.consumer && n.kind.startsWith('OBSERVATION_') && n.businessKey
      ? `/readiness?${new URLSearchParams({ consumer: n.consumer, date: n.businessKey })}`
      : n.consumer
        ? `/gates/${encodeURIComponent(n.consumer)}`
        : n.jobKey
          ? `/jobs/${encodeURIComponent(n.jobKey)}`
          : '/';
  return `${consoleUrl}${path}`;
}

/** One line a person reads in a chat channel: severity, kind, what it is about, the message, the console's page. */
function slackText(n: AlertNotification, link: string | null): string {
  const about = [
    n.jobKey && `job ${n.jobKey}`,
    n.businessKey && `business key ${n.businessKey}`,
    n.runId && `run ${n.runId}`,
    n.partitionId && `partition ${n.partitionId}`,
    n.consumer && `gate ${n.consumer}`,
  ].filter(Boolean);
  const text = `[${n.severity}] ${n.kind}${about.length > 0 ? ` (${about.join(', ')})` : ''}: ${n.message ?? 'no message'} — raised ${n.raisedAt}`;
  return link === null ? text : `${text} — ${link}`;
}

/**
 * The POST for one ALERT_WEBHOOK call (the generic body: the occurrence and `link`, its console page): the receiver's own headers, then Content-Type, Idempotency-Key (the
 * occurrence's dedup key, the same on every retry: a receiver can drop the repeats of an at-least-once
 * delivery) and X-Dispatch-Id. The receiver's headers may be secrets: they go on the wire and nowhere else.
 */
export function alertWebhookRequest(
  target: AlertWebhookTarget,
  callId: string,
  n: AlertNotification,
  consoleUrl: string | null,
): { url: string; headers: Record<string, string>; body: Record<string, unknown> } {
  const link = consoleLink(consoleUrl, n);
  return {
    url: target.url,
    headers: { ...target.headers, 'Content-Type': 'application/json', 'Idempotency-Key': n.dedupKey, 'X-Dispatch-Id': callId },
    body: target.format === 'slack' ? { text: slackText(n, link) } : { ...n, link },
  };
}
