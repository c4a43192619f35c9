// `npm run spec:choose`: the traces the spec test replays, chosen by coverage. Each of SPEC_CHOOSE_CANDIDATES seeds
// (default 400: 0x1, 0x2, …) makes one trace of the model; of those, the fewest that together reach every witness of
// spec/coverage.ts any of them reaches (greedy set cover) are written to spec/replay-seeds.json with what each reaches.
// What none reaches is left to the stories (the test names them). Run it again when the model changes: the spec test
// fails when a chosen seed's trace no longer reaches what the file says.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeCoverageModule } from '../spec/coverage.js';
import { invariants, quintSession, witnessCounts } from '../spec/quint.js';
import { REPLAY_SEEDS_FILE, type ReplaySeeds } from '../spec/replay-seeds.js';

const candidates = Number(process.env.SPEC_CHOOSE_CANDIDATES ?? 400);
const STEPS = 80;
const file = join(mkdtempSync(join(tmpdir(), 'lc-spec-choose-')), 'coverage.qnt');
const witnesses = writeCoverageModule(file);
const seeds = Array.from({ length: candidates }, (_, i) => `0x${(i + 1).toString(16)}`);

console.log(`quint run: ${candidates} seeds, one trace of ${STEPS} steps each`);
const started = performance.now();
const { results, output } = await quintSession(
  file,
  seeds.map((seed) => ({ title: seed, main: 'coverage', seed, samples: 1, steps: STEPS, invariants: invariants(), witnesses })),
  3_600_000,
);
const reached = new Map<string, Set<string>>();
for (const seed of seeds) {
  const result = results.get(seed);
  if (!result) throw new Error(`quint did not finish seed ${seed}:\n${output.slice(-4000)}`);
  if (!result.passed) throw new Error(`seed ${seed} violates an invariant:\n${result.output}`);
  reached.set(seed, new Set([...witnessCounts(result.output)].filter(([, n]) => n > 0).map(([name]) => name)));
}

const uncovered = new Set(witnesses.filter((name) => [...reached.values()].some((set) => set.has(name))));
const chosen: ReplaySeeds['seeds'] = [];
while (uncovered.size > 0) {
  const gain = (seed: string) => [...reached.get(seed)!].filter((name) => uncovered.has(name)).length;
  const best = seeds.reduce((a, b) => (gain(b) > gain(a) ? b : a));
  chosen.push({ seed: best, reaches: [...reached.get(best)!].sort() });
  for (const name of reached.get(best)!) uncovered.delete(name);
}
const byNone = witnesses.filter((name) => ![...reached.values()].some((set) => set.has(name)));
const replaySeeds: ReplaySeeds = { steps: STEPS, candidates, seeds: chosen, reachedByNone: byNone };
writeFileSync(REPLAY_SEEDS_FILE, `${JSON.stringify(replaySeeds, null, 2)}\n`);

console.log(`${((performance.now() - started) / 1000).toFixed(0)} s; ${chosen.length} traces reach what all ${candidates} do:`);
for (const { seed, reaches } of chosen) console.log(`  ${seed}: ${reaches.length} witnesses`);
console.log(`reached by no trace (${byNone.length}), left to the stories: ${byNone.join(', ') || 'none'}`);
console.log(`written: ${REPLAY_SEEDS_FILE}`);
