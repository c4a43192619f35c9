// Fuzzing every mutation: requests generated from the schema (introspected over HTTP) by mutating a valid
// input of each — required fields dropped, nulls, wrong types, over-long strings, out-of-range numbers, bad
// UUIDs, dates and decimals, unknown fields, deeply nested JSON, huge arrays, random unicode — plus wrong
// tokens and malformed HTTP bodies, against a database seeded with runs in every state. No answer may be a
// 5xx, and a fingerprint of every nifi_ops table (row count and a hash of the rows) must be unchanged after
// every rejected (4xx) request, except for the refusals the contract records on purpose.
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  parse,
  typeFromAST,
  type GraphQLInputObjectType,
  type OperationDefinitionNode,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generator } from '../../sim/random.js';
import { ERROR_HTTP_STATUS, type ErrorCode } from '../../src/contract/errors.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { createRun, manifestInput } from '../support/fixtures.js';
import { changedTables, pooled, postGraphql, prepareFuzzWorld, type FuzzWorld } from '../support/fuzz-world.js';
import { sized } from '../support/test-size.js';

const SEED = 20260601;
/** Every single-field variant, then random combinations of them up to this many cases in all. */
const TOTAL_CASES = sized(3_000, 10_500);
const CONCURRENCY = 16;
const BATCH = 48;

/** Refusals that record something on purpose (contract): the tables they may change. */
const RECORDED_REFUSALS: Record<string, string[]> = {
  MANIFEST_INVALID: ['load_run', 'load_event'], // FAILED_MANIFEST is committed, then 422
  DEPENDENCIES_NOT_READY: ['load_event'], // the WARN event the operators' alert is made of
  CHUNK_CONFLICT: ['load_event'], // an alert: a changed chunk of a successful partition
};

interface Case {
  mutation: string;
  label: string;
  /** The request as sent: a GraphQL document and variables, or a raw body. */
  body: string;
  token: string | null;
  contentType?: string;
  /** Built to be refused before the database (400, 401, 403, 413, 415 or 422): an acceptance is a finding. */
  invalid: boolean;
}

interface Outcome {
  c: Case;
  status: number;
  /** The body's first 256 bytes. */
  head: string;
  /** extensions.code of every error in the body. */
  codes: string[];
  code: string | undefined;
  headerCode: string | null;
}

let world: FuzzWorld;
let api: TestApi;
let schema: GraphQLSchema;
let baselines: FuzzWorld['baselines'];
let roles: FuzzWorld['roles'];

// ---- values ----

type Random = () => number;

function randomUnicode(random: Random, length: number): string {
  const ranges: Array<[number, number]> = [
    [0x20, 0x7e],
    [0xa0, 0x24f],
    [0x370, 0x3ff],
    [0x590, 0x6ff],
    [0x300, 0x36f],
    [0x4e00, 0x9fff],
    [0x1f300, 0x1faff],
    [0x200b, 0x200f],
    [0x1, 0x1f],
    [0xfff0, 0xffff],
  ];
  let text = '';
  for (let i = 0; i < length; i++) {
    const [lo, hi] = ranges[Math.floor(random() * ranges.length)]!;
    text += String.fromCodePoint(lo + Math.floor(random() * (hi - lo + 1)));
  }
  return text;
}

interface Variant {
  label: string;
  /** undefined: drop the field. */
  value: unknown;
  invalid: boolean;
}

const DROP = Symbol('drop');
/**
 * A JSON object nested `depth` deep: in inputs as a marker string, spliced into the body as text, because
 * cloning or serialising it as an object would overflow the stack of this process.
 */
function nested(depth: number): { marker: string; text: string } {
  return { marker: `\u2063nested-${depth}\u2063`, text: `${'{"n":'.repeat(depth)}{}${'}'.repeat(depth)}` };
}
const DEEP_JSON = nested(2_000);
const VERY_DEEP_JSON = nested(20_000);

