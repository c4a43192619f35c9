// runProgress: a run's progress as deltas. The first event is a snapshot (the run, its partition counts and every
// partition); each later one carries only the partitions that changed since the event before, so a push costs the
// same for a run of 20 partitions as for one of 5,000 (runChanged re-reads and re-sends the whole run: ~1.2 MB).
import type { Logger } from 'pino';
import type pg from 'pg';
import type { Tx } from '../db/client.js';
import { DomainError } from '../contract/errors.js';
import { getRun, listPartitions, partitionCounts, partitionsById, type PartitionRecord, type RunRecord } from '../domain/runs/queries.js';
import type { PartitionStatus } from '../domain/states.js';
import { EventStream } from './stream.js';

export interface RunProgressEvent {
  /** Counts this run's events in this process: one more per event, so a client can tell it missed one. */
  version: number;
  /** The version whose state `partitions` brings up to date; null for a snapshot. */
  sinceVersion: number | null;
  /** `partitions` holds every partition of the run (the first event, and after a LISTEN reconnect). */
  snapshot: boolean;
  run: RunRecord;
  partitionCounts: Array<{ status: PartitionStatus; count: number }>;
  partitions: PartitionRecord[];
}

/** Partitions by id, `newer` replacing `older`'s, in `older`'s order and then `newer`'s new ones. */
function mergePartitions(older: PartitionRecord[], newer: PartitionRecord[]): PartitionRecord[] {
  const byId = new Map(older.map((p) => [p.partitionId, p]));
  for (const p of newer) byId.set(p.partitionId, p);
  return [...byId.values()];
}

/**
 * Two events not yet sent to a slow subscriber become one: the client still gets every change, in one event
 * whose `sinceVersion` is the first's, and a subscriber holds at most one event per run (its size bounded by
 * the run's partitions), never a queue.
 */
export function mergeProgress(older: RunProgressEvent, newer: RunProgressEvent): RunProgressEvent {
  if (newer.snapshot) return newer;
  return {
    ...newer,
    snapshot: older.snapshot,
    sinceVersion: older.sinceVersion,
    partitions: mergePartitions(older.partitions, newer.partitions),
  };
}

/**
 * The partitions of the run written since the previous read, and where this read stands, for the next. A row
 * version is new when its writer (xmin) is not visible in the previous read's snapshot (pg_current_snapshot()):
 * it committed after that read, or was still running then, and the statement here sees it; one still running now
 * is not seen here and will not be visible in this snapshot, so the next read has it. Every version is thus sent
 * once, whatever the transaction horizon (another database's long transaction holds pg_snapshot_xmin back, and
 * everything written since then would be sent again and again).
 *
 * A snapshot lists top-level transactions only: a row written in a sub-transaction (a savepoint, as the sweeper's
 * rules take) of a transaction running at the previous read has an xmin the snapshot takes for finished. So the
 * oldest transaction of this database running at each read is kept too (pg_stat_activity.backend_xid), and rows
 * written from it up to that snapshot's xmax are sent as well: a few more than needed, never fewer.
 *
 * Transaction ids are widened to xid8 with the epoch of this snapshot's xmax; rows older than the previous
 * snapshot's xmin (by age(), which wraps with the ids) are skipped before that, and frozen rows are the oldest.
 */
async function changedSince(pool: pg.Pool, runId: string, since: string | null): Promise<{ position: string; changed: string[] }> {
  const [snapshot, oldestRunning] = since?.split('|') ?? [null, null];
  const { rows } = await pool.query<{ snapshot: string; oldest_running: string | null; changed: string[] }>(
    `WITH s AS (SELECT pg_current_snapshot() AS now,
                       pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax,
                       $2::text::pg_snapshot AS prev,
                       $3::text::bigint AS prev_running),
          w AS (SELECT s.*, s.xmax >> 32 << 32 AS epoch FROM s)
     SELECT w.now::text AS snapshot,
            (SELECT min(l.x) FROM (
               SELECT w.epoch + a.backend_xid::text::bigint
                      - CASE WHEN w.epoch + a.backend_xid::text::bigint > w.xmax THEN 4294967296 ELSE 0 END AS x
                 FROM pg_stat_activity a
                WHERE a.datname = current_database() AND a.backend_xid IS NOT NULL) l
              WHERE NOT pg_visible_in_snapshot(l.x::text::xid8, w.now))::text AS oldest_running,
            CASE WHEN $2::text IS NULL THEN '{}'::text[] ELSE ARRAY(
              SELECT p.partition_id::text
                FROM nifi_ops.load_partition p,
                     LATERAL (SELECT w.epoch + p.xmin::text::bigint
                                     - CASE WHEN w.epoch + p.xmin::text::bigint > w.xmax THEN 4294967296 ELSE 0 END AS x) r
               WHERE p.run_id = $1
                 AND age(p.xmin) <= age((pg_snapshot_xmin(w.prev)::text::bigint % 4294967296)::text::xid)
                 AND (NOT pg_visible_in_snapshot(r.x::text::xid8, w.prev)
                      OR (r.x >= w.prev_running AND r.x < pg_snapshot_xmax(w.prev)::text::bigint))
               ORDER BY p.partition_id) END AS changed
       FROM w`,
    [runId, snapshot, oldestRunning || null],
  );
  const row = rows[0]!;
  return { position: `${row.snapshot}|${row.oldest_running ?? ''}`, changed: row.changed };
}

