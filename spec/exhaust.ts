// The reduced instance of the spec (module `reduced` of load-control.qnt: one run, two partitions of one chunk),
// explored exhaustively: every state reachable within a depth bound, each checked against `safety`.
//
// No bounded model checker can be installed on these machines: Apalache and TLC are downloads from GitHub, and
// neither is on npm or Maven Central. So this drives Quint's own evaluator (the TypeScript backend of the pinned
// @informalsystems/quint) with its nondeterminism taken out of its hands: every `nondet x = S.oneOf()` and every
// `any { … }` asks a chooser instead of the random number generator, and the step is evaluated once for every
// combination of answers — every successor of a state, not a sample. A breadth-first search over the states so
// found, deduplicated, goes as deep as the bound, or until no new state appears (the whole reachable graph).
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as CliCommands from '@informalsystems/quint/dist/src/cliCommands.js';
import type * as CliHelpers from '@informalsystems/quint/dist/src/cliHelpers.js';
import type * as IdGenerator from '@informalsystems/quint/dist/src/idGenerator.js';
import type * as IrPrinting from '@informalsystems/quint/dist/src/ir/IRprinting.js';
import type * as Builder from '@informalsystems/quint/dist/src/runtime/impl/builder.js';
import type * as Builtins from '@informalsystems/quint/dist/src/runtime/impl/builtins.js';
import type { Context } from '@informalsystems/quint/dist/src/runtime/impl/Context.js';
import type * as ContextModule from '@informalsystems/quint/dist/src/runtime/impl/Context.js';
import type * as Nondet from '@informalsystems/quint/dist/src/runtime/impl/nondet.js';
import type { RuntimeValue } from '@informalsystems/quint/dist/src/runtime/impl/runtimeValue.js';
import type * as RuntimeValues from '@informalsystems/quint/dist/src/runtime/impl/runtimeValue.js';
import type * as Trace from '@informalsystems/quint/dist/src/runtime/trace.js';
import { importsOf, quintSession, SPEC_FILE, safetyInvariants, specConstant, specText } from './quint.js';

// Quint's modules as its own code loads them (CommonJS), so that the evaluator it builds uses the chooser.
const quint = createRequire(import.meta.url);
const dist = '@informalsystems/quint/dist/src';
const { load, parse, typecheck } = quint(`${dist}/cliCommands.js`) as typeof CliCommands;
const { toExpr } = quint(`${dist}/cliHelpers.js`) as typeof CliHelpers;
const { zerog } = quint(`${dist}/idGenerator.js`) as typeof IdGenerator;
const { expressionToString } = quint(`${dist}/ir/IRprinting.js`) as typeof IrPrinting;
const { Builder: QuintBuilder, buildExpr } = quint(`${dist}/runtime/impl/builder.js`) as typeof Builder;
const builtins = quint(`${dist}/runtime/impl/builtins.js`) as typeof Builtins;
const { Context: QuintContext } = quint(`${dist}/runtime/impl/Context.js`) as typeof ContextModule;
const nondet = quint(`${dist}/runtime/impl/nondet.js`) as typeof Nondet;
const { rv } = quint(`${dist}/runtime/impl/runtimeValue.js`) as typeof RuntimeValues;
const { noExecutionListener } = quint(`${dist}/runtime/trace.js`) as typeof Trace;

/**
 * The answers to the choices one evaluation makes, in the order it makes them, and the next combination to try:
 * the choices after the last one that can still change start again from 0 (an odometer over a tree whose shape
 * each evaluation discovers).
 */
class Chooser {
  private made: Array<{ chosen: number; of: number }> = [];
  private at = 0;

  choose(of: number): number {
    const made = this.made[this.at];
    if (made && made.of !== of) throw new Error(`choice ${this.at}: ${made.of} options before, ${of} now: the step is not deterministic`);
    if (!made) this.made.push({ chosen: 0, of });
    return this.made[this.at++]!.chosen;
  }

  /** The next combination; false once every one was tried (and the chooser is ready for a new evaluation). */
  advance(): boolean {
    this.made.length = this.at;
    this.at = 0;
    while (this.made.length > 0) {
      const last = this.made[this.made.length - 1]!;
      if (last.chosen + 1 < last.of) {
        last.chosen++;
        return true;
      }
      this.made.pop();
    }
    return false;
  }
}

