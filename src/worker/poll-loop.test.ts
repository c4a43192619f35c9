import { describe, expect, it } from 'vitest';
import { createPollLoop } from './poll-loop.js';

const HOUR = 3_600_000;

/** A pass that waits until the test lets it end, counting the passes begun. */
function heldPasses() {
  let begun = 0;
  let release: (() => void) | undefined;
  let onBegin: (() => void) | undefined;
  return {
    pass: () =>
      new Promise<void>((resolve) => {
        begun++;
        release = resolve;
        onBegin?.();
      }),
    begun: () => begun,
    release: () => release?.(),
    /** Resolves once pass number n has begun. */
    untilBegun: (n: number) =>
      new Promise<void>((resolve) => {
        if (begun >= n) return resolve();
        onBegin = () => {
          if (begun >= n) resolve();
        };
      }),
  };
}

describe('poll loop', () => {
  it('starts the next pass at once on a wake-up instead of pausing for the interval', async () => {
    const passes = heldPasses();
    const loop = createPollLoop({ pass: passes.pass, intervalMs: HOUR, onError: () => undefined });
    loop.start();
    await passes.untilBegun(1);
    passes.release();
    await expect.poll(() => loop.lastPassAt()).not.toBeNull();
    loop.wake();
    await passes.untilBegun(2);
    expect(passes.begun()).toBe(2);
    passes.release();
    await loop.stop();
  });

  it('runs one more pass for a wake-up that arrived during a pass', async () => {
    const passes = heldPasses();
    const loop = createPollLoop({ pass: passes.pass, intervalMs: HOUR, onError: () => undefined });
    loop.start();
    await passes.untilBegun(1);
    loop.wake();
    passes.release();
    await passes.untilBegun(2);
    expect(passes.begun()).toBe(2);
    passes.release();
    await loop.stop();
  });

  it('lets the pass in flight finish on stop, then runs no other, and ends a pause at once', async () => {
    const passes = heldPasses();
    const loop = createPollLoop({ pass: passes.pass, intervalMs: HOUR, onError: () => undefined });
    loop.start();
    await passes.untilBegun(1);
    expect(loop.passing()).not.toBeNull();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    passes.release();
    await stopping;
    expect(passes.begun()).toBe(1);
    expect(loop.passing()).toBeNull();
    expect(loop.lastPassAt()).toBeInstanceOf(Date);
  });

  it('hands a failed pass to onError and goes on with the next', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    const loop = createPollLoop({
      pass: async () => {
        passes++;
        if (passes === 1) throw new Error('database unavailable');
      },
      intervalMs: HOUR,
      onError: (error) => errors.push(error),
    });
    loop.start();
    await expect.poll(() => errors.length).toBe(1);
    loop.wake();
    await expect.poll(() => passes).toBe(2);
    await loop.stop();
    expect((errors[0] as Error).message).toBe('database unavailable');
  });
});
