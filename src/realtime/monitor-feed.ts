import type { Logger } from 'pino';
import type { Alert, MonitorSummary } from '../domain/monitor/monitor-summary.js';
import { EventStream } from './stream.js';

/** The summary with the longest alert list any subscriber may ask for; each gets its own prefix of it. */
export const MAX_ALERT_LIMIT = 500;

export interface MonitorFeedOptions {
  /** monitorSummary with MAX_ALERT_LIMIT alerts. */
  read(): Promise<MonitorSummary>;
  log: Logger;
  /** Least time between two re-reads: notifications in between are folded into one. */
  coalesceMs?: number;
  /**
   * Re-read this often while anyone subscribes, even without notifications: staleness (RUN_STALE), the
   * recent window and cleanup due change with the clock, and progress resuming has no notification here.
   */
  refreshMs?: number;
}

interface SummarySubscriber {
  alertLimit: number;
  last: string | undefined;
  stream: EventStream<MonitorSummary>;
}

/** One alert's identity: a new `at` (a new failure, a later event, a run stale again) is a new alert. */
function alertKey(a: Alert): string {
  return [a.kind, a.runId, a.dispatchId, a.partitionId, a.jobKey, a.businessKey, a.at ? new Date(a.at).toISOString() : ''].join('|');
}

/**
 * monitorSummaryChanged and alertRaised. Both come from re-reading the monitor summary (the same query as
 * the monitorSummary field), coalesced: a subscriber gets the summary when its view of it changed, and
 * alertRaised gets every alert that was not in the previous read. Diffing reads rather than relaying
 * events also recovers alerts raised while the LISTEN connection was down.
 */
export class MonitorFeed {
  private readonly summaries = new Set<SummarySubscriber>();
  private readonly alertStreams = new Set<EventStream<Alert>>();
  private known: Set<string> | undefined;
  private running: Promise<void> | undefined;
  private dirty = false;
  private lastRead = 0;
  private timer: NodeJS.Timeout | undefined;
  private refresher: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly coalesceMs: number;
  private readonly refreshMs: number;

  constructor(private readonly options: MonitorFeedOptions) {
    this.coalesceMs = options.coalesceMs ?? 500;
    this.refreshMs = options.refreshMs ?? 15_000;
  }

  /** The current summary at once, then whenever it changed. */
  subscribeSummary(alertLimit: number): EventStream<MonitorSummary> {
    const subscriber: SummarySubscriber = {
      alertLimit,
      last: undefined,
      stream: new EventStream<MonitorSummary>(() => {
        this.summaries.delete(subscriber);
        this.idle();
      }),
    };
    if (this.closed) {
      subscriber.stream.close();
      return subscriber.stream;
    }
    this.summaries.add(subscriber);
    this.startRefreshing();
    this.changed();
    return subscriber.stream;
  }

  /** Alerts raised from now on. The alerts present now are read before this resolves, as the baseline. */
  async subscribeAlerts(): Promise<EventStream<Alert>> {
    if (!this.known && !this.closed) await this.refresh();
    const stream: EventStream<Alert> = new EventStream<Alert>(() => {
      this.alertStreams.delete(stream);
      this.idle();
    });
    if (this.closed) {
      stream.close();
      return stream;
    }
    this.alertStreams.add(stream);
    this.startRefreshing();
    return stream;
  }

  /** Something the summary shows may have changed. */
  changed(): void {
    if (this.closed || (this.summaries.size === 0 && this.alertStreams.size === 0)) return;
    this.dirty = true;
    if (this.running || this.timer) return;
    const wait = this.lastRead + this.coalesceMs - Date.now();
    if (wait <= 0) void this.refresh();
    else
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.refresh();
      }, wait);
  }

  /** After a LISTEN reconnect: every summary subscriber gets the current summary, changed or not. */
  resync(): void {
    for (const s of this.summaries) s.last = undefined;
    this.changed();
  }

  subscriberCount(): number {
    return this.summaries.size + this.alertStreams.size;
  }

  /** Ends every subscription, and each later one at once. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.refresher);
    for (const s of [...this.summaries]) s.stream.close();
    for (const s of [...this.alertStreams]) s.close();
  }

  private refresh(): Promise<void> {
    this.running ??= this.read().finally(() => {
      this.running = undefined;
      if (this.dirty) this.changed();
    });
    return this.running;
  }

  private async read(): Promise<void> {
    this.dirty = false;
    this.lastRead = Date.now();
    let summary: MonitorSummary;
    try {
      summary = await this.options.read();
    } catch (error) {
      this.options.log.warn({ err: error }, 'realtime_monitor_read_failed');
      return;
    }
    const keys = new Set(summary.alerts.map(alertKey));
    if (this.known) {
      for (const alert of summary.alerts) {
        if (this.known.has(alertKey(alert))) continue;
        for (const stream of this.alertStreams) stream.push(alertKey(alert), alert);
      }
    }
    this.known = keys;
    for (const s of this.summaries) {
      const view = { ...summary, alerts: summary.alerts.slice(0, s.alertLimit) };
      const { serverTime: _time, ...compared } = view;
      const json = JSON.stringify(compared);
      if (json === s.last) continue;
      s.last = json;
      s.stream.push('summary', view);
    }
  }

  private startRefreshing(): void {
    if (this.refresher) return;
    this.refresher = setInterval(() => this.changed(), this.refreshMs);
    this.refresher.unref();
  }

  /** Nobody listens any more: stop the clock, and forget the baseline (it would go stale). */
  private idle(): void {
    if (this.summaries.size > 0 || this.alertStreams.size > 0) return;
    clearInterval(this.refresher);
    this.refresher = undefined;
    this.known = undefined;
  }
}