/** Values to put where a value of this type (as declared, with its nullability) belongs. */
function variantsFor(type: GraphQLInputType, sample: unknown, random: Random): Variant[] {
  const required = isNonNullType(type);
  const inner = isNonNullType(type) ? type.ofType : type;
  const v: Variant[] = [
    { label: 'dropped', value: DROP, invalid: required },
    { label: 'null', value: null, invalid: required },
  ];
  if (isListType(inner)) {
    const item = Array.isArray(sample) ? sample[0] : sample;
    v.push(
      { label: 'huge array', value: Array.from({ length: 20_001 }, () => item), invalid: true },
      { label: 'empty array', value: [], invalid: false },
      { label: 'array of nulls', value: [null, null], invalid: isNonNullType(inner.ofType) },
      { label: 'object instead of array', value: { x: 1 }, invalid: true },
      { label: 'nested arrays', value: [[item]], invalid: true },
    );
    return v;
  }
  if (isInputObjectType(inner)) {
    v.push({ label: 'string instead of object', value: 'x', invalid: true }, { label: 'array of numbers', value: [1, 2], invalid: true });
    return v;
  }
  const named = getNamedType(inner);
  const wrongTypes = (kinds: Array<[string, unknown]>) => kinds.map(([label, value]) => ({ label, value, invalid: true }));
  switch (named.name) {
    case 'String':
      v.push(
        ...wrongTypes([
          ['number', 12345],
          ['float', 1.5],
          ['boolean', true],
          ['object', { a: 1 }],
          ['array', ['a']],
        ]),
        { label: 'over-long (100k)', value: 'x'.repeat(100_001), invalid: true },
        { label: '2001 chars', value: 'y'.repeat(2001), invalid: false },
        { label: '201 chars', value: 'z'.repeat(201), invalid: false },
        { label: 'empty', value: '', invalid: false },
        { label: 'blank', value: '   ', invalid: false },
        { label: 'NUL', value: 'a\u0000b', invalid: false },
        { label: 'control characters', value: '\t\r\n\u0007\u001b[31m', invalid: false },
        { label: 'lone surrogate', value: 'a\ud800b', invalid: false },
        { label: 'path traversal', value: '/data/../../etc/passwd', invalid: false },
        { label: 'SQL', value: "x'; DROP TABLE nifi_ops.load_run; --", invalid: false },
        { label: 'random unicode', value: randomUnicode(random, 1 + Math.floor(random() * 40)), invalid: false },
        { label: 'long random unicode', value: randomUnicode(random, 150 + Math.floor(random() * 300)), invalid: false },
      );
      break;
    case 'Boolean':
      v.push(
        ...wrongTypes([
          ['string yes', 'yes'],
          ['string TRUE', 'TRUE'],
          ['empty string', ''],
          ['number 1', 1],
          ['object', {}],
        ]),
        // what a NiFi attribute holds
        { label: 'string true', value: 'true', invalid: false },
        { label: 'string false', value: 'false', invalid: false },
        { label: 'padded string', value: ' true\n', invalid: false },
      );
      break;
    case 'Int':
      v.push(
        ...wrongTypes([
          ['beyond 32 bits', 2 ** 31],
          ['float', 1.5],
          ['string', '5'],
        ]),
        { label: 'negative', value: -1, invalid: false },
      );
      break;
    case 'UUID':
      v.push(
        ...wrongTypes([
          ['not a uuid', 'not-a-uuid'],
          ['no hyphens', randomUUID().replace(/-/g, '')],
          ['braces', `{${randomUUID()}}`],
          ['37 chars', `${randomUUID()}0`],
          ['number', 42],
          ['over-long', 'f'.repeat(100_000)],
          ['unicode', randomUnicode(random, 36)],
        ]),
        { label: 'nil uuid', value: '00000000-0000-0000-0000-000000000000', invalid: false },
        { label: 'random uuid', value: randomUUID(), invalid: false },
        { label: 'upper-case uuid', value: typeof sample === 'string' ? sample.toUpperCase() : randomUUID().toUpperCase(), invalid: false },
      );
      break;
    case 'Long':
      v.push(
        ...wrongTypes([
          ['25 digits', '9'.repeat(25)],
          ['2^63', '9223372036854775808'],
          ['below -2^63', '-9223372036854775809'],
          ['fraction', '1.5'],
          ['float', 2.5],
          ['exponent', '1e3'],
          ['hex', '0x10'],
          ['letters', 'abc'],
          ['empty', ''],
          ['unsafe number', 2 ** 60],
          ['boolean', true],
          ['object', {}],
          ['negative', '-1'],
          ['negative number', -7],
        ]),
        { label: 'zero', value: '0', invalid: false },
        { label: 'max', value: '9223372036854775807', invalid: false },
        { label: 'padded', value: ' 12 ', invalid: false },
        { label: 'number', value: 3, invalid: false },
      );
      break;
    case 'Decimal':
      v.push(
        ...wrongTypes([
          ['39 digits', '9'.repeat(39)],
          ['fraction', '1.5'],
          ['letters', 'abc'],
          ['empty', ''],
          ['double sign', '--1'],
          ['exponent', '1e5'],
          ['float', 0.25],
          ['boolean', false],
        ]),
        { label: '38 digits', value: '9'.repeat(38), invalid: false },
        { label: 'negative', value: '-12', invalid: false },
      );
      break;
    case 'DateTime':
      v.push(
        ...wrongTypes([
          ['words', 'yesterday'],
          ['month 13', '2030-13-01T00:00:00Z'],
          ['date only', '2030-01-01'],
          ['no offset', '2030-01-01T00:00:00'],
          ['number', 1_700_000_000],
          ['over-long', '2'.repeat(5000)],
        ]),
        { label: 'far future', value: '9999-12-31T23:59:59+14:00', invalid: false },
        { label: 'epoch', value: '1970-01-01T00:00:00Z', invalid: false },
      );
      break;
    case 'Date':
      v.push(
        ...wrongTypes([
          ['february 30', '2030-02-30'],
          ['short', '2030-1-1'],
          ['compact', '20300101'],
          ['garbage', '9999-99-99'],
          ['number', 20300101],
          ['with time', '2030-01-01T00:00:00Z'],
        ]),
        { label: 'epoch', value: '1970-01-01', invalid: false },
        { label: 'year 9999', value: '9999-12-31', invalid: false },
      );
      break;
    case 'JSON':
      v.push(
        ...wrongTypes([
          ['array', [1, 2]],
          ['string', 'x'],
          ['number', 7],
        ]),
        { label: 'deeply nested', value: DEEP_JSON.marker, invalid: false },
        { label: 'very deeply nested', value: VERY_DEEP_JSON.marker, invalid: false },
        { label: 'over 64 KiB', value: { blob: 'b'.repeat(70_000) }, invalid: false },
        { label: 'many keys', value: Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, String(i)])), invalid: false },
        { label: 'NUL in a value', value: { a: 'x\u0000y' }, invalid: false },
        { label: 'NUL in a key', value: { 'k\u0000': 'v' }, invalid: false },
        { label: 'unicode', value: { [randomUnicode(random, 8)]: randomUnicode(random, 20) }, invalid: false },
        { label: 'empty object', value: {}, invalid: false },
      );
      break;
    default:
      if (isEnumType(named)) {
        v.push(
          ...wrongTypes([
            ['unknown value', 'NOT_A_VALUE'],
            ['lower case', String(named.getValues()[0]!.value).toLowerCase()],
            ['number', 1],
          ]),
        );
      }
  }
  return v;
}

