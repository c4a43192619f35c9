// `npm run spec:deep`: the nightly-size run of the model — SPEC_DEEP_SAMPLES traces (default 10,000) of 80 steps with
// every invariant, from SPEC_SEED or a random seed — printing how many traces reached each witness of spec/coverage.ts
// (kinds of step, transitions, refusals, races) and which stay under 0.5 % of them. Exits 1 on a violation.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeCoverageModule } from '../spec/coverage.js';
import { invariants, quintSession, randomSeed, violatedInvariants, witnessCounts } from '../spec/quint.js';

const samples = Number(process.env.SPEC_DEEP_SAMPLES ?? 10_000);
const seed = process.env.SPEC_SEED ?? randomSeed();
const file = join(mkdtempSync(join(tmpdir(), 'lc-spec-deep-')), 'coverage.qnt');
const witnesses = writeCoverageModule(file);

console.log(`quint run: ${samples} traces of 80 steps, seed ${seed} (SPEC_SEED=${seed} to repeat it)`);
const started = performance.now();
const { results, output } = await quintSession(
  file,
  [{ title: 'deep', main: 'coverage', seed, samples, steps: 80, invariants: invariants(), witnesses }],
  24 * 3600_000,
);
const result = results.get('deep');
if (!result) throw new Error(`quint did not finish:\n${output}`);
const counts = witnessCounts(result.output);
const seconds = (performance.now() - started) / 1000;
console.log(`${result.passed ? 'no violation' : `VIOLATED: ${violatedInvariants(result.output).join(', ')}`} in ${seconds.toFixed(0)} s`);
console.log('\n| witness | traces | share |\n|---|---|---|');
for (const name of witnesses) {
  const n = counts.get(name) ?? 0;
  console.log(`| ${name} | ${n} | ${((100 * n) / samples).toFixed(2)} % |`);
}
const rare = witnesses.filter((name) => (counts.get(name) ?? 0) < samples * 0.005);
console.log(`\nunder 0.5 % of the traces (${rare.length}): ${rare.join(', ') || 'none'}`);
if (!result.passed) {
  console.log(result.output);
  process.exitCode = 1;
}
