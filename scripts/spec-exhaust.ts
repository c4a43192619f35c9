// `npm run spec:exhaust`: every state of the spec's reduced instance (module `reduced`: one run, two partitions of
// one chunk) reachable within SPEC_EXHAUST_DEPTH steps (default 6) is enumerated and checked against `safety`
// (spec/exhaust.ts). SPEC_PLANTED_BUG=recountReplayedChunk (or another of the spec's planted bugs) explores that
// variant instead, to watch it fail. Exits 1 on a violation, printing the shortest trace to it.
import { explore } from '../spec/exhaust.js';

const maxDepth = Number(process.env.SPEC_EXHAUST_DEPTH ?? 6);
const bug = process.env.SPEC_PLANTED_BUG ?? 'none';
console.log(`module reduced${bug === 'none' ? '' : ` with PLANTED_BUG "${bug}"`}: every state within ${maxDepth} steps of init`);
const e = await explore(maxDepth, bug);
console.log(`${e.states} states, ${e.transitions} transitions (${e.stepsChecked} enabled steps checked) in ${e.seconds.toFixed(1)} s`);
console.log(`new states by depth: ${e.perDepth.join(', ')}`);
console.log(e.saturated ? `saturated at depth ${e.depth}: no step reaches a new state` : `every level enumerated to depth ${e.depth}`);
if (e.violation) {
  console.log(`VIOLATED: ${e.violation.invariants.join(', ')}, after ${e.violation.steps.length - 1} steps:`);
  for (const [i, step] of e.violation.steps.entries()) console.log(`  ${i}. ${step}`);
  process.exitCode = 1;
} else {
  console.log(`safety holds in all ${e.states} states`);
}