const chooser = new Chooser();
type NondetEval = ReturnType<typeof Nondet.evalNondet>;
// `nondet x = S.oneOf()`: x is the element the chooser picks (Quint's own retries another random element when
// the body is false; here the other elements are other combinations)
Object.assign(nondet, {
  evalNondet:
    (_name: string, cache: { value: unknown }, setEval: NondetEval, bodyEval: NondetEval): NondetEval =>
    (ctx) => {
      const evaluated = setEval(ctx);
      if (evaluated.isLeft()) return evaluated;
      const set = evaluated.value;
      // nothing to pick from: the step is not enabled
      if (set.cardinality().unwrap() === 0n) return evaluated.map(() => rv.mkBool(false));
      const bounds = set.bounds().map((bound) => {
        if (bound.isNone()) throw new Error('nondet over an infinite set: not enumerable');
        return bound.value;
      });
      cache.value = set.pick(bounds.map((bound) => BigInt(chooser.choose(Number(bound)))).values());
      const result = bodyEval(ctx);
      cache.value = undefined;
      return result;
    },
});
// `any { A, B, … }`: the action the chooser picks, alone
const lazyBuiltinLambda = builtins.lazyBuiltinLambda;
Object.assign(builtins, {
  lazyBuiltinLambda: (op: string) =>
    op === 'actionAny' ? (ctx: Context, actions: NondetEval[]) => actions[chooser.choose(actions.length)]!(ctx) : lazyBuiltinLambda(op),
});

// ---- the key a state is told apart by ----

/** A state as Quint writes it in a trace (ITF: ints as {"#bigint"}, sets, maps, tuples, variants as {tag, value}). */
export type ItfState = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: ITF JSON, walked below by the field names of the spec's types
type Itf = any;

/** JSON in which equal values are equal text: every set's elements and map's entries sorted, records' fields too. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const v = value as Record<string, unknown>;
  if ('#bigint' in v) return String(v['#bigint']);
  if ('#set' in v) return `{"#set":[${(v['#set'] as unknown[]).map(canonical).sort().join(',')}]}`;
  if ('#map' in v) {
    const entries = (v['#map'] as Array<[unknown, unknown]>).map(([k, x]) => `[${canonical(k)},${canonical(x)}]`);
    return `{"#map":[${entries.sort().join(',')}]}`;
  }
  return `{${Object.keys(v)
    .sort()
    .map((field) => `${JSON.stringify(field)}:${canonical(v[field])}`)
    .join(',')}}`;
}

/** The variables a state is told apart by, named without their module prefix: every one but `last` and `pace`. */
function variables(state: ItfState): Record<string, Itf> {
  return Object.fromEntries(
    Object.entries(state)
      .map(([name, value]) => [name.split('::').pop()!, value] as const)
      .filter(([name]) => !['#meta', 'last', 'pace'].includes(name)),
  );
}

const int = (value: Itf): number => Number(value['#bigint']);
const entries = (map: Itf): Array<[Itf, Itf]> => map['#map'];
const mapEntries = (map: Itf, f: (entry: [Itf, Itf]) => [unknown, unknown]) => ({ '#map': entries(map).map(f) });
/** Order-preserving renaming of the values compared only for equality (0, "none", stays 0): 1, 2, … */
function renaming(values: number[]): (value: number) => number {
  const ranks = new Map(
    [...new Set(values)]
      .filter((v) => v !== 0)
      .sort((a, b) => a - b)
      .map((v, i) => [v, i + 1]),
  );
  return (value) => (value === 0 ? 0 : ranks.get(value)!);
}

// Every use of the clock in the spec compares an age, `now - t`, with one of these thresholds (or with 0: a call
// due, `dueAt <= now`); ages at least the greatest all compare alike, and stay so as the clock moves on.
const AGE_CAP = Math.max(...['STALE', 'VALIDATION_STALE', 'PUBLISH_STALE', 'RUN_TIMEOUT', 'ACK_TIMEOUT'].map(specConstant));
const MAX_ATTEMPTS = specConstant('MAX_ATTEMPTS');
const DISPATCH_ATTEMPTS = specConstant('DISPATCH_ATTEMPTS');
const DEAD_DISPATCH = ['ACKED', 'CANCELLED'];

