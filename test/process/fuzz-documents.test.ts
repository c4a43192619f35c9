// Fuzzing the documents themselves, beside the input fuzz of test/fuzz.test.ts and on the same seeded world:
// generated hostile documents and inputs — fragment chains and DAGs up to the token limit, fragment cycles,
// mutations with two root fields however disguised, lone surrogates and NUL in strings and JSON, Long beyond
// 2^53 and 2^63, JSON nested past 64 levels, alias, field and directive floods, and anonymous requests of
// every kind. No answer may be a 5xx or take long, /healthz must answer throughout, and no request may change
// a row. The API runs as a child process: a document whose walk never ends would otherwise hold this
// process's event loop, and the test runner with it; a hung API is killed and started again.
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  Lexer,
  parse,
  Source,
  TokenKind,
  validate,
  type GraphQLField,
  type GraphQLInputType,
} from 'graphql';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generator } from '../../sim/random.js';
import { TOKENS } from '../support/api.js';
import { startTestApiProcess, type TestApiProcess } from '../support/api-process.js';
import { changedTables, postGraphql, prepareFuzzWorld, type FuzzWorld, type PostOutcome } from '../support/fuzz-world.js';
import { MAX_RUNS_PAGE } from '../../src/graphql/cost.js';
import { DOCUMENT_LIMITS } from '../../src/server/operation-shape.js';

const SEED = 20260602;
/** Generous to the target (50 ms of CPU per decision) on a loaded two-core machine. */
const PROMPT_MS = 1_000;
/** An answer later than this is a hang: the API is restarted. */
const HANG_MS = 3_000;
/** After this many hangs in a category, its remaining cases are not sent (and count as failures). */
const HANGS_PER_CATEGORY = 2;

/** The number of cases per category; `anonymous` is one per root field of the schema and the seven ways of sending none or a wrong token. */
const COUNTS = {
  'fragment chain at the root': 8,
  'fragment chain under runs': 8,
  'fragment DAG at the root': 6,
  'fragment DAG under runs': 6,
  'fragment cycle': 15,
  'two root fields': 16,
  'surrogate or NUL in variables': 80,
  'surrogate or NUL in literals': 40,
  'Long out of range': 24,
  'deep JSON': 16,
  'alias flood': 10,
  'field repetition flood': 10,
  'directive flood': 8,
  anonymous: 0,
};
type Category = keyof typeof COUNTS;
/** The requests of `anonymous` that are not a root field's. */
const TOKENLESS_WAYS = 7;

interface HostileCase {
  category: Category;
  label: string;
  /** A POST body, or with `get` the query string of a GET /graphql. */
  body: string;
  get?: boolean;
  token: string | null;
  /** What is wrong with the answer, if anything. */
  judge(o: PostOutcome): string | undefined;
}

let api: TestApiProcess;
let world: FuzzWorld;

// ---- judging answers ----

const describeOutcome = (o: PostOutcome) =>
  `${o.status || o.failure} ${o.codes.join(',')}${o.details?.field ? ` field ${String(o.details.field)}` : ''}`;

function statusIn(...allowed: number[]): HostileCase['judge'] {
  return (o) => (allowed.includes(o.status) ? undefined : `expected ${allowed.join(' or ')}, got ${describeOutcome(o)}`);
}

/** 422 INVALID_INPUT whose details.field is the field or a path inside it. */
function invalidInput(field: string): HostileCase['judge'] {
  return (o) => {
    const named = String(o.details?.field ?? '');
    return o.status === 422 && o.code === 'INVALID_INPUT' && (named === field || named.startsWith(`${field}.`))
      ? undefined
      : `expected 422 INVALID_INPUT naming ${field}, got ${describeOutcome(o)}`;
  };
}

/**
 * A valid document whose cost the limit may refuse: the cost counts every fragment spread, where execution
 * merges repeated ones, so a fragment graph can be refused (quickly) although it would run cheaply.
 */
const runsOrTooCostly: HostileCase['judge'] = (o) =>
  o.status === 200 || (o.status === 400 && o.code === 'QUERY_TOO_COSTLY')
    ? undefined
    : `expected 200 or 400 QUERY_TOO_COSTLY, got ${describeOutcome(o)}`;

