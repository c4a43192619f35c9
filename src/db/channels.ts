// The LISTEN/NOTIFY channels. Realtime's are sent by triggers (prisma/functions/04_realtime_notify.sql, and the gate's
// decisions by 05_gate_readiness.sql) and, for
// progress, after commit by the transaction helper (src/db/after-commit.ts), which also sends the dispatchers' wake-up.

/** Payload: a run_id. Sent on commit of a run's transition, dispatch or metric change. */
export const RUN_CHANGED_CHANNEL = 'lc_run_changed';
/** Payload: a run_id. Claim and chunk progress, coalesced by the API and sent after those commits. */
export const RUN_PROGRESS_CHANNEL = 'lc_run_progress';
/** Payload: an event_id. Sent on commit of every WARN or ERROR event: the alert list may have changed. */
export const ALERT_CHANNEL = 'lc_alert';
/** Payload: a run_id (or who woke it). An outbox row became due: the dispatchers look at once instead of at their next poll. */
export const DISPATCH_CHANNEL = 'load_dispatch';
/** Payload: "consumer businessDate". A readiness decision was recorded (prisma/functions/05_gate_readiness.sql). */
export const READINESS_CHANGED_CHANNEL = 'lc_readiness_changed';
