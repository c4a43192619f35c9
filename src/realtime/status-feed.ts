import { EventStream } from './stream.js';

export interface RealtimeStatus {
  /** The server receives change notifications: what subscriptions show is current. */
  live: boolean;
  /** Since when `live` has held. */
  since: Date;
}

/**
 * realtimeStatus: whether this process's LISTEN connection is up. While it is down (a database outage)
 * subscriptions stay open but nothing reaches them, so a console must show its data as stale rather than live.
 */
export class StatusFeed {
  private readonly streams = new Set<EventStream<RealtimeStatus>>();
  private status: RealtimeStatus;
  private closed = false;

  constructor(live: boolean) {
    this.status = { live, since: new Date() };
  }

  /** The current status first, then every change. */
  subscribe(): EventStream<RealtimeStatus> {
    const stream: EventStream<RealtimeStatus> = new EventStream<RealtimeStatus>(() => this.streams.delete(stream));
    if (this.closed) {
      stream.close();
      return stream;
    }
    this.streams.add(stream);
    stream.push('status', this.status);
    return stream;
  }

  /** The LISTEN connection came up (`live`) or was lost (at `at`). */
  set(live: boolean, at = new Date()): void {
    if (live === this.status.live) return;
    this.status = { live, since: at };
    for (const stream of this.streams) stream.push('status', this.status);
  }

  close(): void {
    this.closed = true;
    for (const stream of [...this.streams]) stream.close();
  }
}