interface Watched {
  runId: string;
  /** Subscribers that have the state of `version`; new ones wait for a snapshot. */
  current: Set<EventStream<RunProgressEvent>>;
  needSnapshot: Set<EventStream<RunProgressEvent>>;
  version: number;
  /** Where the last read stood (changedSince); null before the first. */
  position: string | null;
  reading: { again: boolean } | null;
}

/**
 * One read per notification of a watched run, shared by all its subscribers in this process, and reads of one
 * run never overlap (a notification during a read asks for one more after it): each read is the run row, its
 * partition counts and the partitions written since the read before, plus every partition when a subscriber
 * waits for a snapshot.
 */
export class RunProgressFeed {
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(
    private readonly reader: Tx,
    private readonly pool: pg.Pool,
    private readonly log: Logger,
  ) {}

  /** The run's snapshot first, then its deltas. */
  subscribe(runId: string): EventStream<RunProgressEvent> {
    const entry = this.watched.get(runId) ?? {
      runId,
      current: new Set(),
      needSnapshot: new Set(),
      version: 0,
      position: null,
      reading: null,
    };
    const stream: EventStream<RunProgressEvent> = new EventStream<RunProgressEvent>(
      () => {
        entry.current.delete(stream);
        entry.needSnapshot.delete(stream);
        if (entry.current.size === 0 && entry.needSnapshot.size === 0) this.watched.delete(runId);
      },
      1,
      mergeProgress,
    );
    if (this.closed) {
      stream.close();
      return stream;
    }
    entry.needSnapshot.add(stream);
    this.watched.set(runId, entry);
    this.changed(runId);
    return stream;
  }

  /** A notification for the run (a transition, or claim and chunk progress): read it if anyone here watches it. */
  changed(runId: string): void {
    const entry = this.watched.get(runId);
    if (!entry) return;
    if (entry.reading) {
      entry.reading.again = true;
      return;
    }
    entry.reading = { again: false };
    void this.read(entry, entry.reading);
  }

  /** After a LISTEN reconnect: changes meanwhile were not notified, so every subscriber gets a snapshot. */
  resync(): void {
    for (const entry of this.watched.values()) {
      for (const stream of entry.current) entry.needSnapshot.add(stream);
      entry.current.clear();
      this.changed(entry.runId);
    }
  }

  subscriberCount(): number {
    let count = 0;
    for (const entry of this.watched.values()) count += entry.current.size + entry.needSnapshot.size;
    return count;
  }

  close(): void {
    this.closed = true;
    for (const entry of [...this.watched.values()]) for (const stream of [...entry.current, ...entry.needSnapshot]) stream.close();
  }

  private async read(entry: Watched, state: { again: boolean }): Promise<void> {
    try {
      do {
        state.again = false;
        const snapshotFor = [...entry.needSnapshot];
        const { position, changed } = await changedSince(this.pool, entry.runId, entry.position);
        let run: RunRecord;
        try {
          run = await getRun(this.reader, entry.runId);
        } catch (error) {
          // deleted meanwhile (retention); the subscription stays, with nothing to show
          if (error instanceof DomainError && error.code === 'RUN_NOT_FOUND') return;
          throw error;
        }
        const [counts] = await partitionCounts(this.reader, [entry.runId]);
        const [all, delta] = await Promise.all([
          snapshotFor.length > 0 ? listPartitions(this.reader, entry.runId, null) : Promise.resolve([]),
          entry.current.size > 0 && entry.position !== null && changed.length > 0
            ? partitionsById(this.reader, entry.runId, changed)
            : Promise.resolve([]),
        ]);
        const since = entry.position === null ? null : entry.version;
        const version = entry.version + 1;
        entry.version = version;
        entry.position = position;
        const common = { version, run, partitionCounts: counts! };
        for (const stream of entry.current) stream.push('progress', { ...common, sinceVersion: since, snapshot: false, partitions: delta });
        for (const stream of snapshotFor) {
          if (!entry.needSnapshot.delete(stream) || stream.closed) continue;
          stream.push('progress', { ...common, sinceVersion: null, snapshot: true, partitions: all });
          entry.current.add(stream);
        }
      } while (state.again);
    } catch (error) {
      this.log.warn({ err: error, runId: entry.runId }, 'realtime_progress_read_failed');
      // the next read must not build on a snapshot whose changes were never sent: everyone gets a snapshot
      for (const stream of entry.current) entry.needSnapshot.add(stream);
      entry.current.clear();
    } finally {
      entry.reading = null;
    }
  }
}