/**
 * The state with what no step and no invariant of `safety` can tell apart taken out (see README, "Exhaustive where
 * it is small", for why each is sound): two states with the same abstraction have the same futures, up to the
 * same abstraction, and the same verdicts.
 * - Time: every timestamp as its age, capped at AGE_CAP (-1, "never", stays apart); a run's stale alerts as the age
 *   of its last one per status (lastAlert is all that reads them); `now` itself goes.
 * - Claim tokens, dispatch ids and idempotency keys, compared only for equality and always fresh when new: renamed
 *   1, 2, … in their order; `nextToken` goes (it is above every token); `nextKey` becomes the number of keys below
 *   it that no run holds (each may still create a run, or be refused).
 * - Attempts capped at MAX_ATTEMPTS and DISPATCH_ATTEMPTS (only compared with them); the token of a chunk no
 *   longer written (only written ones are read); a REISSUE_PARTITION call ACKED or CANCELLED and on no wire (no
 *   step moves it again, nothing counts it); the inbox's order (a FlowFile is taken at any index).
 * - An idle connection's transaction; an in-flight one's snapshot but its run's row and partitions (asRead reads
 *   no more of it).
 */
function abstracted(state: ItfState): Record<string, unknown> {
  const { ledger, nifi, inFlight, now } = variables(state);
  const age = (t: Itf) => (int(t) === -1 ? 'never' : Math.min(int(now) - int(t), AGE_CAP));
  const transactions = entries(inFlight).filter(([, txn]) => txn.step.tag !== 'Init');
  const snapshotOf = (txn: Itf) => ({
    run: entries(txn.snapshot.runs).find(([r]) => int(r) === int(txn.about))?.[1],
    partitions: entries(txn.snapshot.partitions).filter(([rp]) => int(rp['#tup'][0]) === int(txn.about)),
  });

  const partitionsOf = (l: Itf): Array<[Itf, Itf]> => entries(l.partitions);
  const token = renaming([
    ...[ledger, ...transactions.map(([, txn]) => txn.snapshot)].flatMap((l) =>
      partitionsOf(l).flatMap(([, x]) => [int(x.token), ...entries(x.files).map(([, f]) => int(f.token))]),
    ),
    ...entries(nifi.workers).map(([, w]) => int(w.token)),
    ...transactions.map(([, txn]) => (txn.step.tag === 'ReportChunk' ? int(txn.step.value.token) : 0)),
  ]);
  const onWire = entries(nifi.onWire).flatMap(([, calls]) => calls['#set'].map((call: Itf) => int(call['#tup'][0])));
  const dispatches = entries(ledger.dispatches).filter(
    ([d, x]) => !(x.kind === 'REISSUE_PARTITION' && DEAD_DISPATCH.includes(x.status) && !onWire.includes(int(d))),
  );
  const dispatch = renaming(dispatches.map(([d]) => int(d)));
  const keys = entries(ledger.runs).map(([, row]) => int(row.idempotencyKey));
  const key = renaming(keys);

  const run = (row: Itf) => {
    const lastAlerts = new Map<string, unknown>(row.staleAlerts.map((alert: Itf) => [alert['#tup'][0], age(alert['#tup'][1])]));
    return {
      ...row,
      idempotencyKey: key(int(row.idempotencyKey)),
      startedAt: age(row.startedAt),
      movedAt: age(row.movedAt),
      publishStartedAt: age(row.publishStartedAt),
      staleAlerts: Object.fromEntries(lastAlerts),
    };
  };
  const partition = ([rp, x]: [Itf, Itf]): [unknown, unknown] => [
    rp,
    {
      ...x,
      token: token(int(x.token)),
      attempts: Math.min(int(x.attempts), MAX_ATTEMPTS),
      createdAt: age(x.createdAt),
      heartbeat: age(x.heartbeat),
      files: mapEntries(x.files, ([c, f]) => [c, { ...f, token: f.written ? token(int(f.token)) : 0 }]),
    },
  ];
  const flowFile = (f: Itf) => (f.tag === 'Validate' ? { ...f, value: [int(f.value['#tup'][0]), dispatch(int(f.value['#tup'][1]))] } : f);
  return {
    ledger: {
      ...ledger,
      runs: mapEntries(ledger.runs, ([r, row]) => [r, run(row)]),
      partitions: { '#map': partitionsOf(ledger).map(partition) },
      dispatches: {
        '#map': dispatches.map(([d, x]) => [
          dispatch(int(d)),
          { ...x, attempts: Math.min(int(x.attempts), DISPATCH_ATTEMPTS), dueAt: age(x.dueAt), sentAt: age(x.sentAt) },
        ]),
      },
    },
    inFlight: mapEntries(inFlight, ([c, txn]) => {
      if (txn.step.tag === 'Init') return [c, 'idle'];
      const step =
        txn.step.tag === 'ReportChunk' ? { ...txn.step, value: { ...txn.step.value, token: token(int(txn.step.value.token)) } } : txn.step;
      const read = snapshotOf(txn);
      return [c, { ...txn, step, at: age(txn.at), snapshot: { run: run(read.run), partitions: read.partitions.map(partition) } }];
    }),
    nifi: {
      workers: mapEntries(nifi.workers, ([w, x]) => [w, { ...x, token: token(int(x.token)) }]),
      inbox: nifi.inbox.map(flowFile).map(canonical).sort(),
      onWire: mapEntries(nifi.onWire, ([k, calls]) => [
        k,
        { '#set': calls['#set'].map((call: Itf) => [dispatch(int(call['#tup'][0])), Math.min(int(call['#tup'][1]), DISPATCH_ATTEMPTS)]) },
      ]),
      unusedKeys: int(nifi.nextKey) - 1 - keys.length,
    },
  };
}

