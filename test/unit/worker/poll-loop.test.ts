import { describe, expect, it } from 'vitest';
import { createPollLoop } from '../../../src/worker/poll-loop.js';

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

/** A loop over held passes, started, with its first pass begun and not yet ended. */
async function inFirstPass() {
  const passes = heldPasses();
  const loop = createPollLoop({ pass: passes.pass, intervalMs: HOUR, onError: () => undefined });
  loop.start();
  await passes.untilBegun(1);
  return { passes, loop };
}

describe('poll loop', () => {
  it.each([
    ['pausing after a pass', true],
    ['in a pass (the next pass starts right after it)', false],
  ])('starts the next pass at once on a wake-up that finds it %s, instead of pausing an hour', async (_, pausing) => {
    const { passes, loop } = await inFirstPass();
    if (pausing) {
      passes.release();
      await expect.poll(() => loop.lastPassAt()).not.toBeNull();
      loop.wake();
    } else {
      loop.wake();
      passes.release();
    }
    await passes.untilBegun(2);
    expect(passes.begun()).toBe(2);
    passes.release();
    await loop.stop();
  });

  it('lets the pass in flight finish on stop, then runs no other', async () => {
    const { passes, loop } = await inFirstPass();
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
