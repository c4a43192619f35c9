/**
 * The events of one subscription, pulled by its SSE response. Events carry a key and a newer event
 * replaces (or is merged into) an undelivered one with the same key (a run's latest state supersedes the one before), so
 * a slow client holds at most one pending event per key and never sees a state older than one it
 * already saw. `limit` bounds the distinct keys held: beyond it the oldest pending event is dropped.
 */
export class EventStream<T> implements AsyncIterableIterator<T> {
  private readonly pending = new Map<string, T>();
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private done = false;

  constructor(
    private readonly onClose: () => void,
    private readonly limit = 1000,
    /** Folds an undelivered event and a newer one with the same key into one (default: the newer replaces it). */
    private readonly merge: (older: T, newer: T) => T = (_older, newer) => newer,
  ) {}

  get closed(): boolean {
    return this.done;
  }

  push(key: string, value: T): void {
    if (this.done) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value, done: false });
      return;
    }
    if (!this.pending.has(key) && this.pending.size >= this.limit) {
      this.pending.delete(this.pending.keys().next().value as string);
    }
    const older = this.pending.get(key);
    this.pending.set(key, older === undefined ? value : this.merge(older, value));
  }

  next(): Promise<IteratorResult<T>> {
    const first = this.pending.entries().next();
    if (!first.done) {
      this.pending.delete(first.value[0]);
      return Promise.resolve({ value: first.value[1], done: false });
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Ends the subscription: a waiting pull completes, pending events are dropped. */
  close(): void {
    if (this.done) return;
    this.done = true;
    this.pending.clear();
    this.onClose();
    const resolve = this.waiting;
    this.waiting = undefined;
    resolve?.({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
