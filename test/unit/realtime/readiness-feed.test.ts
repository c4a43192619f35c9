// ReadinessFeed alone, over a reader of its own: what it reads when, and what its subscribers get.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Readiness } from '../../../src/domain/gate/ledger.js';
import { ReadinessFeed } from '../../../src/realtime/readiness-feed.js';

function fakeReader() {
  const reads: string[] = [];
  let version = 0;
  let gate: (() => void) | undefined;
  let blocked: Promise<void> | undefined;
  return {
    reads,
    /** Holds the next reads until released. */
    hold() {
      blocked = new Promise((resolve) => {
        gate = resolve;
      });
    },
    release() {
      gate?.();
      blocked = undefined;
    },
    async read(consumer: string, businessDate: string): Promise<Readiness> {
      reads.push(`${consumer} ${businessDate}`);
      await blocked;
      version += 1;
      return { consumer, businessDate, gateDefined: true, ready: version % 2 === 0, jobs: [] };
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('ReadinessFeed', () => {
  it('reads a watched key once per notification, folds the ones that arrive during a read into one more, ignores others', async () => {
    const reader = fakeReader();
    const feed = new ReadinessFeed(reader.read, pino({ level: 'silent' }));
    const stream = feed.subscribe('sales', '2026-10-23');
    await settle();
    expect(reader.reads).toEqual(['sales 2026-10-23']); // the current state first

    reader.hold();
    feed.changed('sales 2026-10-23');
    for (let i = 0; i < 5; i++) feed.changed('sales 2026-10-23');
    feed.changed('nobody 2026-10-23');
    reader.release();
    await settle();
    expect(reader.reads).toEqual(['sales 2026-10-23', 'sales 2026-10-23', 'sales 2026-10-23']);
    // the subscriber holds the latest state only (a newer one supersedes an undelivered one)
    expect((await stream.next()).value).toMatchObject({ consumer: 'sales', businessDate: '2026-10-23' });
    feed.close();
    expect((await stream.next()).done).toBe(true);
  });

  it('re-reads every watched key after a reconnect, and forgets a key whose last subscriber left', async () => {
    const reader = fakeReader();
    const feed = new ReadinessFeed(reader.read, pino({ level: 'silent' }));
    const one = feed.subscribe('a', '2026-10-23');
    feed.subscribe('b', '2026-10-24');
    await settle();
    reader.reads.length = 0;
    feed.resync();
    await settle();
    expect(reader.reads.sort()).toEqual(['a 2026-10-23', 'b 2026-10-24']);

    await one.return();
    reader.reads.length = 0;
    feed.resync();
    await settle();
    expect(reader.reads).toEqual(['b 2026-10-24']);
    feed.close();
    // a subscription after close ends at once
    expect((await feed.subscribe('c', '2026-10-25').next()).done).toBe(true);
  });
});
