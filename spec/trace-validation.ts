// Trace validation, implementation → spec: a history the real system made — calls raced through several `serve`
// processes, their answers, and the ledger they left (run, partitions, outbox, EXTRACT_VALIDATED events) — is judged
// by the model's own transition functions. The calls that raced are unordered; the history is valid when some order
// of them, each taken by the model from the state the history started in, answers every call as the system did and
// leaves the system's ledger (linearizability against the model). Each order is a `run` of a generated Quint module.
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { importsOf, quintSession } from './quint.js';

/** A call of the model, as its step, with what the system answered it. */
export type ObservedCall =
  | { call: 'reportChunk'; worker: 1 | 2; chunk: number; answer: ChunkAnswer }
  | { call: 'cancelRun'; answer: { runStatus: string; changed: boolean } | { code: string } }
  | { call: 'reissuePartition'; partition: 1 | 2; answer: { partitionStatus: string } | { code: string } };

type ChunkAnswer = { partitionStatus: string; runStatus: string; receivedChunks: number; validationScheduled: boolean } | { code: string };

/** What the system's ledger held afterwards, in the model's terms (partitions 1 and 2; dispatches by kind). */
export interface ObservedLedger {
  runStatus: string;
  successes: number;
  extracted: number;
  partitions: [string, string];
  /** EXTRACT_VALIDATED events: completions decided. */
  completions: number;
  /** The outbox: (kind, status) of every row. */
  dispatches: Array<[string, string]>;
}

/**
 * Where the history starts, as steps of the model that the system's setup mirrored: run 1 planned with two partitions
 * of two one-row chunks, worker 1 owning partition 1 (token 1) and worker 2 partition 2 (token 2), each first chunk
 * reported; `firstPartitionDone`: partition 1's last chunk too.
 */
const HISTORY_STARTS = {
  bothFirstChunks: 'planned.then(claimStep(1, 0)).then(claimStep(2, 0)).then(reportChunkStep(1, 0, 1)).then(reportChunkStep(2, 0, 1))',
  firstPartitionDone:
    'planned.then(claimStep(1, 0)).then(claimStep(2, 0)).then(reportChunkStep(1, 0, 1)).then(reportChunkStep(2, 0, 1)).then(reportChunkStep(1, 1, 1))',
};

export interface History {
  name: string;
  start: keyof typeof HISTORY_STARTS;
  raced: ObservedCall[];
  after: ObservedLedger;
}

const S = (value: string) => `S(${JSON.stringify(value)})`;
const B = (value: boolean) => `B(${value})`;

function step(call: ObservedCall): string {
  switch (call.call) {
    case 'reportChunk':
      return `reportChunkStep(${call.worker}, ${call.chunk}, 1)`;
    case 'cancelRun':
      return 'cancelRunStep(1)';
    case 'reissuePartition':
      return `reissuePartitionStep(1, ${call.partition})`;
  }
}

function answered(answer: Record<string, string | number | boolean>): string {
  if ('code' in answer) return `last.answer.keys().contains("code") and last.answer.get("code") == ${S(String(answer.code))}`;
  const fields = Object.entries(answer).map(([field, value]) => {
    const literal = typeof value === 'string' ? S(value) : typeof value === 'boolean' ? B(value) : `I(${value})`;
    return `last.answer.get(${JSON.stringify(field)}) == ${literal}`;
  });
  return ['not(last.answer.keys().contains("code"))', ...fields].join(' and ');
}

function leftAs(after: ObservedLedger): string {
  const kinds = after.dispatches.map(([kind, status]) => `(${JSON.stringify(kind)}, ${JSON.stringify(status)})`);
  return [
    `status(ledger, 1) == ${JSON.stringify(after.runStatus)}`,
    `ledger.runs.get(1).successes == ${after.successes}`,
    `ledger.runs.get(1).extracted == ${after.extracted}`,
    `partitionStatus(ledger, 1, 1) == ${JSON.stringify(after.partitions[0])}`,
    `partitionStatus(ledger, 1, 2) == ${JSON.stringify(after.partitions[1])}`,
    `ledger.runs.get(1).completions == ${after.completions}`,
    `ledger.dispatches.keys().size() == ${after.dispatches.length}`,
    `ledger.dispatches.keys().map(d => (ledger.dispatches.get(d).kind, ledger.dispatches.get(d).status)) == Set(${kinds.join(', ')})`,
  ].join(' and ');
}

function orders<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => orders([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

/** The Quint module of the histories: one `run` per history and order of its raced calls. */
function validationModule(
  file: string,
  histories: History[],
): { text: string; runs: Map<string, Array<{ name: string; order: number[] }>> } {
  const runs = new Map<string, Array<{ name: string; order: number[] }>>();
  const body: string[] = [];
  histories.forEach((history, h) => {
    const names: Array<{ name: string; order: number[] }> = [];
    orders(history.raced.map((_, i) => i)).forEach((indices, o) => {
      const order = indices.map((i) => history.raced[i]!);
      const name = `h${h}order${o}Test`;
      names.push({ name, order: indices });
      const steps = order.map((call) => `.then(${step(call)}).expect(${answered(call.answer)})`).join('\n      ');
      body.push(`  run ${name} =\n    ${HISTORY_STARTS[history.start]}\n      ${steps}\n      .expect(${leftAs(history.after)})`);
    });
    runs.set(history.name, names);
  });
  const text = ['module validation {', ...importsOf('checked', dirname(file)), ...body, '}', ''].join('\n');
  return { text, runs };
}

export interface Verdict {
  history: string;
  /** Whether some order of the raced calls is a behaviour of the model that ends where the system did. */
  valid: boolean;
  /** The orders the model accepts, as the raced calls' indices in the order the model takes them. */
  orders: number[][];
}

/** Judges the histories by the model (one Quint session); the module and its output are left in `file`'s folder. */
export async function validateHistories(file: string, histories: History[]): Promise<{ verdicts: Verdict[]; output: string }> {
  const { text, runs } = validationModule(file, histories);
  writeFileSync(file, text);
  const { results, output } = await quintSession(file, [{ title: 'validation', test: true, main: 'validation', seed: '0x1' }], 280_000);
  if (!results.has('validation')) throw new Error(`quint did not judge the histories:\n${output}`);
  const passed = new Set([...output.matchAll(/ok (\w+) passed/g)].map((m) => m[1]!));
  const verdicts = [...runs].map(([history, names]) => {
    const accepted = names.filter(({ name }) => passed.has(name)).map(({ order }) => order);
    return { history, valid: accepted.length > 0, orders: accepted };
  });
  return { verdicts, output };
}