/** A value of the evaluator as Quint writes it in a trace (its itf.ts, without the detour through expressions). */
function itfOf(value: RuntimeValue): unknown {
  switch (value.constructor.name) {
    case 'RuntimeValueBool':
      return value.toBool();
    case 'RuntimeValueInt':
      return { '#bigint': String(value.toInt()) };
    case 'RuntimeValueStr':
      return value.toStr();
    case 'RuntimeValueTupleOrList': {
      const items = [...value.toList()].map(itfOf);
      return (value as unknown as { kind: string }).kind === 'Tup' ? { '#tup': items } : items;
    }
    case 'RuntimeValueRecord':
      return Object.fromEntries([...value.toOrderedMap()].map(([field, x]) => [field, itfOf(x)]));
    case 'RuntimeValueVariant': {
      const [tag, x] = value.toVariant();
      return { tag, value: itfOf(x) };
    }
    case 'RuntimeValueMap':
      return { '#map': [...value.toMap()].map(([k, x]) => [itfOf(k), itfOf(x)]) };
    default:
      return { '#set': [...value.toSet()].map(itfOf) };
  }
}

/** The key a state (as ITF) is told apart by: its variables but `last` and `pace`, or their abstraction. */
export function stateKey(state: ItfState, abstract: boolean): string {
  return canonical(abstract ? abstracted(state) : variables(state));
}

export interface Exploration {
  /** Distinct states reached (the variables but `last` and `pace`; see `explore`), with those of a level the
   * budget cut short. */
  states: number;
  /** Distinct (state, successor) pairs. */
  transitions: number;
  /** Evaluations of the step that were enabled, each a successor checked against `safety`. */
  stepsChecked: number;
  /** The deepest level enumerated in full (the bound, unless saturated or stopped by a violation). */
  depth: number;
  /** True if a level added no new state: the whole reachable graph was enumerated, not only up to the bound. */
  saturated: boolean;
  /** New states per depth: [init states, after one step, …]. */
  perDepth: number[];
  seconds: number;
  /** The first state found violating `safety` (at the least depth: the search is breadth-first): the invariants it
   * violates and the steps that reach it from an initial state (`Init` first), each with the API's answer. */
  violation?: { invariants: string[]; steps: string[] };
  /** Whether a state (as `quint run` writes it) is one of those enumerated, told apart as the exploration did. */
  reaches: (state: ItfState) => boolean;
}

export interface ExploreOptions {
  /** Tell states apart by their abstraction (`abstracted`), not by their variables: the graph is finite. */
  abstract?: boolean;
  /** Stop once this many seconds have gone, in the middle of a level if need be (`depth`: the last one done). */
  budgetSeconds?: number;
  /** Told of each level as it is done: its depth, its new states, the seconds so far. */
  onLevel?: (depth: number, states: number, seconds: number) => void;
}

