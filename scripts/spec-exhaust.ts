// `npm run spec:exhaust`: every state of the spec's reduced instance (module `reduced`: one run, two partitions of
// one chunk) reachable within SPEC_EXHAUST_DEPTH steps (default 6) is enumerated and checked against `safety`
// (spec/exhaust.ts). SPEC_PLANTED_BUG=recountReplayedChunk (or another of the spec's planted bugs) explores that
// variant instead, to watch it fail. Exits 1 on a violation, printing the shortest trace to it.
//
// `npm run spec:exhaust -- --saturate`: states told apart by their abstraction (capped ages, renamed ids; see
// `abstracted` in spec/exhaust.ts), level after level until one adds no new state, or until SPEC_EXHAUST_BUDGET
// seconds (default 1200) have gone; prints each level as it ends.
import { explore } from '../spec/exhaust.js';

const saturate = process.argv.includes('--saturate');
const maxDepth = saturate ? Number.POSITIVE_INFINITY : Number(process.env.SPEC_EXHAUST_DEPTH ?? 6);
const budgetSeconds = Number(process.env.SPEC_EXHAUST_BUDGET ?? 1200);
const bug = process.env.SPEC_PLANTED_BUG ?? 'none';
const instance = `module reduced${bug === 'none' ? '' : ` with PLANTED_BUG "${bug}"`}`;
console.log(
  saturate
    ? `${instance}: every state, told apart by its abstraction, until no new one appears (budget ${budgetSeconds} s)`
    : `${instance}: every state within ${maxDepth} steps of init`,
);
const e = await explore(maxDepth, bug, {
  abstract: saturate,
  budgetSeconds: saturate ? budgetSeconds : undefined,
  onLevel: saturate
    ? (depth, states, seconds) => console.log(`  depth ${depth}: ${states} new states (${seconds.toFixed(0)} s)`)
    : undefined,
});
console.log(`${e.states} states, ${e.transitions} transitions (${e.stepsChecked} enabled steps checked) in ${e.seconds.toFixed(1)} s`);
console.log(`new states by depth: ${e.perDepth.join(', ')}`);
if (e.saturated) console.log(`saturated at depth ${e.depth}: no step reaches a new state`);
else if (saturate && !e.violation) console.log(`NOT saturated: the budget ran out after depth ${e.depth}`);
else console.log(`every level enumerated to depth ${e.depth}`);
if (e.violation) {
  console.log(`VIOLATED: ${e.violation.invariants.join(', ')}, after ${e.violation.steps.length - 1} steps:`);
  for (const [i, step] of e.violation.steps.entries()) console.log(`  ${i}. ${step}`);
  process.exitCode = 1;
} else {
  console.log(`safety holds in all ${e.states} states`);
}