// ---- cases ----

interface Leaf {
  path: Array<string | number>;
  type: GraphQLInputType;
}

/** Every field of the input, nested objects and the first element of lists included. */
function leaves(type: GraphQLInputObjectType, value: Record<string, unknown>, path: Array<string | number> = []): Leaf[] {
  const out: Leaf[] = [];
  for (const field of Object.values(type.getFields())) {
    const fieldPath = [...path, field.name];
    out.push({ path: fieldPath, type: field.type });
    const named = getNamedType(field.type);
    const current = value?.[field.name];
    if (isInputObjectType(named)) {
      if (Array.isArray(current) && current[0] && typeof current[0] === 'object') {
        out.push(...leaves(named, current[0] as Record<string, unknown>, [...fieldPath, 0]));
      } else if (current && typeof current === 'object' && !Array.isArray(current)) {
        out.push(...leaves(named, current as Record<string, unknown>, fieldPath));
      }
    }
  }
  return out;
}

function getAt(value: unknown, path: Array<string | number>): unknown {
  return path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], value);
}

function setAt(input: Record<string, unknown>, path: Array<string | number>, value: unknown): Record<string, unknown> {
  const copy = structuredClone(input);
  let target = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) {
    const next = target[key];
    if (next === null || typeof next !== 'object') return copy;
    target = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (value === DROP) delete target[last];
  else target[last] = value;
  return copy;
}