/**
 * Every state of module `reduced` (with PLANTED_BUG `bug`) reachable within `maxDepth` steps of `anyStep`
 * (every branch of `step`) from `init`, each checked against `safety`; stops at the first violation.
 *
 * States are told apart by every variable but two: `last` (what the step that reached the state did; the
 * invariants read it, so it is checked for every step that reaches a state, but no step reads it) and `pace`
 * (how `step` weighs its branches; `anyStep` takes them all, so no successor depends on it).
 */
export async function explore(maxDepth: number, bug = 'none', options: ExploreOptions = {}): Promise<Exploration> {
  const started = performance.now();
  const file = instanceFile(bug);

  const args = { input: file, main: 'exhaust', backend: 'typescript', verbosity: 0 };
  const typechecked = await load(args)
    .then((r) => r.asyncChain(parse))
    .then((r) => r.asyncChain(typecheck));
  if (typechecked.isLeft()) {
    const { msg, stage } = typechecked.value;
    throw new Error(`${file}: ${msg}\n${(stage.errors ?? []).map((error) => error.explanation).join('\n')}`);
  }
  const stage = typechecked.value;
  const expression = (text: string) => {
    const parsed = toExpr(stage, text);
    if (parsed.isLeft()) throw new Error(`${text}: ${parsed.value.message}`);
    return parsed.value;
  };
  const builder = new QuintBuilder(stage.resolver.table, false);
  // nothing is recorded: the exploration keeps its own states
  const ctx = new QuintContext(
    noExecutionListener as Trace.TraceRecorder,
    () => {
      throw new Error('the evaluator asked for a random number');
    },
    builder.varStorage,
  );
  const evaluate = (text: string) => {
    const compiled = buildExpr(builder, expression(text));
    return () => {
      const result = compiled(ctx);
      if (result.isLeft()) throw new Error(`${text}: ${result.value.message}`);
      return result.value.toBool();
    };
  };
  const init = evaluate('init');
  const step = evaluate('anyStep');
  const safety = evaluate('safety');
  const storage = builder.varStorage;

  // the successors of `from` (undefined: the initial states), each as the record of its variables
  const successors = (from: RuntimeValue | undefined, action: () => boolean): RuntimeValue[] => {
    const found: RuntimeValue[] = [];
    do {
      if (from) storage.fromRecord(from);
      else storage.reset();
      if (action()) {
        storage.shiftVars();
        found.push(storage.asRecord());
      }
    } while (chooser.advance());
    return found;
  };
  const keyOfItf = (state: ItfState) => stateKey(state, options.abstract ?? false);
  const keyOf = (state: RuntimeValue) => keyOfItf(itfOf(state) as ItfState);

  // the states found: by their key, and each with the state and step it was first reached from
  const seen = new Map<string, number>();
  const found: Array<{ state: RuntimeValue; parent: number }> = [];
  const idOf = (key: string) => seen.get(key);
  const add = (key: string, state: RuntimeValue, parent: number) => {
    const id = found.length;
    found.push({ state, parent });
    seen.set(key, id);
    return id;
  };
  // what the step that reached `state` did, and what the API answered
  const lastStep = (state: RuntimeValue) => {
    const last = state
      .toOrderedMap()
      .findEntry((_, name) => name.endsWith('::last'))![1]
      .toOrderedMap();
    const show = (field: string) => expressionToString(last.get(field)!.toQuintEx(zerog));
    return `${show('step')} → ${show('answer')}`;
  };
  const violationAt = (state: RuntimeValue, parent: number): Exploration['violation'] => {
    storage.fromRecord(state);
    const invariants = safetyInvariants().filter((name) => !evaluate(name)());
    const steps = [lastStep(state)];
    for (let at = parent; at >= 0; at = found[at]!.parent) steps.unshift(lastStep(found[at]!.state));
    return { invariants, steps };
  };

  // `safety` is evaluated once per distinct record (the state and `last`): many steps reach the same
  const checked = new Map<number, RuntimeValue[]>();
  const isSafe = (state: RuntimeValue) => {
    const bucket = checked.get(state.hashCode());
    if (bucket?.some((other) => other.equals(state))) return true;
    storage.fromRecord(state);
    if (!safety()) return false;
    if (bucket) bucket.push(state);
    else checked.set(state.hashCode(), [state]);
    return true;
  };

  let transitions = 0;
  let stepsChecked = 0;
  const perDepth: number[] = [];
  const result = (violation?: Exploration['violation']): Exploration => {
    const saturated = perDepth.at(-1) === 0;
    const levels = saturated ? perDepth.slice(0, -1) : perDepth;
    const seconds = (performance.now() - started) / 1000;
    const reaches = (state: ItfState) => seen.has(keyOfItf(state));
    return {
      states: found.length,
      transitions,
      stepsChecked,
      depth: levels.length - 1,
      saturated,
      perDepth: levels,
      seconds,
      violation,
      reaches,
    };
  };

  let frontier: number[] = [];
  for (const state of successors(undefined, init)) {
    stepsChecked++;
    if (!isSafe(state)) return result(violationAt(state, -1));
    const key = keyOf(state);
    if (idOf(key) === undefined) frontier.push(add(key, state, -1));
  }
  perDepth.push(frontier.length);
  const secondsSoFar = () => (performance.now() - started) / 1000;
  options.onLevel?.(0, frontier.length, secondsSoFar());
  const overBudget = () => secondsSoFar() >= (options.budgetSeconds ?? Number.POSITIVE_INFINITY);
  for (let depth = 1; depth <= maxDepth && frontier.length > 0; depth++) {
    const next: number[] = [];
    for (const parent of frontier) {
      if (overBudget()) return result();
      const targets = new Set<number>();
      for (const state of successors(found[parent]!.state, step)) {
        stepsChecked++;
        if (!isSafe(state)) return result(violationAt(state, parent));
        const key = keyOf(state);
        let id = idOf(key);
        if (id === undefined) {
          id = add(key, state, parent);
          next.push(id);
        }
        targets.add(id);
      }
      transitions += targets.size;
    }
    perDepth.push(next.length);
    options.onLevel?.(depth, next.length, secondsSoFar());
    frontier = next;
  }
  return result();
}