/** A document the parser itself refuses (a syntax error, 400) or the input check (422 naming the field). */
function unparsableOrInvalid(field: string): HostileCase['judge'] {
  return (o) => (o.status === 400 && o.code === 'BAD_REQUEST' ? undefined : invalidInput(field)(o));
}

// ---- documents ----

function tokenCount(document: string): number {
  const lexer = new Lexer(new Source(document));
  let n = 0;
  while (lexer.advance().kind !== TokenKind.EOF) n++;
  return n;
}

/** The document, checked to be valid GraphQL for the schema: the API may refuse it only for what is tested. */
function validated(document: string): string {
  const errors = validate(world.schema, parse(document), undefined, { maxErrors: 5 });
  if (errors.length) throw new Error(`a generated document is invalid (${errors[0]!.message}): ${document.slice(0, 200)}`);
  return document;
}

type Random = () => number;
const between = (random: Random, lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const gqlBody = (query: string, variables?: Record<string, unknown>) => JSON.stringify(variables ? { query, variables } : { query });

/** Where a fragment graph hangs: under the runs list (on Run) or at the root (on Query). */
const FRAGMENT_HOSTS = [
  {
    where: 'under runs',
    on: 'Run',
    operation: (spread: string) => `query { runs(first: 2) { nodes { ${spread} } } }`,
    leaves: ['runId', 'status', 'jobKey', 'businessKey', 'startedAt'],
  },
  {
    where: 'at the root',
    on: 'Query',
    operation: (spread: string) => `query { ${spread} }`,
    leaves: ['gates { consumer }', 'runs(first: 1) { nodes { runId } }', '__typename'],
  },
] as const;

/** The largest document `build(n)` within the token limit, n from lo up. */
function largestWithinLimit(build: (n: number) => string, lo: number): { n: number; document: string } {
  let best = { n: lo, document: build(lo) };
  for (let step = 256; step >= 1; step = Math.floor(step / 2)) {
    for (;;) {
      const document = build(best.n + step);
      if (tokenCount(document) > DOCUMENT_LIMITS.tokens - 10) break;
      best = { n: best.n + step, document };
    }
  }
  return best;
}

/** Fragment i spreads fragment i+1 `fanout` times: 2^n or 3^n paths for a walk that does not remember. */
function fragmentChain(random: Random, host: (typeof FRAGMENT_HOSTS)[number]): HostileCase {
  const fanout = between(random, 2, 3);
  const build = (n: number) =>
    host.operation('...F0') +
    Array.from(
      { length: n },
      (_, i) =>
        ` fragment F${i} on ${host.on} { ${host.leaves[i % host.leaves.length]} ${i + 1 < n ? `...F${i + 1} `.repeat(fanout) : ''}}`,
    ).join('');
  const largest = largestWithinLimit(build, 2);
  // mostly the longest chain the token limit allows; some shorter ones
  const n = random() < 0.6 ? largest.n : between(random, 8, largest.n);
  return {
    category: `fragment chain ${host.where}`,
    label: `${n} fragments on ${host.on}, each spreading the next ${fanout} times`,
    body: gqlBody(build(n)),
    token: TOKENS.viewer,
    judge: runsOrTooCostly,
  };
}

/** n fragments, each spreading the next and 1–5 more of the later ones: many paths to each, no cycle. */
function fragmentDag(random: Random, host: (typeof FRAGMENT_HOSTS)[number]): HostileCase {
  // more fragments than the token limit lets a document hold
  const spreads = Array.from({ length: DOCUMENT_LIMITS.tokens }, (_, i) => [
    i + 1,
    ...Array.from({ length: between(random, 1, 5) }, () => i + 2 + Math.floor(random() * 12)),
  ]);
  const build = (n: number) =>
    host.operation('...D0 ...D1') +
    Array.from(
      { length: n },
      (_, i) =>
        ` fragment D${i} on ${host.on} { ${host.leaves[i % host.leaves.length]} ${[...new Set(spreads[i]!.filter((j) => j < n))].map((j) => `...D${j}`).join(' ')} }`,
    ).join('');
  const largest = largestWithinLimit(build, 2);
  const n = between(random, Math.min(20, largest.n), largest.n);
  return {
    category: `fragment DAG ${host.where}`,
    label: `${n} fragments on ${host.on}`,
    body: gqlBody(build(n)),
    token: TOKENS.viewer,
    judge: runsOrTooCostly,
  };
}

function fragmentCycle(random: Random, index: number): HostileCase {
  const shape = (['self', '2-cycle', 'long cycle'] as const)[index % 3]!;
  const length = shape === 'self' ? 1 : shape === '2-cycle' ? 2 : between(random, 3, 200);
  const place = pick(random, ['Query', 'Run', 'Mutation'] as const);
  const leaf =
    place === 'Run'
      ? 'runId'
      : place === 'Query'
        ? 'gates { consumer }'
        : `createRun(input: {jobKey: "FUZZ_PLAIN", businessKey: "BK_CYCLE_${index}", hdfsRoot: "/data/nifi/stage", stageTablePrefix: "TMP_FUZZ_"}) { runId }`;
  const operation =
    place === 'Run' ? 'query { runs(first: 1) { nodes { ...C0 } } }' : place === 'Query' ? 'query { ...C0 }' : 'mutation { ...C0 }';
  const fragments = Array.from(
    { length },
    (_, i) => `fragment C${i} on ${place} { ${i === 0 ? leaf : '__typename'} ...C${(i + 1) % length} }`,
  );
  return {
    category: 'fragment cycle',
    label: `${shape} of ${length} on ${place}`,
    body: gqlBody(`${operation} ${fragments.join(' ')}`),
    token: place === 'Mutation' ? TOKENS.nifi : TOKENS.viewer,
    judge: statusIn(400),
  };
}

const CREATE_FIELDS = 'runId status created';

/** Valid calls that would each create a run if executed: the fingerprint tells. */
function twoRootFields(index: number): HostileCase {
  const input = (n: number) => ({
    jobKey: 'FUZZ_PLAIN',
    businessKey: `BK_TWO_${index}_${n}`,
    hdfsRoot: '/data/nifi/stage',
    stageTablePrefix: 'TMP_FUZZ_',
  });
  const event = world.baselines.get('recordEvent')!;
  const a = `a: createRun(input: $a) { ${CREATE_FIELDS} }`;
  const b = `b: createRun(input: $b) { ${CREATE_FIELDS} }`;
  const e = 'recordEvent(input: $e) { eventId }';
  const shapes: Array<[string, string]> = [
    ['two mutations directly', `{ ${a} ${e} }`],
    ['one mutation under two aliases', `{ ${a} ${b} }`],
    ['both in one named fragment', `{ ...M } fragment M on Mutation { ${a} ${b} }`],
    ['one named fragment each', `{ ...M1 ...M2 } fragment M1 on Mutation { ${a} } fragment M2 on Mutation { ${e} }`],
    ['both in one inline fragment', `{ ... on Mutation { ${a} ${e} } }`],
    ['one inline fragment each', `{ ... on Mutation { ${a} } ... { ${b} } }`],
    ['one direct, one via a fragment', `{ ${a} ...M } fragment M on Mutation { ${e} }`],
    ['nested fragments', `{ ...M } fragment M on Mutation { ...N ${b} } fragment N on Mutation { ... on Mutation { ${a} } }`],
  ];
  const [label, selection] = shapes[index % shapes.length]!;
  // declare only the variables used: an unused one would be refused for that instead
  const declared = [
    ['a', 'CreateRunInput'],
    ['b', 'CreateRunInput'],
    ['e', 'RecordEventInput'],
  ].filter(([name]) => selection.includes(`$${name}`));
  const query = validated(`mutation(${declared.map(([name, type]) => `$${name}: ${type}!`).join(', ')}) ${selection}`);
  const variables = { a: input(1), b: input(2), e: event };
  return {
    category: 'two root fields',
    label,
    token: TOKENS.nifi,
    judge: statusIn(400),
    body: gqlBody(query, Object.fromEntries(declared.map(([name]) => [name!, variables[name as keyof typeof variables]]))),
  };
}

// ---- inputs: strings, JSON, Long ----

const BAD_TEXT = {
  'lone high surrogate': 'a\ud800b',
  'lone low surrogate': 'a\udc00b',
  'reversed pair': '\udc00\ud800',
  NUL: 'a\u0000b',
} as const;
type BadText = keyof typeof BAD_TEXT;
const JSON_FIELDS: Array<[mutation: string, field: string]> = [
  ['createRun', 'parameters'],
  ['recordEvent', 'details'],
];

/** Every top-level String field of every mutation's input. */
function stringFields(): Array<[mutation: string, field: string]> {
  const out: Array<[string, string]> = [];
  for (const mutation of Object.keys(world.schema.getMutationType()!.getFields())) {
    for (const field of Object.values(world.mutationInputType(mutation).getFields())) {
      if (getNamedType(field.type).name === 'String' && !isListType(isNonNullType(field.type) ? field.type.ofType : field.type))
        out.push([mutation, field.name]);
    }
  }
  return out;
}

const tokenFor = (mutation: string) => TOKENS[world.roles.get(mutation)![0]!];

/** A text field, or a JSON field's value or key, holding the bad text. */
function badInput(mutation: string, field: string, bad: BadText, inKey: boolean): Record<string, unknown> {
  const text = BAD_TEXT[bad];
  const value = JSON_FIELDS.some(([m, f]) => m === mutation && f === field) ? (inKey ? { [text]: 1 } : { note: text }) : text;
  return { ...world.baselines.get(mutation)!, [field]: value };
}

function surrogateInVariables(random: Random): HostileCase {
  const json = random() < 0.4;
  const [mutation, field] = json ? pick(random, JSON_FIELDS) : pick(random, stringFields());
  const bad = pick(random, Object.keys(BAD_TEXT) as BadText[]);
  const inKey = json && random() < 0.3;
  return {
    category: 'surrogate or NUL in variables',
    label: `${mutation}.${field}${inKey ? ' (a key)' : ''}: ${bad}`,
    body: gqlBody(world.document(mutation), { input: badInput(mutation, field, bad, inKey) }),
    token: tokenFor(mutation),
    judge: invalidInput(`input.${field}`),
  };
}

/** The value as a GraphQL literal of the type; a JSON string's escapes are GraphQL's. */
function literal(value: unknown, type: GraphQLInputType): string {
  const inner = isNonNullType(type) ? type.ofType : type;
  if (value === null || value === undefined) return 'null';
  if (isListType(inner)) return `[${(value as unknown[]).map((v) => literal(v, inner.ofType)).join(', ')}]`;
  if (isInputObjectType(inner)) {
    const fields = inner.getFields();
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${k}: ${literal(v, fields[k]!.type)}`)
      .join(', ')}}`;
  }
  if (isEnumType(inner)) return String(value);
  if (inner.name === 'JSON') return jsonLiteral(value);
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function jsonLiteral(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jsonLiteral).join(', ')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${jsonLiteral(v)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}

const literalDocument = (mutation: string, input: Record<string, unknown>) =>
  `mutation { ${mutation}(input: ${literal(input, world.schema.getMutationType()!.getFields()[mutation]!.args[0]!.type)}) { __typename } }`;

/**
 * In a document the bad text is an escape (\ud800, \u0000) or the raw character. GraphQL's lexer refuses a
 * raw NUL and every lone surrogate (escaped or raw) as a syntax error before any field exists: 400 is right
 * for those; an escaped NUL parses, and the input check must name the field.
 */
function surrogateInLiterals(random: Random): HostileCase {
  const json = random() < 0.4;
  const [mutation, field] = json ? pick(random, JSON_FIELDS) : pick(random, stringFields());
  const bad = pick(random, Object.keys(BAD_TEXT) as BadText[]);
  const raw = random() < 0.3;
  const escaped = literalDocument(mutation, badInput(mutation, field, bad, false));
  const query = raw ? escaped.replaceAll(JSON.stringify(BAD_TEXT[bad]).slice(1, -1), BAD_TEXT[bad]) : escaped;
  return {
    category: 'surrogate or NUL in literals',
    label: `${mutation}.${field}: ${bad}, ${raw ? 'raw' : 'escaped'}`,
    body: gqlBody(query),
    token: tokenFor(mutation),
    judge: bad === 'NUL' && !raw ? invalidInput(`input.${field}`) : unparsableOrInvalid(`input.${field}`),
  };
}

/** Every top-level Long field of every mutation's input that has a baseline value. */
function longFields(): Array<[mutation: string, field: string]> {
  const out: Array<[string, string]> = [];
  for (const mutation of Object.keys(world.schema.getMutationType()!.getFields())) {
    for (const field of Object.values(world.mutationInputType(mutation).getFields())) {
      if (getNamedType(field.type).name === 'Long' && world.baselines.get(mutation)![field.name] !== undefined)
        out.push([mutation, field.name]);
    }
  }
  return out;
}

/** Written into the body as they are: JSON.stringify could not write 2^63 + 1 exactly. */
const LONG_VARIABLES = {
  'number 2^63': '9223372036854775808',
  'number 2^53 + 1': '9007199254740993',
  'number -2^63 - 1': '-9223372036854775809',
  'number 1e19': '1e19',
  'string 2^63': '"9223372036854775808"',
  'string -2^63 - 1': '"-9223372036854775809"',
  'string of 20 digits': '"99999999999999999999"',
};
const LONG_LITERALS = {
  'literal 2^63': '9223372036854775808',
  'literal -2^63 - 1': '-9223372036854775809',
  'literal of 20 digits': '99999999999999999999',
};

function longOutOfRange(random: Random): HostileCase {
  const [mutation, field] = pick(random, longFields());
  const marker = `\u2063long-${field}\u2063`;
  const input = { ...world.baselines.get(mutation)!, [field]: marker };
  if (random() < 0.7) {
    const [label, text] = pick(random, Object.entries(LONG_VARIABLES));
    return {
      category: 'Long out of range',
      label: `${mutation}.${field}: ${label}`,
      body: gqlBody(world.document(mutation), { input }).replace(JSON.stringify(marker), text),
      token: tokenFor(mutation),
      judge: (o) => (o.status === 422 && o.code === 'INVALID_INPUT' ? undefined : `expected 422 INVALID_INPUT, got ${describeOutcome(o)}`),
    };
  }
  const [label, text] = pick(random, Object.entries(LONG_LITERALS));
  return {
    category: 'Long out of range',
    label: `${mutation}.${field}: ${label}`,
    body: gqlBody(literalDocument(mutation, input).replace(JSON.stringify(marker), text)),
    token: tokenFor(mutation),
    judge: (o) => (o.status === 422 && o.code === 'INVALID_INPUT' ? undefined : `expected 422 INVALID_INPUT, got ${describeOutcome(o)}`),
  };
}

const DEPTHS = [65, 100, 1_000, 10_000];

/** JSON nested past 64 levels, as text: the object itself would overflow this process's stack to serialise. */
function deepJson(random: Random, index: number): HostileCase {
  const [mutation, field] = pick(random, JSON_FIELDS);
  const depth = DEPTHS[index % DEPTHS.length]!;
  const asLiteral = index % 8 >= 4;
  const marker = `\u2063deep-${depth}\u2063`;
  const input = { ...world.baselines.get(mutation)!, [field]: marker };
  const body = asLiteral
    ? gqlBody(literalDocument(mutation, input).replace(JSON.stringify(marker), `${'{n: '.repeat(depth)}1${'}'.repeat(depth)}`))
    : gqlBody(world.document(mutation), { input }).replace(JSON.stringify(marker), `${'{"n":'.repeat(depth)}1${'}'.repeat(depth)}`);
  return {
    category: 'deep JSON',
    label: `${mutation}.${field}: ${depth} levels in ${asLiteral ? 'a literal' : 'variables'}`,
    body,
    token: tokenFor(mutation),
    // past the token limit a literal is refused as a document (400); within it, the input check names the field
    judge: (o) => (o.status === 400 && asLiteral ? undefined : invalidInput(`input.${field}`)(o)),
  };
}

const RUN_FIELDS = 'runId jobKey businessKey status parameters partitions { partitionId status } events { name } dispatches { dispatchId }';

function aliasFlood(random: Random, index: number): HostileCase {
  // half at the limit with the largest page, half past the limit
  const n = index % 2 === 0 ? DOCUMENT_LIMITS.aliases : between(random, DOCUMENT_LIMITS.aliases + 1, 400);
  const query = `query { ${Array.from({ length: n }, (_, i) => `r${i}: runs(first: ${MAX_RUNS_PAGE}) { nodes { ${n > DOCUMENT_LIMITS.aliases ? 'runId' : RUN_FIELDS} } }`).join(' ')} }`;
  return {
    category: 'alias flood',
    label: `${n} aliases of runs(first: ${MAX_RUNS_PAGE})`,
    body: gqlBody(query),
    token: TOKENS.viewer,
    judge: n > DOCUMENT_LIMITS.aliases ? statusIn(400) : runsOrTooCostly,
  };
}

/** The same field over and over without aliases: one field once merged, n² pairs for a naive overlap check. */
function fieldRepetitionFlood(random: Random): HostileCase {
  const shapes = [
    (n: number) => `query { gates { ${'consumer '.repeat(n)}} }`,
    (n: number) => `query { runs(first: ${MAX_RUNS_PAGE}) { nodes { ${'runId '.repeat(n)}} } }`,
    (n: number) => `query { ${'gates { consumer } '.repeat(n)}}`,
    (n: number) => `query { ${'runs(first: 1) { nodes { runId } } '.repeat(n)}}`,
  ];
  const shape = pick(random, shapes);
  const largest = largestWithinLimit(shape, 1);
  const n = random() < 0.5 ? largest.n : between(random, 1, largest.n);
  return {
    category: 'field repetition flood',
    label: `${shape(2).slice(0, 40)}… × ${n}`,
    body: gqlBody(shape(n)),
    token: TOKENS.viewer,
    judge: statusIn(200, 400),
  };
}

function directiveFlood(random: Random): HostileCase {
  const shapes = [
    (n: number) => `query { gates { consumer ${'@include(if: true) '.repeat(n)}} }`,
    (n: number) => `query { gates ${'@skip(if: false) '.repeat(n)}{ consumer } }`,
    (n: number) => `query { ${Array.from({ length: n }, () => 'gates @include(if: true) { consumer }').join(' ')} }`,
    (n: number) => `query { runs(first: 1) { nodes { ...R ${'@include(if: true) '.repeat(n)}} } } fragment R on Run { runId }`,
  ];
  const shape = pick(random, shapes);
  const largest = largestWithinLimit(shape, 1);
  const n = random() < 0.5 ? largest.n : between(random, 2, largest.n);
  return {
    category: 'directive flood',
    label: `${shape(1).slice(0, 40)}… × ${n}`,
    body: gqlBody(shape(n)),
    token: TOKENS.viewer,
    judge: statusIn(200, 400),
  };
}

/** A call of a root field with a made-up value for each required argument. */
function rootCall(field: GraphQLField<unknown, unknown>): string {
  const sample: Record<string, string> = { UUID: `"${randomUUID()}"`, Date: '"2031-05-01"', String: '"x"', Int: '1' };
  const args = field.args.filter((a) => isNonNullType(a.type)).map((a) => `${a.name}: ${sample[getNamedType(a.type).name] ?? '"x"'}`);
  return `${field.name}${args.length ? `(${args.join(', ')})` : ''} { __typename }`;
}

/** Every query, subscription and mutation, and the ways of sending none or a wrong token: all 401. */
function anonymousCases(): HostileCase[] {
  const judge = statusIn(401);
  const anonymous = (label: string, body: string, token: string | null = null): HostileCase => ({
    category: 'anonymous',
    label,
    body,
    token,
    judge,
  });
  const cases: HostileCase[] = [];
  for (const field of Object.values(world.schema.getQueryType()!.getFields()))
    cases.push(anonymous(`query ${field.name}`, gqlBody(`query { ${rootCall(field)} }`)));
  for (const field of Object.values(world.schema.getSubscriptionType()!.getFields())) {
    cases.push(anonymous(`subscription ${field.name}`, gqlBody(`subscription { ${rootCall(field)} }`)));
  }
  const mutations = Object.keys(world.schema.getMutationType()!.getFields());
  for (const mutation of mutations)
    cases.push(anonymous(`mutation ${mutation}`, gqlBody(world.document(mutation), { input: world.baselines.get(mutation)! })));
  cases.push(
    anonymous('introspection', gqlBody('query { __schema { types { name } } }')),
    anonymous('__typename only', gqlBody('{ __typename }')),
    anonymous('invalid JSON', '{"query": "{'),
    anonymous('a 2 MB body', gqlBody(`{ __typename }`, { pad: 'p'.repeat(2_000_000) })),
    anonymous('unknown token', gqlBody('{ gates { consumer } }'), 'not-a-token'),
    { ...anonymous('GET with a query', new URLSearchParams({ query: '{ gates { consumer } }' }).toString()), get: true },
    { ...anonymous('GET introspection', new URLSearchParams({ query: '{ __schema { queryType { name } } }' }).toString()), get: true },
  );
  return cases;
}

function generateCases(): HostileCase[] {
  const random = generator(SEED);
  const cases: HostileCase[] = [];
  const times = (n: number, make: (i: number) => HostileCase) => Array.from({ length: n }, (_, i) => make(i));
  cases.push(
    ...FRAGMENT_HOSTS.flatMap((host) => times(COUNTS[`fragment chain ${host.where}`], () => fragmentChain(random, host))),
    ...FRAGMENT_HOSTS.flatMap((host) => times(COUNTS[`fragment DAG ${host.where}`], () => fragmentDag(random, host))),
    ...times(COUNTS['fragment cycle'], (i) => fragmentCycle(random, i)),
    ...times(COUNTS['two root fields'], (i) => twoRootFields(i)),
    ...times(COUNTS['surrogate or NUL in variables'], () => surrogateInVariables(random)),
    ...times(COUNTS['surrogate or NUL in literals'], () => surrogateInLiterals(random)),
    ...times(COUNTS['Long out of range'], () => longOutOfRange(random)),
    ...times(COUNTS['deep JSON'], (i) => deepJson(random, i)),
    ...times(COUNTS['alias flood'], (i) => aliasFlood(random, i)),
    ...times(COUNTS['field repetition flood'], () => fieldRepetitionFlood(random)),
    ...times(COUNTS['directive flood'], () => directiveFlood(random)),
    ...anonymousCases(),
  );
  return cases;
}

// ---- sending ----

async function send(c: HostileCase): Promise<PostOutcome> {
  if (!c.get) return postGraphql(api.url, c.body, { token: c.token, timeoutMs: HANG_MS });
  const started = performance.now();
  try {
    // a client that asks for JSON: GraphiQL's page is for browsers (text/html) only
    const response = await fetch(`${api.url}/graphql?${c.body}`, {
      headers: { Accept: 'application/json' },
      signal: AbortSignal.timeout(HANG_MS),
    });
    const body = (await response.json().catch(() => ({}))) as { errors?: Array<{ extensions?: { code?: string } }> };
    const codes = (body.errors ?? []).map((e) => String(e.extensions?.code));
    return {
      status: response.status,
      codes,
      code: codes[0],
      details: undefined,
      headerCode: response.headers.get('x-error-code'),
      ms: performance.now() - started,
    };
  } catch (error) {
    return {
      status: 0,
      codes: [],
      code: undefined,
      details: undefined,
      headerCode: null,
      ms: performance.now() - started,
      failure: (error as Error).name,
    };
  }
}

/** GET /healthz every 250 ms while the cases run (not while the API restarts): every answer a 200 within a second. */
function watchHealth() {
  const failures: string[] = [];
  let answered = 0;
  let paused = false;
  const timer = setInterval(() => {
    if (paused) return;
    const started = performance.now();
    fetch(`${api.url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => {
        answered++;
        if (r.status !== 200 && !paused) failures.push(`${r.status} after ${Math.round(performance.now() - started)} ms`);
      },
      (error: Error) => {
        if (!paused) failures.push(`${error.name} after ${Math.round(performance.now() - started)} ms`);
      },
    );
  }, 250);
  return {
    failures,
    answered: () => answered,
    pause: (value: boolean) => (paused = value),
    stop: () => clearInterval(timer),
  };
}

beforeAll(async () => {
  api = await startTestApiProcess();
  world = await prepareFuzzWorld(api);
}, 120_000);
afterAll(async () => api?.close());

describe('fuzzing documents', () => {
  it('answers hostile documents and inputs promptly, never with a 5xx, while /healthz answers; no request changes a row', async () => {
    const roots = [world.schema.getQueryType(), world.schema.getSubscriptionType(), world.schema.getMutationType()];
    COUNTS.anonymous = roots.reduce((n, root) => n + Object.keys(root!.getFields()).length, TOKENLESS_WAYS);
    const cases = generateCases();
    expect(cases.length).toBe(Object.values(COUNTS).reduce((a, b) => a + b, 0));
    for (const category of Object.keys(COUNTS) as Category[]) {
      expect(cases.filter((c) => c.category === category).length, category).toBe(COUNTS[category]);
    }

    const health = watchHealth();
    const hangs = new Map<Category, number>();
    const serverErrors: string[] = [];
    const wrongAnswers: string[] = [];
    const slow: string[] = [];
    const changedRows: string[] = [];
    const failedBy = new Map<Category, number>();
    const fail = (c: HostileCase, list: string[], text: string) => {
      list.push(`${c.category}: ${c.label} → ${text}`);
      failedBy.set(c.category, (failedBy.get(c.category) ?? 0) + 1);
    };
    let before = await world.fingerprint();
    for (const c of cases) {
      if ((hangs.get(c.category) ?? 0) >= HANGS_PER_CATEGORY) {
        fail(c, serverErrors, `not sent: the API hung ${HANGS_PER_CATEGORY} times on this category`);
        continue;
      }
      const outcome = await send(c);
      if (outcome.status === 0) {
        fail(c, serverErrors, `no answer within ${HANG_MS} ms (${outcome.failure})`);
        hangs.set(c.category, (hangs.get(c.category) ?? 0) + 1);
        health.pause(true);
        await api.restart();
        health.pause(false);
      } else if (outcome.status >= 500) {
        fail(c, serverErrors, describeOutcome(outcome));
      } else {
        const wrong = c.judge(outcome);
        if (wrong) fail(c, wrongAnswers, wrong);
        if (outcome.ms > PROMPT_MS) fail(c, slow, `${Math.round(outcome.ms)} ms`);
      }
      const after = await world.fingerprint();
      const changed = changedTables(before, after);
      if (changed.length) fail(c, changedRows, `${describeOutcome(outcome)}, changed ${changed.join(', ')}`);
      before = after;
    }
    health.stop();

    const summary = Object.fromEntries(
      (Object.keys(COUNTS) as Category[]).map((k) => [k, `${COUNTS[k]}${failedBy.get(k) ? ` (${failedBy.get(k)} failed)` : ''}`]),
    );
    console.log(`fuzz-documents: ${cases.length} cases ${JSON.stringify(summary)}; /healthz answered ${health.answered()} times`);
    // soft: every list is reported, not only the first that fails
    expect.soft(serverErrors, 'no 5xx and no hang').toEqual([]);
    expect.soft(changedRows, 'no request changed a row').toEqual([]);
    expect.soft(wrongAnswers, 'each refused as the contract says').toEqual([]);
    expect.soft(slow, `every answer within ${PROMPT_MS} ms`).toEqual([]);
    expect.soft(health.failures, '/healthz answered throughout').toEqual([]);
    expect(health.answered()).toBeGreaterThan(0);
  }, 240_000);

  it('leaves every anonymous client that posts a whole 2 MB body its 401, never a reset (500 in a row)', async () => {
    // a socket closed with unread bytes is answered by a reset, which a client still sending may see before the 401
    const body = gqlBody('{ __typename }', { pad: 'p'.repeat(2_000_000) });
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < 500; i++) {
      const outcome = await postGraphql(api.url, body, { token: null, timeoutMs: HANG_MS });
      const key = outcome.status ? `${outcome.status} ${outcome.code}` : `no answer (${outcome.failure})`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ '401 UNAUTHENTICATED': 500 });
  }, 60_000);
});
