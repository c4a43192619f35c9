// What the simulator's traces must reach, as Quint witnesses over the model: every kind of step, every transition
// of states.ts, every refusal, and the races whose outcome the protocol decides (a second publish claim, a late
// result after PUBLISH_UNKNOWN, …). The CI's spec test and `npm run spec:deep` both count them.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DISPATCH_TRANSITIONS, PARTITION_TRANSITIONS, RUN_TRANSITIONS } from '../src/domain/states.js';
import { importsOf, SPEC_FILE } from './quint.js';

/** (machine, from, to) of every status change states.ts allows. */
export const STATES_TS_TRANSITIONS = [
  ...RUN_TRANSITIONS.map(([from, to]) => ['run', from, to]),
  ...PARTITION_TRANSITIONS.map(([from, to]) => ['partition', from, to]),
  ...DISPATCH_TRANSITIONS.map(([from, to]) => ['dispatch', from, to]),
];

/** Races the protocol decides, each as what the state after it shows. */
export const RACE_WITNESSES: Record<string, string> = {
  // a second publisher claims while the first owns the publication
  race_second_publish_claim: `match last.step { | ClaimPublish(a) => last.answer.get("claimed") == B(false)
    and ledger.runs.get(a.runId).status == "PUBLISHING" and ledger.runs.get(a.runId).publishToken != a.token | _ => false }`,
  // the owner's result arrives after the sweeper declared the publication unknown
  race_late_result_after_unknown: `match last.step { | ReportPublishResult(a) => last.answer.keys().contains("code")
    and ledger.runs.get(a.runId).status == "PUBLISH_UNKNOWN" and ledger.runs.get(a.runId).publishToken == a.token | _ => false }`,
  // a new run for the key while a run is PUBLISH_UNKNOWN
  race_create_during_unknown: `match last.step { | CreateRun(_) => last.answer.keys().contains("code")
    and runIds.exists(r => ledger.runs.get(r).status == "PUBLISH_UNKNOWN") | _ => false }`,
  // a chunk of a SUCCESS partition reported again while its run still extracts
  race_duplicate_chunk_of_success: `match last.step { | ReportChunk(a) => ledger.runs.get(a.runId).status == "EXTRACTING"
    and ledger.partitions.get((a.runId, a.partition)).status == "SUCCESS" and not(("partition", "RUNNING", "SUCCESS").in(last.moves))
    | _ => false }`,
  // claims of both partitions of one run under way at once (each holds its partition's row, both share the run's)
  race_claims_of_one_run_at_once: `lockedByOthers(inFlight, 0).exists(a => lockedByOthers(inFlight, 0).exists(b => a != b
    and lockedRun(a) == lockedRun(b)))`,
  // the clock moves, and the sweeper acts, while a transaction is under way
  race_tick_beside_transaction: `last.step == Tick and CONNECTIONS.exists(c => inFlight.get(c).step != Init)`,
  // one call on the wire of two dispatchers at once (a lease expired under a slow delivery)
  race_double_lease: `DISPATCHERS.exists(k1 => DISPATCHERS.exists(k2 => k1 != k2
    and nifi.onWire.get(k1).exists(x => nifi.onWire.get(k2).exists(y => x._1 == y._1))))`,
};

/**
 * Writes a module of witnesses over the model to `file`: one per kind of step, per transition of states.ts, per
 * error code the model answers and per race. `quint run --witnesses` counts the traces in which each held at least
 * once. Returns the witnesses' names.
 */
export function writeCoverageModule(file: string): string[] {
  const spec = readFileSync(SPEC_FILE, 'utf8');
  // the variants of type Step: its lines up to the first that does not go on with `|`
  const stepType = /type Step =\n((?:\s*\|.*\n)+)/.exec(spec)![1]!;
  const steps = [...stepType.matchAll(/\| (\w+)(\()?/g)].filter(([, name]) => name !== 'Init');
  const codes = [...new Set([...spec.matchAll(/refused\("(\w+)"\)/g)].map((m) => m[1]!))];
  const witnesses = [
    ...steps.map(([, name, args]) => [
      `step_${name}`,
      args ? `match last.step { | ${name}(_) => true | _ => false }` : `last.step == ${name}`,
    ]),
    ...STATES_TS_TRANSITIONS.map(([m, from, to]) => [`move_${m}_${from}_${to}`, `("${m}", "${from}", "${to}").in(last.moves)`]),
    ...codes.map((code) => [`answer_${code}`, `last.answer.keys().contains("code") and last.answer.get("code") == S("${code}")`]),
    ...Object.entries(RACE_WITNESSES),
  ];
  writeFileSync(
    file,
    [
      'module coverage {',
      ...importsOf('checked', dirname(file)),
      ...witnesses.map(([name, body]) => `  val ${name} = ${body!.replace(/\n\s*/g, ' ')}`),
      '}',
      '',
    ].join('\n'),
  );
  return witnesses.map(([name]) => name!);
}