function gqlCase(mutation: string, label: string, input: unknown, invalid: boolean, token: string | null): Case {
  const body = [DEEP_JSON, VERY_DEEP_JSON].reduce(
    (text, deep) => text.replaceAll(JSON.stringify(deep.marker), deep.text),
    JSON.stringify({ query: world.document(mutation), variables: { input } }),
  );
  return { mutation, label, body, token, invalid };
}

function generateCases(): Case[] {
  const random = generator(SEED);
  const cases: Case[] = [];
  const pool: Array<{ mutation: string; leaf: Leaf; variants: Variant[] }> = [];
  for (const mutation of Object.keys(schema.getMutationType()!.getFields())) {
    const baseline = baselines.get(mutation);
    if (!baseline) throw new Error(`no baseline input for ${mutation}: add one to seed()`);
    const token = TOKENS[roles.get(mutation)![0]!];
    const type = world.mutationInputType(mutation);
    for (const leaf of leaves(type, baseline)) {
      const variants = variantsFor(leaf.type, getAt(baseline, leaf.path), random);
      pool.push({ mutation, leaf, variants });
      for (const variant of variants) {
        cases.push(
          gqlCase(mutation, `${leaf.path.join('.')}: ${variant.label}`, setAt(baseline, leaf.path, variant.value), variant.invalid, token),
        );
      }
      cases.push(
        gqlCase(
          mutation,
          `${leaf.path.join('.')} + unknown sibling`,
          setAt(baseline, [...leaf.path.slice(0, -1), 'bogusField'], 1),
          true,
          token,
        ),
      );
    }
    for (const [label, input] of [
      ['input null', null],
      ['input empty', {}],
      ['input array', [baseline]],
      ['input string', 'x'],
    ] as const) {
      cases.push(gqlCase(mutation, label, input, true, token));
    }
    // the right input with the wrong credentials
    const wrongRoles = (['nifi', 'operator'] as const).filter((r) => !roles.get(mutation)!.includes(r));
    for (const [label, t] of [
      ['no token', null],
      ['unknown token', 'not-a-token'],
      ['viewer token', TOKENS.viewer],
      ...wrongRoles.map((r) => [`${r} token`, TOKENS[r]] as const),
    ] as const) {
      cases.push(gqlCase(mutation, label, baseline, true, t));
    }
    cases.push({
      mutation,
      label: 'literal argument of the wrong type',
      body: JSON.stringify({ query: `mutation { ${mutation}(input: 5) { __typename } }` }),
      token,
      invalid: true,
    });
    cases.push({
      mutation,
      label: 'two root fields',
      body: JSON.stringify({ query: `mutation { a: ${mutation}(input: {}) { __typename } b: ${mutation}(input: {}) { __typename } }` }),
      token,
      invalid: true,
    });
  }
  for (const [label, body, contentType] of [
    ['invalid JSON', '{"query": "mutation {', 'application/json'],
    ['empty body', '', 'application/json'],
    ['array body', '[]', 'application/json'],
    ['query not a string', '{"query": 5}', 'application/json'],
    ['variables not an object', JSON.stringify({ query: world.document('createRun'), variables: 5 }), 'application/json'],
    ['syntax error', JSON.stringify({ query: 'mutation { createRun(' }), 'application/json'],
    ['unknown field', JSON.stringify({ query: 'mutation { dropEverything }' }), 'application/json'],
    ['text body', 'mutation { createRun }', 'text/plain'],
    [
      'charset parameter, string Booleans, bad input',
      JSON.stringify({ query: world.document('createRun'), variables: { input: { allowEmptySource: 'true' } } }),
      'application/json; charset=UTF-8',
    ],
    ['deep selection', JSON.stringify({ query: `query { ${'a { '.repeat(40)}b${' }'.repeat(40)} }` }), 'application/json'],
    [
      'many aliases',
      JSON.stringify({ query: `query { ${Array.from({ length: 60 }, (_, i) => `a${i}: gates { consumer }`).join(' ')} }` }),
      'application/json',
    ],
  ] as const) {
    cases.push({ mutation: 'http', label, body, token: TOKENS.nifi, contentType, invalid: true });
  }
  // InvokeHTTP's JSON content type, with a charset, on a request that may succeed
  cases.push({
    mutation: 'http',
    label: 'application/json; charset=UTF-8',
    body: JSON.stringify({ query: world.document('recordEvent'), variables: { input: baselines.get('recordEvent') } }),
    token: TOKENS.nifi,
    contentType: 'application/json; charset=UTF-8',
    invalid: false,
  });

  // random combinations of two to four variants until the total is reached
  while (cases.length < TOTAL_CASES) {
    const first = pool[Math.floor(random() * pool.length)]!;
    const picks = pool.filter((p) => p.mutation === first.mutation);
    const baseline = baselines.get(first.mutation)!;
    let input = baseline;
    const labels: string[] = [];
    const touched: string[] = [];
    let invalid = false;
    const n = 2 + Math.floor(random() * 3);
    // mostly with at least one variant built to be refused: the single-field cases already try every
    // variant that might be valid, and those have to be checked one at a time
    const refusedFirst = random() < 0.9;
    for (let i = 0; i < n; i++) {
      const p = picks[Math.floor(random() * picks.length)]!;
      const choices = i === 0 && refusedFirst && p.variants.some((v) => v.invalid) ? p.variants.filter((v) => v.invalid) : p.variants;
      const variant = choices[Math.floor(random() * choices.length)]!;
      const path = p.leaf.path.join('.');
      // one variant per field, never inside a field already replaced; the heavy ones once each is enough
      if (touched.some((t) => t === path || path.startsWith(`${t}.`) || t.startsWith(`${path}.`))) continue;
      if (variant.label.startsWith('huge') || variant.label.startsWith('very deeply')) continue;
      touched.push(path);
      input = setAt(input, p.leaf.path, variant.value);
      labels.push(`${path}: ${variant.label}`);
      invalid ||= variant.invalid;
    }
    cases.push(gqlCase(first.mutation, labels.join(' & '), input, invalid, TOKENS[roles.get(first.mutation)![0]!]));
  }
  return cases;
}

