import type { Logger } from 'pino';
import type { Readiness } from '../domain/gate/ledger.js';
import { EventStream } from './stream.js';

interface Watched {
  consumer: string;
  businessDate: string;
  streams: Set<EventStream<Readiness>>;
  reading: { again: boolean } | null;
}

/**
 * readinessChanged: a consumer's readiness for a business date, re-read once for all of this process's
 * subscribers to it when a decision about it committed (lc_readiness_changed, payload "consumer businessDate"),
 * and re-reads of one key never overlap, so subscribers see its decisions in commit order.
 */
export class ReadinessFeed {
  private readonly watched = new Map<string, Watched>();
  private closed = false;

  constructor(
    private readonly read: (consumer: string, businessDate: string) => Promise<Readiness>,
    private readonly log: Logger,
  ) {}

  /** The current readiness first, then after every decision. */
  subscribe(consumer: string, businessDate: string): EventStream<Readiness> {
    const key = `${consumer} ${businessDate}`;
    const entry = this.watched.get(key) ?? { consumer, businessDate, streams: new Set(), reading: null };
    const stream: EventStream<Readiness> = new EventStream<Readiness>(() => {
      entry.streams.delete(stream);
      if (entry.streams.size === 0) this.watched.delete(key);
    });
    if (this.closed) {
      stream.close();
      return stream;
    }
    entry.streams.add(stream);
    this.watched.set(key, entry);
    this.changed(key);
    return stream;
  }

  /** A notification's payload: re-read the key if anyone here watches it. */
  changed(key: string): void {
    const entry = this.watched.get(key);
    if (!entry) return;
    if (entry.reading) {
      entry.reading.again = true;
      return;
    }
    entry.reading = { again: false };
    void this.reread(entry, entry.reading);
  }

  /** After a LISTEN reconnect: every watched key is read again (decisions meanwhile were not notified here). */
  resync(): void {
    for (const key of this.watched.keys()) this.changed(key);
  }

  close(): void {
    this.closed = true;
    for (const entry of [...this.watched.values()]) for (const stream of [...entry.streams]) stream.close();
  }

  private async reread(entry: Watched, state: { again: boolean }): Promise<void> {
    try {
      do {
        state.again = false;
        const current = await this.read(entry.consumer, entry.businessDate);
        for (const stream of entry.streams) stream.push('readiness', current);
      } while (state.again);
    } catch (error) {
      this.log.warn({ err: error, consumer: entry.consumer, businessDate: entry.businessDate }, 'realtime_readiness_read_failed');
    } finally {
      entry.reading = null;
    }
  }
}
