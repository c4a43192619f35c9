import type { Logger } from 'pino';
import type { Tx } from '../db/client.js';
import { DomainError } from '../contract/errors.js';
import { getRun, runsMovedSince, type RunRecord } from '../domain/runs/queries.js';
import { EventStream } from './stream.js';

export interface RunFilter {
  runId: string | null;
  jobKey: string | null;
}

interface Subscriber {
  filter: RunFilter;
  stream: EventStream<RunRecord>;
}

/** After a reconnect, runs that ended or moved this long before the loss was noticed are re-sent too. */
const RESYNC_MARGIN_MS = 60_000;
const RESYNC_LIMIT = 1000;
const DELIVERY_MEMORY_MS = 60_000;

/**
 * runChanged: each notified run is re-read once for all of this process's subscribers, and re-reads of
 * one run never overlap (a notification during a read asks for one more read after it), so subscribers
 * see a run's states in commit order and a burst of notifications costs at most two reads.
 */
export class RunFeed {
  private readonly byRun = new Map<string, Set<Subscriber>>();
  private readonly broad = new Set<Subscriber>();
  private readonly reading = new Map<string, { again: boolean }>();
  private readonly delivered = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly reader: Tx,
    private readonly log: Logger,
  ) {}

  /** A subscription to one run (its current state comes first), to a job's runs, or to all runs. */
  subscribe(filter: RunFilter): EventStream<RunRecord> {
    const subscriber: Subscriber = {
      filter,
      stream: new EventStream<RunRecord>(() => {
        if (filter.runId) {
          const set = this.byRun.get(filter.runId);
          set?.delete(subscriber);
          if (set?.size === 0) this.byRun.delete(filter.runId);
        } else {
          this.broad.delete(subscriber);
        }
      }),
    };
    if (this.closed) {
      subscriber.stream.close();
      return subscriber.stream;
    }
    if (filter.runId) {
      const set = this.byRun.get(filter.runId) ?? new Set<Subscriber>();
      set.add(subscriber);
      this.byRun.set(filter.runId, set);
      this.changed(filter.runId);
    } else {
      this.broad.add(subscriber);
    }
    return subscriber.stream;
  }

  /** A notification for the run: re-read it if anyone here may want it. */
  changed(runId: string): void {
    if (!this.byRun.has(runId) && this.broad.size === 0) return;
    const current = this.reading.get(runId);
    if (current) {
      current.again = true;
      return;
    }
    const state = { again: false };
    this.reading.set(runId, state);
    void this.read(runId, state);
  }

  /** After a LISTEN reconnect: every subscriber gets a fresh state of what it watches. */
  async resync(lostAt: Date): Promise<void> {
    for (const runId of this.byRun.keys()) this.changed(runId);
    if (this.broad.size === 0) return;
    const filters = [...this.broad].map((s) => s.filter.jobKey);
    const jobKeys = filters.includes(null) ? null : [...new Set(filters as string[])];
    const since = new Date(lostAt.getTime() - RESYNC_MARGIN_MS);
    try {
      for (const runId of await runsMovedSince(this.reader, jobKeys, since, RESYNC_LIMIT)) this.changed(runId);
    } catch (error) {
      this.log.warn({ err: error }, 'realtime_resync_failed');
    }
  }

  /** When the run's latest state was handed to subscribers (performance.now()); -Infinity if not lately. */
  deliveredAt(runId: string): number {
    return this.delivered.get(runId) ?? Number.NEGATIVE_INFINITY;
  }

  /** Open runChanged subscriptions in this process. */
  subscriberCount(): number {
    let count = this.broad.size;
    for (const set of this.byRun.values()) count += set.size;
    return count;
  }

  /** Ends every subscription, and each later one at once. */
  close(): void {
    this.closed = true;
    for (const set of [...this.byRun.values()]) for (const s of [...set]) s.stream.close();
    for (const s of [...this.broad]) s.stream.close();
  }

  private async read(runId: string, state: { again: boolean }): Promise<void> {
    try {
      do {
        state.again = false;
        let run: RunRecord;
        try {
          run = await getRun(this.reader, runId);
        } catch (error) {
          // a notification may name a run that does not exist (NiFi events have no foreign key)
          if (error instanceof DomainError && error.code === 'RUN_NOT_FOUND') return;
          throw error;
        }
        this.deliver(run);
      } while (state.again);
    } catch (error) {
      this.log.warn({ err: error, runId }, 'realtime_reread_failed');
    } finally {
      this.reading.delete(runId);
    }
  }

  private deliver(run: RunRecord): void {
    const at = performance.now();
    // delivery times are needed only while subscribers may still be resolving an event (shared-reader.ts)
    if (this.delivered.size > 10_000) for (const [id, t] of this.delivered) if (at - t > DELIVERY_MEMORY_MS) this.delivered.delete(id);
    this.delivered.set(run.runId, at);
    const wants = (s: Subscriber) => !s.filter.jobKey || s.filter.jobKey === run.jobKey;
    for (const s of this.byRun.get(run.runId) ?? []) if (wants(s)) s.stream.push(run.runId, run);
    for (const s of this.broad) if (wants(s)) s.stream.push(run.runId, run);
  }
}
