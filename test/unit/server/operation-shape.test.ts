// The limits on a document (tokens, parse nesting, depth, aliases) and its one bounded walk (fragment cycles,
// expansion, breadth), alone through yoga.fetch on a small schema: no database, no HTTP server.
import { parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { capturingLogger, post, smallYoga } from '../../support/small-api.js';
import { useRootFieldAuth } from '../../../src/server/auth.js';
import { useErrorEnvelope } from '../../../src/server/error-envelope.js';
import {
  DOCUMENT_LIMITS,
  MAX_EXPANDED_FIELDS,
  MAX_SELECTION_BREADTH,
  operationShape,
  useDocumentLimits,
} from '../../../src/server/operation-shape.js';

// the walk runs inside the root-field auth check, as in app.ts
const yoga = smallYoga([...useDocumentLimits(), useRootFieldAuth(), useErrorEnvelope(capturingLogger().log)]);

const nest = (depth: number) => `{ __schema { types { ${'ofType { '.repeat(depth)}name${' }'.repeat(depth)} } } }`;

describe('document limits', () => {
  it(`limits depth to ${DOCUMENT_LIMITS.depth}, introspection included`, async () => {
    expect((await post(yoga, nest(15))).status).toBe(200);
    const deep = await post(yoga, nest(25));
    expect([deep.status, deep.code, deep.headers.get('x-error-code')]).toEqual([400, 'BAD_REQUEST', 'BAD_REQUEST']);
  });

  it(`limits a document to ${DOCUMENT_LIMITS.tokens} tokens`, async () => {
    // five tokens a level, nothing broad or deep: 4,988 tokens
    const nested = (levels: number) => `{ ${'... on Query { '.repeat(levels)}hello${' }'.repeat(levels)} }`;
    expect((await post(yoga, nested(997))).body).toEqual({ data: { hello: 'world' } });
    const tokens = await post(yoga, `{ items(first: 1) { ${'id '.repeat(6000)} } }`);
    expect([tokens.status, tokens.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it(`limits a document to ${DOCUMENT_LIMITS.aliases} aliases`, async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: hello`).join(' ')} }`;
    expect((await post(yoga, aliases(DOCUMENT_LIMITS.aliases))).status).toBe(200);
    const res = await post(yoga, aliases(25));
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it('answers a literal nested deeper than the recursive parser can go, within the token limit, with 400 and no stack overflow', async () => {
    const res = await post(yoga, `{ items(first: ${'['.repeat(2400)}1${']'.repeat(2400)}) { id } }`);
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
    expect(res.body.errors![0]!.message).toBe('the document is nested too deeply to parse');
  });
});

/** Fragments that really expand: each selects the next under two aliases of a field, 2^levels fields in all. */
function aliasedFragmentChain(levels: number): string {
  const fragments = Array.from(
    { length: levels },
    (_, i) => `fragment T${i} on __Type { a: ofType { ...T${i + 1} } b: ofType { ...T${i + 1} } }`,
  );
  return `{ __schema { types { ...T0 } } } ${fragments.join(' ')} fragment T${levels} on __Type { name }`;
}

describe('the one walk over an operation', () => {
  it.each([
    ['a fragment spreading itself', 'query { ...A } fragment A on Query { hello ...A }'],
    ['two fragments spreading each other', 'query { ...A } fragment A on Query { ...B } fragment B on Query { hello ...A }'],
    [
      'a long cycle',
      `query { ...C0 } ${Array.from({ length: 30 }, (_, i) => `fragment C${i} on Query { hello ...C${(i + 1) % 30} }`).join(' ')}`,
    ],
    ['a cycle inside a field', 'query { items(first: 1) { ...R } } fragment R on Item { id ...S } fragment S on Item { ...R }'],
    ['a cycle no operation reaches', 'query { hello } fragment A on Query { ...B } fragment B on Query { ...A }'],
  ])('answers %s with 400 BAD_REQUEST', async (_name, query) => {
    const res = await post(yoga, query);
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it(`refuses fragments that expand beyond ${MAX_EXPANDED_FIELDS} fields with 400 QUERY_TOO_COSTLY`, async () => {
    const res = await post(yoga, aliasedFragmentChain(24));
    expect([res.status, res.code, res.details]).toEqual([400, 'QUERY_TOO_COSTLY', { maxExpandedFields: MAX_EXPANDED_FIELDS }]);
  });

  it(`refuses a selection set broader than ${MAX_SELECTION_BREADTH} fields, written out or gathered from fragments`, async () => {
    const repeated = await post(yoga, `{ items(first: 1) { ${'children { id } '.repeat(500)} } }`);
    expect([repeated.status, repeated.code, repeated.details]).toEqual([
      400,
      'QUERY_TOO_COSTLY',
      { maxSelectionBreadth: MAX_SELECTION_BREADTH },
    ]);
    const spreads = Array.from({ length: 300 }, (_, i) => `...F${i}`).join(' ');
    const fragments = Array.from({ length: 300 }, (_, i) => `fragment F${i} on Item { id }`).join(' ');
    const gathered = await post(yoga, `{ items(first: 1) { ${spreads} } } ${fragments}`);
    expect([gathered.status, gathered.code]).toEqual([400, 'QUERY_TOO_COSTLY']);
    // one fragment spread many times is merged by execution, and counted once
    const merged = await post(yoga, `{ items(first: 1) { ${'...R '.repeat(300)} } } fragment R on Item { id }`);
    expect(merged.body).toEqual({ data: { items: [{ id: '0' }] } });
  });
});

describe('operationShape', () => {
  const operationOf = (document: string) => {
    const ast = parse(document);
    return { ast, operation: ast.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')! };
  };

  it('gives the root fields after fragment expansion by response key, and the expanded field count', () => {
    const { ast, operation } = operationOf(
      '{ hello greeting: hello ...F ... on Query { items { id name } } } fragment F on Query { operatorOnly }',
    );
    const shape = operationShape(ast, operation);
    expect([...shape.rootFields]).toEqual([
      ['hello', 'hello'],
      ['greeting', 'hello'],
      ['operatorOnly', 'operatorOnly'],
      ['items', 'items'],
    ]);
    expect(shape.expandedFields).toBe(6);
  });

  it('walks a chain of fragments each spreading the next twice in time linear in its length', () => {
    // as long as the token limit lets a chain be
    const levels = 500;
    const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i} on Item { a: children { ...F${i + 1} } }`);
    const { ast, operation } = operationOf(`{ items { ...F0 ...F0 } } ${fragments.join(' ')} fragment F${levels} on Item { id }`);
    expect(operationShape(ast, operation).expandedFields).toBe(levels + 2);
    const cycle = operationOf('{ ...A } fragment A on Query { ...B } fragment B on Query { ...C } fragment C on Query { ...A }');
    expect(() => operationShape(cycle.ast, cycle.operation)).toThrow('fragment cycle: A → B → C → A');
  });
});
