// The alert kinds and severities the monitor summary computes (monitor-summary.ts): plain data, so that the
// configuration (alerts.webhooks[].kinds) can name them without loading the database layer.

export const ALERT_KINDS = [
  'PUBLISH_UNKNOWN',
  'DISPATCH_DEAD',
  'RUN_FAILED',
  'RUN_STALE',
  'STALLED_RUN',
  'CLEANUP_FAILED',
  'DEPENDENCIES_NOT_READY',
  'CHUNK_CONFLICT',
  'WORKER_STALE',
  'NO_DISPATCHER',
  'OBSERVATION_MISSING',
  'OBSERVATION_LATE',
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];
export const ALERT_SEVERITIES = ['ERROR', 'WARN'] as const;
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];

/**
 * Kinds no webhook is sent for. NO_DISPATCHER says that no dispatcher delivers the outbox, and a webhook is
 * delivered by a dispatcher through that outbox: it would arrive only once the alert had cleared. The
 * Prometheus rule LoadControlNoDispatcher (deploy/prometheus) is its notification.
 */
export const UNNOTIFIED_ALERT_KINDS: readonly AlertKind[] = ['NO_DISPATCHER'];
