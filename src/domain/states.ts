// The state machines of the ledger, as data. SQL and domain code take their status sets from here.

export const RUN_STATUSES = [
  'CREATED',
  'EXTRACTING',
  'EXTRACTED_VALIDATED',
  'STAGE_VALIDATING',
  'STAGING_VALIDATED',
  'PUBLISHING',
  'PUBLISHED',
  'SUCCESS',
  'FAILED_MANIFEST',
  'FAILED_EXTRACT',
  'FAILED_STAGE_VALIDATION',
  'FAILED_PUBLISH',
  'PUBLISH_UNKNOWN',
  'FAILED_TARGET_VALIDATION',
  'FAILED_SNAPSHOT_EXPIRED',
  'TIMED_OUT',
  'CANCELLED',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Active runs hold their job + business key (uq_load_run_active); PUBLISH_UNKNOWN stays active until resolved. */
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = [
  'CREATED',
  'EXTRACTING',
  'EXTRACTED_VALIDATED',
  'STAGE_VALIDATING',
  'STAGING_VALIDATED',
  'PUBLISHING',
  'PUBLISHED',
  'PUBLISH_UNKNOWN',
];

export const FAILED_RUN_STATUSES: readonly RunStatus[] = [
  'FAILED_MANIFEST',
  'FAILED_EXTRACT',
  'FAILED_STAGE_VALIDATION',
  'FAILED_PUBLISH',
  'FAILED_TARGET_VALIDATION',
  'FAILED_SNAPSHOT_EXPIRED',
  'TIMED_OUT',
  'CANCELLED',
];

/**
 * The failed statuses resumeRun takes: those a run reaches while extracting, when its manifest, its SCN and its
 * SUCCESS partitions are worth keeping. FAILED_MANIFEST has no manifest; FAILED_SNAPSHOT_EXPIRED's SCN is gone
 * from the undo; a run that failed after its extraction completed (staging, publish, target) has nothing left to
 * extract — each wants a new run. TIMED_OUT and CANCELLED qualify only while extraction had not completed.
 */
export const RESUMABLE_RUN_STATUSES: readonly RunStatus[] = ['FAILED_EXTRACT', 'TIMED_OUT', 'CANCELLED'];

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['SUCCESS', ...FAILED_RUN_STATUSES];

/** Every run transition the system may perform: [from, to]. */
export const RUN_TRANSITIONS: ReadonlyArray<readonly [RunStatus, RunStatus]> = [
  ['CREATED', 'EXTRACTING'],
  ['CREATED', 'FAILED_MANIFEST'],
  ['CREATED', 'TIMED_OUT'],
  ['CREATED', 'CANCELLED'],
  ['EXTRACTING', 'EXTRACTED_VALIDATED'],
  ['EXTRACTING', 'FAILED_EXTRACT'],
  ['EXTRACTING', 'FAILED_SNAPSHOT_EXPIRED'],
  ['EXTRACTING', 'TIMED_OUT'],
  ['EXTRACTING', 'CANCELLED'],
  ['EXTRACTED_VALIDATED', 'STAGE_VALIDATING'],
  ['EXTRACTED_VALIDATED', 'CANCELLED'],
  ['STAGE_VALIDATING', 'STAGING_VALIDATED'],
  ['STAGE_VALIDATING', 'FAILED_STAGE_VALIDATION'],
  ['STAGE_VALIDATING', 'CANCELLED'],
  ['STAGING_VALIDATED', 'PUBLISHING'],
  ['STAGING_VALIDATED', 'FAILED_PUBLISH'],
  ['STAGING_VALIDATED', 'CANCELLED'],
  ['PUBLISHING', 'PUBLISHED'],
  ['PUBLISHING', 'FAILED_PUBLISH'],
  ['PUBLISHING', 'PUBLISH_UNKNOWN'],
  ['PUBLISH_UNKNOWN', 'PUBLISHED'],
  ['PUBLISH_UNKNOWN', 'FAILED_PUBLISH'],
  ['PUBLISHED', 'SUCCESS'],
  ['PUBLISHED', 'FAILED_TARGET_VALIDATION'],
  ['PUBLISHED', 'CANCELLED'],
];

export function canTransitionRun(from: string, to: string): boolean {
  return RUN_TRANSITIONS.some(([f, t]) => f === from && t === to);
}

/** The (expectedStatus, failStatus) pairs failRun accepts (ref §3.3). */
const RUN_FAILURES: ReadonlyArray<readonly [RunStatus, RunStatus]> = [
  ['CREATED', 'FAILED_MANIFEST'],
  ['EXTRACTING', 'FAILED_EXTRACT'],
  ['STAGE_VALIDATING', 'FAILED_STAGE_VALIDATION'],
  ['STAGING_VALIDATED', 'FAILED_PUBLISH'],
  ['PUBLISHED', 'FAILED_TARGET_VALIDATION'],
];

export function isAllowedRunFailure(expected: string, fail: string): boolean {
  return RUN_FAILURES.some(([e, f]) => e === expected && f === fail);
}

export const PARTITION_STATUSES = ['PENDING', 'RUNNING', 'RETRY', 'SUCCESS', 'FAILED', 'TIMED_OUT', 'ABANDONED'] as const;
export type PartitionStatus = (typeof PARTITION_STATUSES)[number];

/** Partitions that still wait for work; they become ABANDONED or TIMED_OUT when their run ends. */
export const UNFINISHED_PARTITION_STATUSES: readonly PartitionStatus[] = ['PENDING', 'RUNNING', 'RETRY'];
/**
 * What claim_partition may claim; its SQL copy (02_claim_partition.sql) is held equal to this by states.test.ts.
 * @public
 */
export const CLAIMABLE_PARTITION_STATUSES: readonly PartitionStatus[] = ['PENDING', 'RETRY'];

export const PARTITION_TRANSITIONS: ReadonlyArray<readonly [PartitionStatus, PartitionStatus]> = [
  ['PENDING', 'RUNNING'],
  ['RETRY', 'RUNNING'],
  ['RUNNING', 'SUCCESS'],
  ['RUNNING', 'FAILED'],
  ['RUNNING', 'RETRY'],
  ['PENDING', 'RETRY'],
  ['PENDING', 'TIMED_OUT'],
  ['RUNNING', 'TIMED_OUT'],
  ['RETRY', 'TIMED_OUT'],
  ['PENDING', 'ABANDONED'],
  ['RUNNING', 'ABANDONED'],
  ['RETRY', 'ABANDONED'],
];

/** A chunk's file (load_file). report_chunk writes them (prisma/functions/03_report_chunk.sql). */
export const FILE_STATUSES = ['WRITTEN', 'VERIFIED', 'FAILED'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];

/** A reissue fails the partition's written chunks; report_chunk writes a chunk reported again anew. */
export const FILE_TRANSITIONS: ReadonlyArray<readonly [FileStatus, FileStatus]> = [
  ['WRITTEN', 'FAILED'],
  ['FAILED', 'WRITTEN'],
];

export const DISPATCH_STATUSES = ['PENDING', 'SENT', 'ACKED', 'DEAD', 'CANCELLED'] as const;
export type DispatchStatus = (typeof DISPATCH_STATUSES)[number];
/**
 * VALIDATE_RUN and REISSUE_PARTITION call NiFi's receiver about a run; GATE_READY calls a gate's receiver
 * (its notifyUrl) about one readiness decision — a consumer, a business date and a version — and has no run;
 * ALERT_WEBHOOK posts one alert occurrence to one receiver of alerts.webhooks, and has no run either;
 * LINEAGE_EVENT posts one OpenLineage event of a run to lineage.url, whatever the run's status meanwhile.
 * START_LOAD asks NiFi's receiver to start a load for one date of a backfill, whose run does not exist yet.
 */
export const DISPATCH_TYPES = ['VALIDATE_RUN', 'REISSUE_PARTITION', 'GATE_READY', 'ALERT_WEBHOOK', 'LINEAGE_EVENT', 'START_LOAD'] as const;
export type DispatchType = (typeof DISPATCH_TYPES)[number];
type RunDispatchType = Exclude<DispatchType, 'GATE_READY' | 'ALERT_WEBHOOK' | 'LINEAGE_EVENT' | 'START_LOAD'>;
/** Whom each call goes to: NiFi's control receiver (nifi.receiverUrl), a gate's receiver, an alert webhook, lineage.url. */
const DISPATCH_RECEIVER: Record<DispatchType, 'NIFI' | 'GATE' | 'ALERT_WEBHOOK' | 'LINEAGE'> = {
  VALIDATE_RUN: 'NIFI',
  REISSUE_PARTITION: 'NIFI',
  START_LOAD: 'NIFI',
  GATE_READY: 'GATE',
  ALERT_WEBHOOK: 'ALERT_WEBHOOK',
  LINEAGE_EVENT: 'LINEAGE',
};
/** The calls only a worker with nifi.receiverUrl delivers; any other worker leaves them waiting in the outbox. */
export const NIFI_DISPATCH_TYPES = DISPATCH_TYPES.filter((type) => DISPATCH_RECEIVER[type] === 'NIFI');

export const DISPATCH_TRANSITIONS: ReadonlyArray<readonly [DispatchStatus, DispatchStatus]> = [
  ['PENDING', 'SENT'],
  ['PENDING', 'DEAD'],
  ['PENDING', 'ACKED'],
  ['SENT', 'ACKED'],
  ['DEAD', 'ACKED'],
  ['SENT', 'PENDING'],
  ['SENT', 'DEAD'],
  ['DEAD', 'PENDING'],
  ['PENDING', 'CANCELLED'],
  ['SENT', 'CANCELLED'],
];
/** A call that arrives is its dispatch's ACK, whatever became of the dispatch meanwhile but a cancellation. */
export const ACKABLE_DISPATCH_STATUSES: readonly DispatchStatus[] = DISPATCH_TRANSITIONS.filter(([, to]) => to === 'ACKED').map(
  ([from]) => from,
);
/** Dispatches not yet confirmed; they become CANCELLED when the run stops waiting for them. */
export const UNDELIVERED_DISPATCH_STATUSES: readonly DispatchStatus[] = ['PENDING', 'SENT'];
/** Dispatches that are work still waiting or needing an operator (ACKED and CANCELLED ones are done). */
export const BACKLOG_DISPATCH_STATUSES: readonly DispatchStatus[] = [...UNDELIVERED_DISPATCH_STATUSES, 'DEAD'];
export const RESENDABLE_DISPATCH_STATUSES: readonly DispatchStatus[] = ['DEAD', 'SENT'];

/** The run status each dispatch type waits for; when the run leaves it the call is no longer wanted. */
export const DISPATCH_WAITING_RUN_STATUS: Record<RunDispatchType, RunStatus> = {
  VALIDATE_RUN: 'EXTRACTED_VALIDATED',
  REISSUE_PARTITION: 'EXTRACTING',
};
/** The calls a run's end cancels: those that wait for a status of it (a LINEAGE_EVENT reports the end instead). */
export const RUN_WAITING_DISPATCH_TYPES = Object.keys(DISPATCH_WAITING_RUN_STATUS) as RunDispatchType[];
/**
 * What a 2xx makes of a PENDING call. NiFi's 2xx is a receipt, not an acknowledgement (startValidation, or the
 * claim of the reissued partition, is): SENT, re-sent after dispatch.ackTimeout. A gate's receiver and an alert
 * webhook have nothing to call back with: their 2xx is the acknowledgement.
 */
export const DISPATCH_RECEIVED_STATUS: Record<DispatchType, Extract<DispatchStatus, 'SENT' | 'ACKED'>> = {
  VALIDATE_RUN: 'SENT',
  REISSUE_PARTITION: 'SENT',
  GATE_READY: 'ACKED',
  ALERT_WEBHOOK: 'ACKED',
  LINEAGE_EVENT: 'ACKED',
  // acknowledged by the createRun that carries the backfill id
  START_LOAD: 'SENT',
};
/** A START_LOAD call is wanted only while its backfill date waits for NiFi's createRun. */
export const START_LOAD_WAITING_DATE_STATUS: BackfillDateStatus = 'STARTING';
/** The OpenLineage run-state transitions (RunEvent.eventType) Load Control reports; it never sends OTHER. */
export const LINEAGE_EVENT_TYPES = ['START', 'RUNNING', 'COMPLETE', 'ABORT', 'FAIL'] as const;
export type LineageEventType = (typeof LINEAGE_EVENT_TYPES)[number];
/** The event a run sends when it enters a status: extraction starts, the run ends (SUCCESS, CANCELLED, a failure). */
const LINEAGE_EVENT_ON_ENTERING: Partial<Record<RunStatus, LineageEventType>> = {
  EXTRACTING: 'START',
  SUCCESS: 'COMPLETE',
  CANCELLED: 'ABORT',
  ...Object.fromEntries(FAILED_RUN_STATUSES.filter((s) => s !== 'CANCELLED').map((s) => [s, 'FAIL'])),
};
/**
 * An operator's resolution of PUBLISH_UNKNOWN as PUBLISHED is a RUNNING event: the run goes on (target validation
 * and markSuccess end it with COMPLETE or FAIL). Resolved as FAILED_PUBLISH it is the run's FAIL.
 */
const LINEAGE_RESOLUTION: { from: RunStatus; to: RunStatus; eventType: LineageEventType } = {
  from: 'PUBLISH_UNKNOWN',
  to: 'PUBLISHED',
  eventType: 'RUNNING',
};

/**
 * The lineage event a run's move makes, if any. Its SQL copy, nifi_ops.lineage_event_type
 * (prisma/functions/06_lineage.sql), writes the events and is held equal to this by states.test.ts.
 */
export function lineageEventType(from: RunStatus, to: RunStatus): LineageEventType | null {
  if (from === LINEAGE_RESOLUTION.from && to === LINEAGE_RESOLUTION.to) return LINEAGE_RESOLUTION.eventType;
  return LINEAGE_EVENT_ON_ENTERING[to] ?? null;
}

/** A reissue call is wanted only while its partition still waits in this status for a new owner. */
export const REISSUE_WAITING_PARTITION_STATUS: PartitionStatus = 'RETRY';
/** Partitions the sweeper or an operator may reset for reissue (a PENDING one was never claimed). */
export const REISSUABLE_PARTITION_STATUSES: readonly PartitionStatus[] = ['PENDING', 'RUNNING'];

/**
 * What an operator may do to a run, by the state machines above (the console asks, through Run.allowedActions):
 * cancel it while it may still become CANCELLED; resolve it while PUBLISH_UNKNOWN; reissue its partitions in
 * REISSUABLE_PARTITION_STATUSES while it waits for them; resend its dispatches in RESENDABLE_DISPATCH_STATUSES
 * whatever its status (a receiver may be back after the run ended); resume it when `resumable` says so (resumeRun's
 * rule needs more than the status: a manifest with an SCN, an unfinished extraction, no newer attempt).
 */
export const RUN_ACTIONS = ['CANCEL', 'RESOLVE_UNKNOWN', 'REISSUE_PARTITION', 'RESEND_DISPATCH', 'RESUME'] as const;
export type RunAction = (typeof RUN_ACTIONS)[number];

/** The run status resolveUnknown accepts. */
export const RESOLVABLE_RUN_STATUS: RunStatus = 'PUBLISH_UNKNOWN';

export function allowedRunActions(status: RunStatus, resumable = false): RunAction[] {
  const allowed: Record<RunAction, boolean> = {
    CANCEL: canTransitionRun(status, 'CANCELLED'),
    RESOLVE_UNKNOWN: status === RESOLVABLE_RUN_STATUS,
    REISSUE_PARTITION: status === DISPATCH_WAITING_RUN_STATUS.REISSUE_PARTITION,
    RESEND_DISPATCH: true,
    RESUME: resumable && RESUMABLE_RUN_STATUSES.includes(status),
  };
  return RUN_ACTIONS.filter((action) => allowed[action]);
}

/** A backfill (load_backfill): it starts its dates while RUNNING, holds them while PAUSED. */
export const BACKFILL_STATUSES = ['RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED'] as const;
export type BackfillStatus = (typeof BACKFILL_STATUSES)[number];
export const BACKFILL_TRANSITIONS: ReadonlyArray<readonly [BackfillStatus, BackfillStatus]> = [
  ['RUNNING', 'PAUSED'],
  ['PAUSED', 'RUNNING'],
  ['RUNNING', 'COMPLETED'],
  ['RUNNING', 'CANCELLED'],
  ['PAUSED', 'CANCELLED'],
];
/** Backfills whose dates may still change; COMPLETED and CANCELLED ones only settle the runs they started. */
export const OPEN_BACKFILL_STATUSES: readonly BackfillStatus[] = ['RUNNING', 'PAUSED'];

/**
 * A date of a backfill (load_backfill_date): QUEUED until its START_LOAD call is written (STARTING), RUNNING once
 * NiFi's createRun carried the backfill id, then as its run ended. SKIPPED at the start (the plan said so).
 */
export const BACKFILL_DATE_STATUSES = ['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'] as const;
export type BackfillDateStatus = (typeof BACKFILL_DATE_STATUSES)[number];
export const BACKFILL_DATE_TRANSITIONS: ReadonlyArray<readonly [BackfillDateStatus, BackfillDateStatus]> = [
  ['QUEUED', 'STARTING'],
  ['QUEUED', 'CANCELLED'],
  ['STARTING', 'RUNNING'],
  ['STARTING', 'FAILED'],
  ['STARTING', 'CANCELLED'],
  ['RUNNING', 'SUCCEEDED'],
  ['RUNNING', 'FAILED'],
];
/** Dates that hold one of the backfill's maxConcurrent places: their load was asked for and has not ended. */
export const ACTIVE_BACKFILL_DATE_STATUSES: readonly BackfillDateStatus[] = ['STARTING', 'RUNNING'];
/** Dates not yet ended: the backfill completes when it has none. */
export const OPEN_BACKFILL_DATE_STATUSES: readonly BackfillDateStatus[] = ['QUEUED', ...ACTIVE_BACKFILL_DATE_STATUSES];

/** What an operator may do to a backfill in its status (the console asks, through Backfill.allowedActions). */
export const BACKFILL_ACTIONS = ['PAUSE', 'RESUME', 'CANCEL', 'RELEASE_READINESS'] as const;
export type BackfillAction = (typeof BACKFILL_ACTIONS)[number];

export function allowedBackfillActions(status: BackfillStatus, readinessHeld: boolean): BackfillAction[] {
  const can = (to: BackfillStatus) => BACKFILL_TRANSITIONS.some(([f, t]) => f === status && t === to);
  const allowed: Record<BackfillAction, boolean> = {
    PAUSE: can('PAUSED'),
    RESUME: status === 'PAUSED',
    CANCEL: can('CANCELLED'),
    RELEASE_READINESS: readinessHeld,
  };
  return BACKFILL_ACTIONS.filter((action) => allowed[action]);
}

/** Where a status read from the database becomes its union: a value outside the CHECK constraint is a bug. */
function statusParser<S extends string>(table: string, statuses: readonly S[]): (value: string) => S {
  return (value) => {
    if (!(statuses as readonly string[]).includes(value)) throw new Error(`${table}: unknown status ${value}`);
    return value as S;
  };
}
export const parseRunStatus = statusParser('load_run', RUN_STATUSES);
export const parsePartitionStatus = statusParser('load_partition', PARTITION_STATUSES);
export const parseDispatchStatus = statusParser('load_dispatch', DISPATCH_STATUSES);
export const parseDispatchType = statusParser('load_dispatch.dispatch_type', DISPATCH_TYPES);
export const parseBackfillStatus = statusParser('load_backfill', BACKFILL_STATUSES);
export const parseBackfillDateStatus = statusParser('load_backfill_date', BACKFILL_DATE_STATUSES);

export const SNAPSHOT_ERROR_CODES = ['ORA-01555', 'ORA-08180'];