// ---- sending and fingerprints ----

async function send(c: Case): Promise<Outcome> {
  const { status, codes, code, headerCode, head } = await postGraphql(api.url, c.body, { token: c.token, contentType: c.contentType });
  return { c, status, codes, code, headerCode, head: head ?? '' };
}

const rejected = (o: Outcome) => o.status >= 400 && o.status < 500;
const recordedRefusal = (o: Outcome) => o.code !== undefined && o.code in RECORDED_REFUSALS;

beforeAll(async () => {
  api = await startTestApi();
  world = await prepareFuzzWorld(api);
  ({ schema, baselines, roles } = world);
}, 120_000);
afterAll(async () => api?.close());

describe('fuzzing every mutation', () => {
  it(`answers ≥${TOTAL_CASES} malformed and mutated requests without a 5xx, and no rejected request changes a row`, async () => {
    const cases = generateCases();
    expect(cases.length).toBeGreaterThanOrEqual(TOTAL_CASES);
    const mutations = new Set(cases.map((c) => c.mutation));
    for (const name of Object.keys(schema.getMutationType()!.getFields())) expect(mutations, `${name} is fuzzed`).toContain(name);

    const started = performance.now();
    const outcomes: Outcome[] = [];
    const changedByRejection: string[] = [];
    const serial: Case[] = [];
    // nothing else writes to this database (no worker runs): each check's "after" is the next one's "before"
    let current = await world.fingerprint();
    const checkOne = async (c: Case) => {
      const before = current;
      const outcome = await send(c);
      outcomes.push(outcome);
      current = await world.fingerprint();
      if (!rejected(outcome)) return;
      const allowed = RECORDED_REFUSALS[outcome.code ?? ''] ?? [];
      const changed = changedTables(before, current).filter((t) => !allowed.includes(t));
      if (changed.length)
        changedByRejection.push(`${c.mutation} ${c.label} → ${outcome.status} ${outcome.code}: changed ${changed.join(', ')}`);
    };

    // requests built to be refused go in concurrent batches: if all of a batch were refused, nothing may have
    // changed; a batch with an accepted request (or a recorded refusal) has its refused ones checked one by one
    const invalid = cases.filter((c) => c.invalid);
    for (let i = 0; i < invalid.length; i += BATCH) {
      const batch = invalid.slice(i, i + BATCH);
      const before = current;
      const results = await pooled(batch, CONCURRENCY, send);
      const after = await world.fingerprint();
      current = after;
      if (results.every((o) => rejected(o) && !recordedRefusal(o))) {
        outcomes.push(...results);
        const changed = changedTables(before, after);
        if (changed.length)
          changedByRejection.push(
            `a batch of ${batch.length} refused requests changed ${changed.join(', ')}: ${batch.map((c) => `${c.mutation} ${c.label}`).join(' | ')}`,
          );
      } else {
        outcomes.push(...results.filter((o) => !rejected(o) || recordedRefusal(o)));
        serial.push(...results.filter((o) => rejected(o) && !recordedRefusal(o)).map((o) => o.c));
      }
    }
    const batched = performance.now();
    // requests that may be valid one at a time, each with its own fingerprints
    for (const c of [...cases.filter((c) => !c.invalid), ...serial]) await checkOne(c);
    console.log(
      `fuzz timing: batches ${Math.round(batched - started)} ms, ${cases.filter((c) => !c.invalid).length} maybe-valid + ${serial.length} rechecked one by one ${Math.round(performance.now() - batched)} ms`,
    );

    const serverErrors = outcomes.filter((o) => o.status >= 500).map((o) => `${o.c.mutation} ${o.c.label} → ${o.status} ${o.code}`);
    const acceptedInvalid = outcomes.filter((o) => o.c.invalid && !rejected(o)).map((o) => `${o.c.mutation} ${o.c.label} → ${o.status}`);
    const unexpectedStatus = outcomes
      .filter((o) => o.c.invalid && rejected(o) && ![400, 401, 403, 413, 415, 422].includes(o.status))
      .map((o) => `${o.c.mutation} ${o.c.label} → ${o.status} ${o.code}`);
    // the header names the error that decides the status (with several errors, the one of the highest status)
    const consistent = (o: Outcome) =>
      o.headerCode !== null &&
      (o.codes.length === 0 || o.codes.includes(o.headerCode)) &&
      (o.headerCode === 'BAD_REQUEST' || ERROR_HTTP_STATUS[o.headerCode as ErrorCode] === o.status);
    const envelope = outcomes
      .filter((o) => (o.status >= 400 ? !consistent(o) : o.codes.length > 0))
      .map((o) => `${o.c.mutation} ${o.c.label} → ${o.status} header ${o.headerCode} body ${o.codes.join(',')}`);
    // NiFi's InvokeHTTP keeps the first 256 bytes of an error body: the code has to be in them
    const codeBeyond256 = outcomes
      .filter((o) => o.status >= 400 && !o.head.includes(`"code":"${o.code ?? o.headerCode}"`))
      .map((o) => `${o.c.mutation} ${o.c.label} → ${o.status} ${o.code}: ${o.head.slice(0, 80)}…`);
    expect(serverErrors, 'no 5xx').toEqual([]);
    expect(codeBeyond256, 'every error body names its code in its first 256 bytes').toEqual([]);
    expect(outcomes.find((o) => o.c.label === 'application/json; charset=UTF-8')?.status, 'a JSON body with a charset').toBe(200);
    expect(changedByRejection, 'no rejected request changed a row').toEqual([]);
    expect(acceptedInvalid, 'malformed requests are refused').toEqual([]);
    expect(unexpectedStatus, 'malformed requests are refused before the database: 400, 401, 403, 413, 415 or 422').toEqual([]);
    expect(envelope, 'every error answer carries the X-Error-Code of its status; no 2xx carries errors').toEqual([]);
    expect(outcomes.length).toBeGreaterThanOrEqual(cases.length);
    const statuses: Record<number, number> = {};
    for (const o of outcomes) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
    console.log(
      `fuzz: ${outcomes.length} requests over ${mutations.size - 1} mutations (${invalid.length} built to be refused), statuses ${JSON.stringify(statuses)}`,
    );
  }, 150_000);
});

