// The LISTEN/NOTIFY channels of realtime; prisma/functions/04_realtime_notify.sql sends on them from triggers.

/** Payload: a run_id. Sent on commit of a run's transition, dispatch or metric change. */
export const RUN_CHANGED_CHANNEL = 'lc_run_changed';
/** Payload: a run_id. Claim and chunk progress, coalesced by the API and sent after those commits. */
export const RUN_PROGRESS_CHANNEL = 'lc_run_progress';
/** Payload: an event_id. Sent on commit of every WARN or ERROR event: the alert list may have changed. */
export const ALERT_CHANNEL = 'lc_alert';
