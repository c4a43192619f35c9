import type { Tx } from '../../db/client.js';
import { selectList, type FieldsOf } from '../../db/select-list.js';
import { inOneTransaction } from '../../db/operation.js';
import { Prisma } from '../../generated/prisma/client.js';
import { OPERATOR_EVENT_NAMES } from './operator-events.js';

export const EVENT_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type EventLevel = (typeof EVENT_LEVELS)[number];

export interface ApiEvent {
  level: EventLevel;
  name: string;
  runId: string | null;
  partitionId?: string | null;
  actor: string | null;
  rowCount?: bigint | null;
  errorCode?: string | null;
  errorClass?: string | null;
  message?: string | null;
  details?: Record<string, unknown>;
}

/** Writes an API event in the caller's transaction (same function the SQL hot paths use). */
export async function recordApiEvent(tx: Tx, event: ApiEvent): Promise<void> {
  await tx.$executeRaw`SELECT nifi_ops.record_api_event(
      p_level => ${event.level}, p_name => ${event.name}, p_run_id => ${event.runId}::uuid,
      p_partition_id => ${event.partitionId ?? null}, p_actor => ${event.actor},
      p_row_count => ${event.rowCount ?? null}::bigint, p_error_code => ${event.errorCode ?? null},
      p_message => ${event.message ?? null}, p_details => ${JSON.stringify(event.details ?? {})}::jsonb,
      p_error_class => ${event.errorClass ?? null})`;
}

export interface NifiEvent {
  runId: string | null;
  level: EventLevel;
  name: string;
  jobKey?: string | null;
  businessKey?: string | null;
  partitionId?: string | null;
  chunkIndex?: number | null;
  processGroup?: string | null;
  processorName?: string | null;
  processorId?: string | null;
  nodeId?: string | null;
  attemptNo?: number | null;
  rowCount?: bigint | null;
  byteCount?: bigint | null;
  durationMs?: bigint | null;
  errorClass?: string | null;
  errorCode?: string | null;
  message?: string | null;
  details?: Record<string, unknown>;
  actor: string;
}

/** A NiFi PG-90 event. The run is not required to exist (load_event.run_id has no FK, on purpose). */
export async function recordNifiEvent(tx: Tx, event: NifiEvent): Promise<{ eventId: string }> {
  const rows = await tx.$queryRaw<Array<{ event_id: string }>>`
    INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, run_id, job_key, business_key, partition_id,
        chunk_index, process_group, processor_name, processor_id, node_id, attempt_no, row_count, byte_count,
        duration_ms, error_class, error_code, message, details, actor)
    SELECT gen_random_uuid(), ${event.level}, ${event.name}, ${event.runId}::uuid,
        COALESCE(${event.jobKey ?? null}, r.job_key), COALESCE(${event.businessKey ?? null}, r.business_key),
        ${event.partitionId ?? null}, ${event.chunkIndex ?? null}::integer, ${event.processGroup ?? null},
        ${event.processorName ?? null}, ${event.processorId ?? null}, ${event.nodeId ?? null},
        ${event.attemptNo ?? null}::integer, ${event.rowCount ?? null}::bigint, ${event.byteCount ?? null}::bigint,
        ${event.durationMs ?? null}::bigint, ${event.errorClass ?? null}, ${event.errorCode ?? null},
        NULLIF(${event.message ?? null}, ''), ${JSON.stringify(event.details ?? {})}::jsonb, ${event.actor}
    FROM (SELECT 1) one LEFT JOIN nifi_ops.load_run r ON r.run_id = ${event.runId}::uuid
    RETURNING event_id::text`;
  return { eventId: rows[0]!.event_id };
}

export interface EventRow {
  eventId: string;
  eventTime: Date;
  level: string;
  name: string;
  partitionId: string | null;
  chunkIndex: number | null;
  processGroup: string | null;
  processorName: string | null;
  nodeId: string | null;
  errorClass: string | null;
  errorCode: string | null;
  message: string | null;
  details: unknown;
  actor: string | null;
  /** How the actor was authenticated (TOKEN, JWT, SESSION); null for the worker's own events and those from before it was kept. */
  actorAuth: string | null;
  /** The provider's issuer and the actor's subject there, for a JWT or a console session. */
  actorIssuer: string | null;
  actorSubject: string | null;
}

/** The columns of nifi_ops.load_event an event row is made of: the row's, but for the level and name. */
type EventColumns = Omit<EventRow, 'level' | 'name'> & { eventLevel: string; eventName: string };

const EVENT_FIELDS: FieldsOf<EventColumns> = {
  eventId: true,
  eventTime: true,
  eventLevel: true,
  eventName: true,
  partitionId: true,
  chunkIndex: true,
  processGroup: true,
  processorName: true,
  nodeId: true,
  errorClass: true,
  errorCode: true,
  message: true,
  details: true,
  actor: true,
  actorAuth: true,
  actorIssuer: true,
  actorSubject: true,
};
const EVENT_COLUMNS = selectList(EVENT_FIELDS);
const EVENT_COLUMNS_OF_E = selectList(EVENT_FIELDS, 'e');

