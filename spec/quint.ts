// Quint (the npm package @informalsystems/quint) run as a child process, what the spec states read from its text,
// and the traces Quint writes (ITF) read back. Only Quint's TypeScript backend is used: the Rust one is a download.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SPEC_FILE = join(dirname(fileURLToPath(import.meta.url)), 'load-control.qnt');
const SESSION = join(dirname(fileURLToPath(import.meta.url)), 'quint-session.ts');

/** A `quint test` (test: true) or `quint run` of the module `main`. */
export interface QuintCommand {
  title: string;
  test?: boolean;
  main: string;
  /** The step of a run (`quint run --step`); `step` if not given. */
  step?: string;
  seed: string;
  samples?: number;
  steps?: number;
  invariants?: string[];
  witnesses?: string[];
  /** A file name with {seq}, for the traces (ITF) of a run. */
  outItf?: string;
  traces?: number;
}

export interface QuintResult {
  passed: boolean;
  output: string;
}

/**
 * Runs the commands in one Quint process on `file` (spec/quint-session.ts: the spec is parsed and type-checked
 * once); past `limitMs` it is killed. Each command's result by title; a command that never ran is missing.
 */
export function quintSession(
  file: string,
  commands: QuintCommand[],
  limitMs: number,
): Promise<{ output: string; results: Map<string, QuintResult> }> {
  return new Promise((resolve) => {
    // the commands on stdin: hundreds of them outgrow an argument list
    const child = spawn(process.execPath, ['--import', 'tsx', SESSION, file], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end(JSON.stringify(commands));
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      output += `\n(quint killed after ${limitMs} ms)`;
      child.kill('SIGKILL');
    }, limitMs);
    // 'close', not 'exit': the output may still be arriving when the process has exited
    child.on('close', () => {
      clearTimeout(timer);
      const results = new Map<string, QuintResult>();
      for (const command of commands) {
        const start = output.indexOf(`::quint:: ${command.title}\n`);
        const end = /::quint:: .* (passed|failed)\n/.exec(output.slice(start));
        if (start >= 0 && end) {
          results.set(command.title, { passed: end[1] === 'passed', output: output.slice(start, start + end.index + end[0].length) });
        }
      }
      resolve({ output, results });
    });
  });
}

/** The invariants the simulator checks, one by one: the names listed by `val safety` and `val bounded`. */
export const invariants = (): string[] => [...safetyInvariants(), ...namesIn('bounded')];

/** The names listed by `val safety`. */
export const safetyInvariants = (): string[] => namesIn('safety');

// ---- what the spec states, read from its text: the one place its sizes, thresholds and status sets are written ----

export const specText = (): string => readFileSync(SPEC_FILE, 'utf8');

/** The names `val <aggregate> = and { … }` of the spec lists: the invariants the simulator checks one by one. */
function namesIn(aggregate: string): string[] {
  const body = new RegExp(`val ${aggregate} = and \\{([^}]*)\\}`).exec(specText());
  if (!body) throw new Error(`${SPEC_FILE}: no val ${aggregate} = and { … }`);
  return body[1]!
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
}

/**
 * The imports that make a module written in folder `dir` an instance of the spec's module `instance` (its
 * `import` lines, each read from the spec and pointed at its file): `checked` is the model checked in CI.
 */
export function importsOf(instance: string, dir: string): string[] {
  const imports = new RegExp(`module ${instance} \\{\n((?:  import .*\n)+)`).exec(specText());
  if (!imports) throw new Error(`${SPEC_FILE}: no module ${instance} that begins with its imports`);
  const from = relative(dir, SPEC_FILE).replace(/\.qnt$/, '');
  const path = from.startsWith('.') ? from : `./${from}`;
  return imports[1]!
    .trimEnd()
    .split('\n')
    .map((line) => `${line} from "${path}"`);
}

