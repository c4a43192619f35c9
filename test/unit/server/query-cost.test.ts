// The cost limit alone, through yoga.fetch on a small schema whose costs are declared as the real schema
// declares them (src/graphql/cost.ts): no database, no HTTP server.
import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_QUERY_COST } from '../../../src/graphql/cost.js';
import { capturingLogger, executed, post, smallYoga } from '../../support/small-api.js';
import { useErrorEnvelope } from '../../../src/server/error-envelope.js';
import { useQueryCost } from '../../../src/server/query-cost.js';

const yoga = smallYoga([useQueryCost(), useErrorEnvelope(capturingLogger().log)]);
beforeEach(() => {
  executed.length = 0;
});

/**
 * An item of items(first) costs 1 + its fields; children holds an estimate of 10 items:
 * DEEP costs 1 + 1 + 10 × (1 + 1 + 10 × (1 + 1 + 10 × 2)) = 2,222 an item.
 */
const DEEP = 'id children { id children { id children { id name } } }';
const costOfPage = (first: number) => 1 + first * 2_222;

describe('the cost limit', () => {
  it(`refuses a request costing more than ${MAX_QUERY_COST} with 400 QUERY_TOO_COSTLY, its cost and the limit, before anything runs`, async () => {
    expect(costOfPage(113)).toBeGreaterThan(MAX_QUERY_COST);
    const res = await post(yoga, `{ items(first: 113) { ${DEEP} } }`);
    expect([res.status, res.code, res.headers.get('x-error-code')]).toEqual([400, 'QUERY_TOO_COSTLY', 'QUERY_TOO_COSTLY']);
    expect(res.details).toEqual({ cost: costOfPage(113), maxCost: MAX_QUERY_COST });
    expect(res.body.errors![0]!.message).toBe(
      `the request costs ${costOfPage(113)}, more than the limit of ${MAX_QUERY_COST}: ask for fewer items or fields`,
    );
    expect(res.body.data).toBeUndefined();
    expect(executed).toEqual([]);
  });

  it('lets a request within the limit run', async () => {
    expect(costOfPage(112)).toBeLessThanOrEqual(MAX_QUERY_COST);
    const res = await post(yoga, `{ items(first: 112) { ${DEEP} } }`);
    expect(res.status).toBe(200);
    expect(res.body.data!.items).toHaveLength(112);
  });

  it('adds up aliases: twenty small pages cost as much as one large one', async () => {
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: items(first: 6) { ${DEEP} }`).join(' ');
    const res = await post(yoga, `{ ${aliases} }`);
    expect([res.status, res.code, res.details?.cost]).toEqual([400, 'QUERY_TOO_COSTLY', 20 * costOfPage(6)]);
  });

  it('counts a list by the page its variables ask for, request by request', async () => {
    const query = `query($n: Int) { items(first: $n) { ${DEEP} } }`;
    expect((await post(yoga, query, { variables: { n: 1 } })).status).toBe(200);
    const large = await post(yoga, query, { variables: { n: 500 } });
    expect([large.status, large.code, large.details?.cost]).toEqual([400, 'QUERY_TOO_COSTLY', costOfPage(500)]);
    // the same document with a small page again: the refusal was not cached for the document
    expect((await post(yoga, query, { variables: { n: 1 } })).status).toBe(200);
  });

  it("costs the operation that runs, not the document's first", async () => {
    const document = `query Cheap { items(first: 1) { id } } query Costly { items(first: 500) { ${DEEP} } }`;
    expect((await post(yoga, document, { operationName: 'Cheap' })).status).toBe(200);
    expect((await post(yoga, document, { operationName: 'Costly' })).code).toBe('QUERY_TOO_COSTLY');
  });

  it('counts each spread of a fragment chain in one linear walk: 2^48 is refused', async () => {
    // a walk that followed every spread would visit 2^48 of them and never answer: the test's timeout is the bound
    const levels = 48;
    const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`);
    const chain = await post(yoga, `query { ...F0 } ${fragments.join(' ')} fragment F${levels} on Query { __typename }`);
    expect([chain.status, chain.code, chain.details?.cost]).toEqual([400, 'QUERY_TOO_COSTLY', 2 ** 48]);
  });

  it('leaves variables that do not coerce to execution, which reports them as 400', async () => {
    const res = await post(yoga, 'query($n: Int) { items(first: $n) { id } }', { variables: { n: 'many' } });
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it('refuses a costly subscription the same way, before it starts', async () => {
    const subscribe = (first: number) =>
      yoga.fetch(
        'http://test/graphql',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ query: `subscription { itemAdded(first: ${first}) { ${DEEP} } }` }),
        },
        { actor: null },
      );
    const costly = await subscribe(500);
    expect([costly.status, costly.headers.get('x-error-code')]).toEqual([400, 'QUERY_TOO_COSTLY']);
    expect(await costly.text()).toContain('"code":"QUERY_TOO_COSTLY"');
    expect(executed).toEqual([]);
    const cheap = await subscribe(1);
    expect(cheap.status).toBe(200);
    expect(await cheap.text()).toContain('"itemAdded":[{"id":"0"');
    expect(executed).toEqual(['itemAdded']);
  });
});
