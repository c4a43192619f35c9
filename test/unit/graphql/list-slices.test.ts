// Long lists are completed across event-loop turns, in order, and a failing item is an error in the answer,
// not an unhandled rejection. A small schema executed by Yoga (the executor the API runs), no database.
import { createSchema, createYoga } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { inSlices, LIST_SLICE } from '../../../src/graphql/list-slices.js';

async function run(count: number, root: { items: () => unknown }): Promise<{ data?: any; errors?: Array<{ path: unknown[] }> }> {
  const schema = createSchema({
    typeDefs: 'type Item { n: Int! half: Int! } type Query { items(count: Int!): [Item!] }',
    resolvers: { Query: root },
  });
  const yoga = createYoga({ schema, maskedErrors: false, logging: false });
  const response = await yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: `{ items(count: ${count}) { n half } }` }),
  });
  return response.json();
}

describe('inSlices', () => {
  it('hands a list longer than a slice to the executor in turns: a timer set at the start fires before the answer is complete', async () => {
    const count = LIST_SLICE * 8;
    const turns: string[] = [];
    const items = Array.from({ length: count }, (_, n) => ({ n, half: () => Math.floor(n / 2) }));
    setImmediate(() => turns.push('other work'));
    const result = run(count, { items: () => inSlices(items) }).then((r) => {
      turns.push('answer');
      return r;
    });
    const { data, errors } = await result;
    expect(errors).toBeUndefined();
    expect(turns).toEqual(['other work', 'answer']);
    expect((data!.items as Array<{ n: number }>).map((i) => i.n)).toEqual(items.map((i) => i.n));
  });

  it('a plain array of the same length is completed in one pass, before any other work (why inSlices exists)', async () => {
    const count = LIST_SLICE * 8;
    const turns: string[] = [];
    setImmediate(() => turns.push('other work'));
    const items = Array.from({ length: count }, (_, n) => ({ n, half: Math.floor(n / 2) }));
    await run(count, { items: () => items }).then(() => turns.push('answer'));
    expect(turns).toEqual(['answer']);
  });

  it('keeps a short list as it is, and an empty one empty', () => {
    const short = [{ n: 1 }, { n: 2 }];
    expect(inSlices(short)).toEqual(short);
    expect(inSlices([])).toEqual([]);
  });

  it('an item failing in a later slice is a located error of the answer, and the process sees no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const count = LIST_SLICE * 3;
      const items = Array.from({ length: count }, (_, n) => ({
        n,
        // an item completed asynchronously, failing: its rejection must be awaited by the answer
        half: async () => {
          if (n === 10 || n === LIST_SLICE * 2 + 5) throw new Error(`item ${n} failed`);
          return n;
        },
      }));
      const { data, errors } = await run(count, { items: () => inSlices(items) });
      await new Promise((r) => setTimeout(r, 20));
      // Item! is non-null: a failing item nulls the nullable list, with each error at its path
      expect(data).toEqual({ items: null });
      expect(errors!.map((e) => e.path)).toContainEqual(['items', 10, 'half']);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