describe('fuzzing the arguments of the gate’s queries (issue 15)', () => {
  /** Each query with a document declaring its arguments as variables, and arguments it answers with 200. */
  const QUERIES: Array<{ name: string; document: string; baseline: Record<string, unknown> }> = [
    {
      name: 'publications',
      document: `query($consumer: String!, $from: Date, $to: Date, $first: Int, $after: Date) {
        publications(consumer: $consumer, from: $from, to: $to, first: $first, after: $after) {
          nodes { businessDate evidence { runId attempts { attempt } } } pageInfo { endCursor } } }`,
      baseline: { consumer: 'FUZZ_REPORT', from: '2031-05-01', to: '2031-05-31', first: 10, after: '2031-06-01' },
    },
    {
      name: 'readinessDecisions',
      document: `query($consumer: String!, $businessDate: Date!, $last: Int) {
        readinessDecisions(consumer: $consumer, businessDate: $businessDate, last: $last) { version ready } }`,
      baseline: { consumer: 'FUZZ_REPORT', businessDate: '2031-05-01', last: 5 },
    },
    {
      name: 'readiness',
      document: `query($consumer: String!, $businessDate: Date!) {
        readiness(consumer: $consumer, businessDate: $businessDate) { ready jobs { deadline } decision { version } } }`,
      baseline: { consumer: 'FUZZ_REPORT', businessDate: '2031-05-01' },
    },
    {
      name: 'gate.dispatches',
      document: `query($consumer: String!, $businessDate: Date, $last: Int) {
        gate(consumer: $consumer) { expectedBy { text } dispatches(businessDate: $businessDate, last: $last) { status } } }`,
      baseline: { consumer: 'FUZZ_REPORT', businessDate: '2031-05-01', last: 5 },
    },
  ];

  it('answers every mutated argument without a 5xx, refuses the malformed ones before the database, and changes nothing', async () => {
    const random = generator(SEED + 15);
    const cases: Array<{ label: string; document: string; variables: Record<string, unknown>; invalid: boolean }> = [];
    for (const query of QUERIES) {
      const operation = parse(query.document).definitions[0] as OperationDefinitionNode;
      for (const definition of operation.variableDefinitions ?? []) {
        const name = definition.variable.name.value;
        const type = typeFromAST(schema, definition.type) as GraphQLInputType;
        for (const variant of variantsFor(type, query.baseline[name], random)) {
          const variables = { ...query.baseline };
          if (variant.value === DROP) delete variables[name];
          else variables[name] = variant.value;
          cases.push({ label: `${query.name} ${name}: ${variant.label}`, document: query.document, variables, invalid: variant.invalid });
        }
      }
      cases.push({ label: `${query.name} as given`, document: query.document, variables: query.baseline, invalid: false });
    }
    const before = await world.fingerprint();
    const outcomes = await pooled(cases, CONCURRENCY, async (c) => ({
      c,
      outcome: await postGraphql(api.url, JSON.stringify({ query: c.document, variables: c.variables }), { token: TOKENS.viewer }),
    }));
    expect(
      outcomes.filter(({ outcome }) => outcome.status >= 500 || outcome.status === 0).map(({ c }) => c.label),
      'no 5xx',
    ).toEqual([]);
    expect(
      outcomes
        .filter(({ c, outcome }) => c.invalid && ![400, 422].includes(outcome.status))
        .map(({ c, outcome }) => `${c.label} → ${outcome.status}`),
      'malformed arguments are refused with 400 or 422',
    ).toEqual([]);
    expect(outcomes.filter(({ c, outcome }) => c.label.endsWith('as given') && outcome.status !== 200).map(({ c }) => c.label)).toEqual([]);
    expect(await world.fingerprint()).toEqual(before);
    expect(cases.length).toBeGreaterThan(100);
  });
});