/** The spec's module `reduced` with PLANTED_BUG `bug`, as module `exhaust` of a file of its own. */
function instanceFile(bug: string): string {
  if (bug !== 'none' && !specText().includes(`PLANTED_BUG = "${bug}"`)) throw new Error(`no planted bug "${bug}" in ${SPEC_FILE}`);
  const dir = mkdtempSync(join(tmpdir(), 'lc-spec-exhaust-'));
  const file = join(dir, 'exhaust.qnt');
  const imports = importsOf('reduced', dir).map((line) => line.replace('PLANTED_BUG = "none"', `PLANTED_BUG = "${bug}"`));
  writeFileSync(file, ['module exhaust {', ...imports, '}', ''].join('\n'));
  return file;
}

/**
 * The states of `traces` traces of at most `maxSteps` steps of `anyStep`, drawn by Quint's own simulator (a `quint
 * run` in a session process of its own, spec/quint-session.ts: its evaluator as published, not the one `explore`
 * drives) from the same instance: the evidence that `explore` enumerates what Quint means by the spec. Every trace's
 * states, one after the other.
 */
export async function sampleWithQuint(traces: number, maxSteps: number, seed: string, limitMs: number): Promise<ItfState[]> {
  const file = instanceFile('none');
  const dir = mkdtempSync(join(tmpdir(), 'lc-spec-sample-'));
  const title = 'sample';
  const { output, results } = await quintSession(
    file,
    [
      {
        title,
        main: 'exhaust',
        step: 'anyStep',
        seed,
        samples: traces,
        steps: maxSteps,
        traces,
        outItf: join(dir, 'trace_{seq}.itf.json'),
      },
    ],
    limitMs,
  );
  if (!results.get(title)?.passed) throw new Error(`quint run failed:\n${output}`);
  const files = readdirSync(dir).filter((name) => name.endsWith('.itf.json'));
  if (files.length !== traces) throw new Error(`quint run wrote ${files.length} traces, not ${traces}:\n${output}`);
  return files.flatMap((name) => (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { states: ItfState[] }).states);
}