const toEventRow = (e: EventColumns): EventRow => ({
  eventId: e.eventId,
  eventTime: e.eventTime,
  level: e.eventLevel,
  name: e.eventName,
  partitionId: e.partitionId,
  chunkIndex: e.chunkIndex,
  processGroup: e.processGroup,
  processorName: e.processorName,
  nodeId: e.nodeId,
  errorClass: e.errorClass,
  errorCode: e.errorCode,
  message: e.message,
  details: e.details,
  actor: e.actor,
  actorAuth: e.actorAuth,
  actorIssuer: e.actorIssuer,
  actorSubject: e.actorSubject,
});

/**
 * The latest `last` events of each run, oldest first (ref §3.21), in the order of runIds. Many runs (a page
 * of them): one statement, each run an index range scan (ix_load_event_run_time) that stops after `last`
 * rows. One run is filtered by equality instead, which the subscriptions' shared reader
 * (src/realtime/shared-reader.ts) can give all of a run's subscribers at once.
 */
export async function listRunsEvents(tx: Tx, runIds: readonly string[], last: number): Promise<EventRow[][]> {
  if (runIds.length === 1) {
    const rows = await tx.$queryRaw<EventColumns[]>`
      SELECT ${EVENT_COLUMNS} FROM nifi_ops.load_event
       WHERE run_id = ${runIds[0]}::uuid
       ORDER BY event_time DESC, event_id DESC
       LIMIT ${last}`;
    return [rows.reverse().map(toEventRow)];
  }
  const rows = await tx.$queryRaw<Array<EventColumns & { runId: string }>>`
    SELECT r.run_id::text AS "runId", ${EVENT_COLUMNS_OF_E}
    FROM unnest(${runIds}::uuid[]) WITH ORDINALITY AS r(run_id, ordinal)
    CROSS JOIN LATERAL (
      SELECT * FROM nifi_ops.load_event ev WHERE ev.run_id = r.run_id ORDER BY ev.event_time DESC, ev.event_id DESC LIMIT ${last}
    ) e
    ORDER BY r.ordinal, e.event_time, e.event_id`;
  const byRun = new Map<string, EventRow[]>(runIds.map((id) => [id, []]));
  for (const row of rows) byRun.get(row.runId)?.push(toEventRow(row));
  return runIds.map((id) => byRun.get(id)!);
}

/** Which of a run's events a page holds; every condition given must hold. */
export interface EventPageFilter {
  /** This level and the ones above it (WARN: WARN and ERROR). */
  minLevel: EventLevel | null;
  /** One event name (its kind). */
  name: string | null;
  partitionId: string | null;
  /** Only the events an operator's action wrote (operator-events.ts). */
  operatorActions: boolean;
}

export interface EventPage {
  events: EventRow[];
  hasNextPage: boolean;
}

const EVENT_CURSOR_PREFIX = 'event:';
const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An opaque cursor naming the page's last (oldest) event. */
export function encodeEventCursor(eventId: string): string {
  return Buffer.from(`${EVENT_CURSOR_PREFIX}${eventId}`).toString('base64url');
}

/** The event id a cursor names, or null when the text is no cursor this API gave out. */
export function decodeEventCursor(cursor: string): string | null {
  const text = Buffer.from(cursor, 'base64url').toString();
  if (Buffer.from(text).toString('base64url') !== cursor || !text.startsWith(EVENT_CURSOR_PREFIX)) return null;
  const eventId = text.slice(EVENT_CURSOR_PREFIX.length);
  return UUID_TEXT.test(eventId) ? eventId : null;
}

/**
 * A page of a run's events, newest first, older pages after the cursor's event: one range scan of
 * ix_load_event_run_time from the cursor's (event_time, event_id), read in the database
 * at full precision; the filters are checked on the run's events as the scan meets them.
 */
export async function runEventPage(
  tx: Tx,
  runId: string,
  filter: EventPageFilter,
  first: number,
  afterEventId: string | null,
): Promise<EventPage> {
  const levels = filter.minLevel ? EVENT_LEVELS.slice(EVENT_LEVELS.indexOf(filter.minLevel)) : null;
  const conditions: Prisma.Sql[] = [
    Prisma.sql`run_id = ${runId}::uuid`,
    ...(levels ? [Prisma.sql`event_level = ANY(${levels}::text[])`] : []),
    ...(filter.name ? [Prisma.sql`event_name = ${filter.name}`] : []),
    ...(filter.partitionId ? [Prisma.sql`partition_id = ${filter.partitionId}`] : []),
    ...(filter.operatorActions ? [Prisma.sql`event_name = ANY(${OPERATOR_EVENT_NAMES}::text[])`] : []),
    ...(afterEventId
      ? [
          Prisma.sql`(event_time, event_id) < (SELECT event_time, event_id FROM nifi_ops.load_event
                                                WHERE event_id = ${afterEventId}::uuid AND run_id = ${runId}::uuid)`,
        ]
      : []),
  ];
  const rows = await tx.$queryRaw<EventColumns[]>`
    SELECT ${EVENT_COLUMNS} FROM nifi_ops.load_event
     WHERE ${Prisma.join(conditions, ' AND ')}
     ORDER BY event_time DESC, event_id DESC
     LIMIT ${first + 1}`;
  return { events: rows.slice(0, first).map(toEventRow), hasNextPage: rows.length > first };
}

export const recordNifiEventOperation = inOneTransaction(recordNifiEvent);
