// The processes of an installation: every `serve`, `work` and `start` registers at start, beats every
// HEARTBEAT_INTERVAL_MS and says when it stops. Their rows tell the console and the monitor summary which
// worker stopped beating (WORKER_STALE) and whether anyone delivers the calls that are due (NO_DISPATCHER).
import type { Tx } from '../../db/client.js';
import type { DispatchStatus } from '../states.js';

/** A call waiting for a dispatcher to send it. */
const DUE: DispatchStatus = 'PENDING';

export const PROCESS_ROLES = ['serve', 'work', 'start'] as const;
export type ProcessRole = (typeof PROCESS_ROLES)[number];

export const PROCESS_STATES = ['LIVE', 'STALE', 'STOPPED'] as const;
type ProcessState = (typeof PROCESS_STATES)[number];

export const HEARTBEAT_INTERVAL_MS = 10_000;
/**
 * A process not seen for this long is stale: six beats missed, so a database that stalled for the length of
 * the request timeouts (10 s by default) does not make every process look dead.
 */
export const STALE_AFTER_MS = 60_000;
/** Rows of processes not seen for this long are forgotten by the sweeper. */
const FORGET_AFTER_DAYS = 7;

export interface ProcessRegistration {
  instanceId: string;
  role: ProcessRole;
  host: string;
  pid: number;
  version: string;
  /** It delivers NiFi's calls (a worker with nifi.receiverUrl); every worker delivers the gates', alerts' and lineage calls. */
  dispatcher: boolean;
  /** It runs the sweeper. */
  sweeper: boolean;
}

export interface ProcessInstance extends ProcessRegistration {
  startedAt: Date;
  lastSeenAt: Date;
  lastSweepAt: Date | null;
  stoppedAt: Date | null;
  state: ProcessState;
}

export async function registerProcess(tx: Tx, process: ProcessRegistration): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO nifi_ops.process_instance (instance_id, role, host, pid, version, dispatcher, sweeper)
    VALUES (${process.instanceId}::uuid, ${process.role}, ${process.host}, ${process.pid}, ${process.version},
            ${process.dispatcher}, ${process.sweeper})
    ON CONFLICT (instance_id) DO UPDATE SET last_seen_at = clock_timestamp(), stopped_at = NULL`;
}

/**
 * One beat: the process is alive, and when its sweeper last finished a cycle. A row the sweeper forgot (a
 * process partitioned from the database for a week) is written again.
 */
export async function beat(tx: Tx, process: ProcessRegistration, lastSweepAt: Date | null): Promise<void> {
  const updated = await tx.$executeRaw`
    UPDATE nifi_ops.process_instance
       SET last_seen_at = clock_timestamp(), last_sweep_at = COALESCE(${lastSweepAt}::timestamptz, last_sweep_at)
     WHERE instance_id = ${process.instanceId}::uuid AND stopped_at IS NULL`;
  if (updated === 0) await registerProcess(tx, process);
}

export async function markStopped(tx: Tx, instanceId: string): Promise<void> {
  await tx.$executeRaw`
    UPDATE nifi_ops.process_instance SET stopped_at = clock_timestamp(), last_seen_at = clock_timestamp()
     WHERE instance_id = ${instanceId}::uuid`;
}

/** The state of a process_instance row `p`, as SQL (the console's list and the alerts decide alike). */
const STATE_SQL = `CASE WHEN p.stopped_at IS NOT NULL THEN 'STOPPED'
                        WHEN p.last_seen_at < clock_timestamp() - interval '${STALE_AFTER_MS} milliseconds' THEN 'STALE'
                        ELSE 'LIVE' END`;

interface ProcessRow {
  instance_id: string;
  role: ProcessRole;
  host: string;
  pid: number;
  version: string;
  dispatcher: boolean;
  sweeper: boolean;
  started_at: Date;
  last_seen_at: Date;
  last_sweep_at: Date | null;
  stopped_at: Date | null;
  state: ProcessState;
}

/** Every process the installation remembers: live ones first, then by role and host. */
export async function listProcesses(tx: Tx): Promise<ProcessInstance[]> {
  const rows = await tx.$queryRawUnsafe<ProcessRow[]>(
    `SELECT p.*, ${STATE_SQL} AS state FROM nifi_ops.process_instance p
      ORDER BY p.stopped_at IS NOT NULL, p.last_seen_at < clock_timestamp() - interval '${STALE_AFTER_MS} milliseconds',
               p.role, p.host, p.started_at DESC`,
  );
  return rows.map((row) => ({
    instanceId: row.instance_id,
    role: row.role,
    host: row.host,
    pid: row.pid,
    version: row.version,
    dispatcher: row.dispatcher,
    sweeper: row.sweeper,
    startedAt: row.started_at,
    lastSeenAt: row.last_seen_at,
    lastSweepAt: row.last_sweep_at,
    stoppedAt: row.stopped_at,
    state: row.state,
  }));
}

/** The sweeper forgets processes not seen for FORGET_AFTER_DAYS; returns how many. */
export async function forgetProcesses(tx: Tx): Promise<number> {
  return tx.$executeRaw`
    DELETE FROM nifi_ops.process_instance WHERE last_seen_at < clock_timestamp() - make_interval(days => ${FORGET_AFTER_DAYS})`;
}

/**
 * The alerts of processes (SQL for the monitor summary's UNION, in its column order):
 * - WORKER_STALE: a process that stopped beating without saying it stopped, unless a process of the same
 *   role on the same host started since (a restart replaced it);
 * - NO_DISPATCHER: calls due for longer than STALE_AFTER_MS and no live process runs a dispatcher.
 */
export const PROCESS_ALERTS_SQL = `
      SELECT 'WORKER_STALE', CASE WHEN p.sweeper OR p.dispatcher THEN 'ERROR' ELSE 'WARN' END, NULL::uuid, NULL::varchar,
             NULL::varchar, NULL::text, p.last_seen_at,
             p.role || ' on ' || p.host || ' (pid ' || p.pid || ', instance ' || p.instance_id || ') last seen at '
               || to_char(p.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             NULL::uuid, NULL::text, NULL::text
        FROM nifi_ops.process_instance p
       WHERE p.stopped_at IS NULL AND p.last_seen_at < clock_timestamp() - interval '${STALE_AFTER_MS} milliseconds'
         AND NOT EXISTS (SELECT 1 FROM nifi_ops.process_instance n
                          WHERE n.role = p.role AND n.host = p.host AND n.started_at > p.last_seen_at)
      UNION ALL
      SELECT 'NO_DISPATCHER', 'ERROR', NULL, NULL, NULL, NULL, min(d.next_attempt_at),
             count(*) || ' call(s) to NiFi due since '
               || to_char(min(d.next_attempt_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
               || ' and no live process runs a dispatcher (load-control work with nifi.receiverUrl)',
             NULL, NULL, NULL
        FROM nifi_ops.load_dispatch d
       WHERE d.status = '${DUE}' AND d.next_attempt_at < clock_timestamp() - interval '${STALE_AFTER_MS} milliseconds'
         AND NOT EXISTS (SELECT 1 FROM nifi_ops.process_instance p
                          WHERE p.dispatcher AND p.stopped_at IS NULL
                            AND p.last_seen_at >= clock_timestamp() - interval '${STALE_AFTER_MS} milliseconds')
      HAVING count(*) > 0`;
