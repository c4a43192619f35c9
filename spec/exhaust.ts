// The reduced instance of the spec (module `reduced` of load-control.qnt: one run, two partitions of one chunk),
// explored exhaustively: every state reachable within a depth bound, each checked against `safety`.
//
// No bounded model checker can be installed on these machines: Apalache and TLC are downloads from GitHub, and
// neither is on npm or Maven Central. So this drives Quint's own evaluator (the TypeScript backend of the pinned
// @informalsystems/quint) with its nondeterminism taken out of its hands: every `nondet x = S.oneOf()` and every
// `any { … }` asks a chooser instead of the random number generator, and the step is evaluated once for every
// combination of answers — every successor of a state, not a sample. A breadth-first search over the states so
// found, deduplicated, goes as deep as the bound, or until no new state appears (the whole reachable graph).
import { mkdtempSync, writeFileSync } from 'node:fs';
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
import { importsOf, SPEC_FILE, safetyInvariants, specText } from './quint.js';

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

export interface Exploration {
  /** Distinct states reached (the variables but `last` and `pace`; see `explore`). */
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
}

/**
 * Every state of module `reduced` (with PLANTED_BUG `bug`) reachable within `maxDepth` steps of `anyStep`
 * (every branch of `step`) from `init`, each checked against `safety`; stops at the first violation.
 *
 * States are told apart by every variable but two: `last` (what the step that reached the state did; the
 * invariants read it, so it is checked for every step that reaches a state, but no step reads it) and `pace`
 * (how `step` weighs its branches; `anyStep` takes them all, so no successor depends on it).
 */
export async function explore(maxDepth: number, bug = 'none'): Promise<Exploration> {
  if (bug !== 'none' && !specText().includes(`PLANTED_BUG = "${bug}"`)) throw new Error(`no planted bug "${bug}" in ${SPEC_FILE}`);
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'lc-spec-exhaust-'));
  const file = join(dir, 'exhaust.qnt');
  const imports = importsOf('reduced', dir).map((line) => line.replace('PLANTED_BUG = "none"', `PLANTED_BUG = "${bug}"`));
  writeFileSync(file, ['module exhaust {', ...imports, '}', ''].join('\n'));

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
  const isIgnored = (name: string) => name.endsWith('::last') || name.endsWith('::pace');
  const keyOf = (state: RuntimeValue) => rv.mkRecord([...state.toOrderedMap().entries()].filter(([name]) => !isIgnored(name)));

  // the states found: by their key's hash, and each with the state and step it was first reached from
  const seen = new Map<number, Array<{ key: RuntimeValue; id: number }>>();
  const found: Array<{ state: RuntimeValue; parent: number }> = [];
  const idOf = (key: RuntimeValue) => seen.get(key.hashCode())?.find((entry) => entry.key.equals(key))?.id;
  const add = (key: RuntimeValue, state: RuntimeValue, parent: number) => {
    const id = found.length;
    found.push({ state, parent });
    const bucket = seen.get(key.hashCode());
    if (bucket) bucket.push({ key, id });
    else seen.set(key.hashCode(), [{ key, id }]);
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
    return { states: found.length, transitions, stepsChecked, depth: levels.length - 1, saturated, perDepth: levels, seconds, violation };
  };

  let frontier: number[] = [];
  for (const state of successors(undefined, init)) {
    stepsChecked++;
    if (!isSafe(state)) return result(violationAt(state, -1));
    const key = keyOf(state);
    if (idOf(key) === undefined) frontier.push(add(key, state, -1));
  }
  perDepth.push(frontier.length);
  for (let depth = 1; depth <= maxDepth && frontier.length > 0; depth++) {
    const next: number[] = [];
    for (const parent of frontier) {
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
    frontier = next;
  }
  return result();
}
