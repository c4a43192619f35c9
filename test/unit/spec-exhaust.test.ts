// The spec's reduced instance explored exhaustively (spec/exhaust.ts): every state within the depth the suite
// affords holds `safety`, and with a bug planted the exploration finds the shortest trace to it. `npm run
// spec:exhaust` goes a level deeper. The explorer drives a patched Quint evaluator, so Quint's own simulator, unpatched
// and in a process of its own, samples the same instance: every state it reaches must be among those enumerated.
import { describe, expect, it } from 'vitest';
import { explore, sampleWithQuint, stateKey } from '../../spec/exhaust.js';
import { randomSeed } from '../../spec/quint.js';

// each exploration parses and type-checks the spec (~5 s of CPU), then ~15 s of CPU for its states
const LIMIT_MS = 240_000;
const SAMPLED_TRACES = 300;

describe('the reduced instance, every state within a bound', () => {
  it(
    "holds safety in every state reachable within 5 steps, among them every state Quint's simulator reaches",
    async () => {
      const seed = randomSeed();
      // Quint parses the spec in its process while the exploration parses it in this one
      const sampling = sampleWithQuint(SAMPLED_TRACES, 5, seed, LIMIT_MS);
      const exploration = await explore(5);
      console.log(
        `reduced instance, depth 5: ${exploration.states} states, ${exploration.transitions} transitions, ` +
          `${exploration.stepsChecked} steps checked, by depth ${exploration.perDepth.join(', ')}, ${exploration.seconds.toFixed(1)} s`,
      );
      expect(exploration.violation).toBeUndefined();
      expect(exploration.depth).toBe(5);
      expect(exploration.states).toBe(exploration.perDepth.reduce((sum, n) => sum + n, 0));
      expect(exploration.transitions).toBeGreaterThanOrEqual(exploration.states - 1);
      expect(exploration.stepsChecked).toBeGreaterThanOrEqual(exploration.transitions);

      const sampled = await sampling;
      const distinct = new Set(sampled.map((state) => stateKey(state, false)));
      console.log(`quint run --seed ${seed}: ${SAMPLED_TRACES} traces, ${distinct.size} distinct states, of ${exploration.states}`);
      expect(sampled).toHaveLength(SAMPLED_TRACES * 6);
      // every trace is 5 steps long: every state it reaches is within the bound
      const missed = sampled.filter((state) => !exploration.reaches(state));
      expect(missed.map((state) => stateKey(state, false)).slice(0, 1)).toEqual([]);
    },
    LIMIT_MS,
  );

  it(
    'finds a replayed chunk of a SUCCESS partition counted again (recountReplayedChunk), in the fewest steps',
    async () => {
      const exploration = await explore(6, 'recountReplayedChunk');
      expect(exploration.violation?.invariants).toEqual(['successCountersMatch', 'completedRunAllSuccess']);
      const steps = exploration.violation?.steps ?? [];
      // Init, the upstream job's success, createRun, registerManifest, a claim, its chunk, the chunk again
      expect(steps.map((step) => /^variant\("(\w+)"/.exec(step)?.[1])).toEqual([
        'Init',
        'RecordObservation',
        'CreateRun',
        'RegisterManifest',
        'ClaimPartition',
        'ReportChunk',
        'ReportChunk',
      ]);
      // the same chunk twice: the second report completes the run with the other partition never claimed
      const [sent, answer] = steps[6]!.split(' → ');
      expect(sent).toBe(steps[5]!.split(' → ')[0]);
      expect(answer).toContain('"runStatus", variant("S", "EXTRACTED_VALIDATED")');
    },
    LIMIT_MS,
  );

  it('refuses a planted bug the spec does not have', async () => {
    await expect(explore(1, 'noSuchBug')).rejects.toThrow(/no planted bug "noSuchBug"/);
  });
});
