import { setImmediate as nextTurn } from 'node:timers/promises';

/** Items completed per event-loop turn: ~250 partitions with every field take ~2 ms. */
export const LIST_SLICE = 250;

/**
 * A list handed to the executor in slices, one per event-loop turn.
 *
 * The executor completes a list of plain values in one synchronous pass: the console's page of a
 * 10,000-partition run held the event loop for ~450 ms, and /healthz (and every other request) waited
 * behind it. An item that is a promise is completed when it settles, so the items after the first slice
 * are promises settled one slice per turn, and I/O gets in between. Not an async iterable: the executor
 * collects those items' completions only after the last one, and a failure in an earlier item meanwhile
 * is an unhandled rejection, which ends the process.
 */
export function inSlices<T>(items: readonly T[], slice = LIST_SLICE): Array<T | Promise<T>> {
  const sliced: Array<T | Promise<T>> = items.slice(0, slice);
  let turn: Promise<unknown> = Promise.resolve();
  for (let start = slice; start < items.length; start += slice) {
    turn = turn.then(() => nextTurn());
    const ready = turn;
    for (const item of items.slice(start, start + slice)) sliced.push(ready.then(() => item));
  }
  return sliced;
}