describe('what the fuzzing and the simulator found', () => {
  it('refuses U+0000 in text, in JSON keys and values, and JSON nested too deep, with 422 naming the field; nothing changes', async () => {
    const before = await world.fingerprint();
    const event = baselines.get('recordEvent')!;
    const create = baselines.get('createRun')!;
    const deep = (depth: number) => {
      let value: Record<string, unknown> = {};
      for (let i = 0; i < depth; i++) value = { n: value };
      return value;
    };
    for (const [mutation, input, field] of [
      ['recordEvent', { ...event, message: 'a\u0000b' }, 'input.message'],
      ['recordEvent', { ...event, details: { note: 'x\u0000' } }, 'input.details.note'],
      ['recordEvent', { ...event, details: { 'k\u0000': 1 } }, 'input.details'],
      [
        'createRun',
        { ...create, jobKey: 'FUZZ_PLAIN', businessKey: 'BK_DEEP', parameters: deep(100) },
        `input.parameters${'.n'.repeat(64)}`,
      ],
    ] as const) {
      const res = await api.gql(world.document(mutation), { input }, { token: roles.get(mutation)![0]! });
      expect([res.status, res.code, res.details?.field], `${mutation} ${field}`).toEqual([422, 'INVALID_INPUT', field]);
    }
    expect(await world.fingerprint()).toEqual(before);
    const shallow = await api.gql(world.document('createRun'), {
      input: { ...create, jobKey: 'FUZZ_PLAIN', businessKey: 'BK_SHALLOW', parameters: deep(10) },
    });
    expect(shallow.status).toBe(200);
  });

  it('answers a request with several input errors with the X-Error-Code of the status it gets', async () => {
    const input = { ...baselines.get('claimPartition')!, runId: 'not-a-uuid', workerNode: 5 };
    const res = await api.gql(world.document('claimPartition'), { input });
    expect(res.body.errors!.map((e) => e.extensions?.code).sort()).toEqual(['BAD_REQUEST', 'INVALID_INPUT']);
    expect([res.status, res.headers.get('x-error-code')]).toEqual([422, 'INVALID_INPUT']);
  });

  it('answers a body of an unsupported content type with 415 in the error envelope', async () => {
    const response = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream', Authorization: `Bearer ${TOKENS.nifi}`, 'X-Request-Id': 'fuzz-415' },
      body: JSON.stringify({ query: world.document('createRun'), variables: { input: baselines.get('createRun') } }),
    });
    expect([response.status, response.headers.get('x-error-code')]).toEqual([415, 'BAD_REQUEST']);
    const body = (await response.json()) as { errors: Array<{ message: string; extensions: Record<string, unknown> }> };
    expect(body.errors[0]!.extensions).toEqual({ code: 'BAD_REQUEST', requestId: 'fuzz-415' });
    expect(body.errors[0]!.message).toContain('application/octet-stream');
  });

  it("registers a manifest whose sourceMetrics name SOURCE_COUNT too (one row, the flow's value)", async () => {
    const run = await createRun(api);
    const input = { ...manifestInput(run.runId, [2, 3]), sourceMetrics: { SOURCE_COUNT: '5', AMOUNT_SUM: '1.5' } };
    const res = await api.gql(world.document('registerManifest'), { input });
    expect([res.status, res.body.data?.registerManifest?.status]).toEqual([200, 'EXTRACTING']);
    const { rows } = await api.sql.query(
      `SELECT metric_name, actual_value FROM nifi_ops.load_validation WHERE run_id = $1 AND stage = 'SOURCE' ORDER BY metric_name`,
      [run.runId],
    );
    expect(rows).toEqual([
      { metric_name: 'AMOUNT_SUM', actual_value: '1.5' },
      { metric_name: 'SOURCE_COUNT', actual_value: '5' },
    ]);
  });
});
