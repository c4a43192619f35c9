// One Quint process for several commands: the spec is parsed and type-checked once, then tested and simulated as
// told. Parsing and type-checking load-control.qnt cost ~9 s of CPU on a 2-core machine, more than a CI's worth of
// simulation; four `quint` processes would pay it four times. This drives the functions Quint's own CLI chains
// (`load → parse → typecheck → runTests | runSimulator`, in @informalsystems/quint's dist/src/cliCommands.js;
// the version is pinned), with the arguments its CLI would pass. Its output is Quint's, each command's preceded
// and followed by a `::quint::` line (spec/quint.ts reads them).
//
//   node --import tsx spec/quint-session.ts <file.qnt> < <JSON array of QuintCommand>
import {
  load,
  outputResult,
  parse,
  runSimulator,
  runTests,
  typecheck,
  type TypecheckedStage,
} from '@informalsystems/quint/dist/src/cliCommands.js';
import type { QuintCommand } from './quint.js';

const [input] = process.argv.slice(2);
let commands = '';
for await (const chunk of process.stdin) commands += chunk;

// the defaults of `quint run` and `quint test`, as their CLI would set them
const defaults = {
  input,
  backend: 'typescript',
  verbosity: 1,
  init: 'init',
  step: 'step',
  invariant: 'true',
  invariants: [],
  witnesses: [],
  hide: [],
  mbt: false,
  nTraces: 1,
  maxSteps: 20,
};

const typechecked = await load(defaults)
  .then((r) => r.asyncChain(parse))
  .then((r) => r.asyncChain(typecheck));
// prints the errors and exits 1
if (typechecked.isLeft()) outputResult(typechecked);

let failed = false;
for (const command of JSON.parse(commands!) as QuintCommand[]) {
  console.log(`::quint:: ${command.title}`);
  const args = {
    ...defaults,
    main: command.main,
    step: command.step ?? defaults.step,
    seed: BigInt(command.seed),
    maxSamples: command.samples ?? 1,
    maxSteps: command.steps ?? defaults.maxSteps,
    invariants: command.invariants ?? [],
    witnesses: command.witnesses ?? [],
    outItf: command.outItf,
    nTraces: command.traces ?? 1,
  };
  const stage = { ...(typechecked.value as TypecheckedStage), args };
  const result = await (command.test ? runTests(stage) : runSimulator(stage));
  if (result.isLeft()) {
    failed = true;
    console.log(
      `error: ${result.value.msg} ${JSON.stringify(result.value.stage.errors ?? [], (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
    );
  }
  console.log(`::quint:: ${command.title} ${result.isLeft() ? 'failed' : 'passed'}`);
}
process.exit(failed ? 1 : 0);