/** A whole-number constant of the spec: `pure val NAME = 2` (the full-size world's are in module fullSize). */
export function specConstant(name: string): number {
  const match = new RegExp(`pure val ${name} = (\\d+)`).exec(specText());
  if (!match) throw new Error(`${SPEC_FILE}: no pure val ${name}`);
  return Number(match[1]);
}

/** A set of strings or of tuples of strings: `pure val NAME = Set("A", …)` or `Set(("A", "B"), …)`, each as a list. */
export function specSet(name: string): string[][] {
  const text = specText();
  const start = text.indexOf(`pure val ${name} = Set(`);
  if (start < 0) throw new Error(`${SPEC_FILE}: no pure val ${name} = Set(…)`);
  let depth = 0;
  let end = text.indexOf('Set(', start) + 3;
  do {
    if (text[end] === '(') depth++;
    if (text[end] === ')') depth--;
    end++;
  } while (depth > 0);
  const body = text.slice(text.indexOf('Set(', start) + 4, end - 1);
  const strings = (s: string) => [...s.matchAll(/"(\w+)"/g)].map((m) => m[1]!);
  return body.includes('(') ? [...body.matchAll(/\(([^()]*)\)/g)].map((m) => strings(m[1]!)) : strings(body).map((s) => [s]);
}

/** How many of the explored traces witnessed each witness (`quint run --witnesses`). */
export function witnessCounts(output: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [, name, count] of output.matchAll(/^(\w+) was witnessed in (\d+) trace\(s\)/gm)) counts.set(name!, Number(count));
  return counts;
}

/** The invariants a violating run names (`❌ name`). */
export function violatedInvariants(output: string): string[] {
  return [...output.matchAll(/❌ (\w+)/g)].map((m) => m[1]!);
}

/** A seed for `--seed`: random, to be printed so that a failure can be reproduced. */
export function randomSeed(): string {
  return `0x${Math.floor(Math.random() * 2 ** 48).toString(16)}`;
}

// ---- ITF (the Informal Trace Format) decoded into plain values ----

/** A value of a trace: numbers for ints, arrays for lists, sets and tuples, Maps for maps, objects for records. */
export type ItfValue = number | string | boolean | ItfValue[] | Map<ItfValue, ItfValue> | { [field: string]: ItfValue } | Variant;
export interface Variant {
  tag: string;
  value: ItfValue;
}

function decode(value: unknown): ItfValue {
  if (typeof value !== 'object' || value === null) return value as ItfValue;
  if (Array.isArray(value)) return value.map(decode);
  const v = value as Record<string, unknown>;
  if ('#bigint' in v) return Number(v['#bigint']);
  if ('#tup' in v) return (v['#tup'] as unknown[]).map(decode);
  if ('#set' in v) return (v['#set'] as unknown[]).map(decode);
  if ('#map' in v) {
    // keys of a map in this spec are ints, strings or tuples of ints: keyed by their JSON
    return new Map((v['#map'] as Array<[unknown, unknown]>).map(([k, x]) => [keyOf(decode(k)), decode(x)]));
  }
  if ('tag' in v && 'value' in v && Object.keys(v).length === 2) return { tag: v.tag as string, value: decode(v.value) };
  return Object.fromEntries(Object.entries(v).map(([field, x]) => [field, decode(x)]));
}

/** A map key as used in decoded Maps: ints and strings as they are, tuples as their JSON ("[1,2]"). */
export function keyOf(key: ItfValue): ItfValue {
  return Array.isArray(key) ? JSON.stringify(key) : key;
}

export interface Trace {
  file: string;
  /** Each state's variables, named without their module prefix (`checked::loadControl::ledger` → `ledger`). */
  states: Array<Record<string, ItfValue>>;
}

export function readTrace(file: string): Trace {
  const itf = JSON.parse(readFileSync(file, 'utf8')) as { states: Array<Record<string, unknown>> };
  return {
    file,
    states: itf.states.map((state) =>
      Object.fromEntries(
        Object.entries(state)
          .filter(([name]) => name !== '#meta')
          .map(([name, value]) => [name.split('::').pop()!, decode(value)]),
      ),
    ),
  };
}
