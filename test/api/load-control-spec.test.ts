// The protocol's model (spec/load-control.qnt), checked: its stories (quint test), every invariant over the
// simulator's traces (a fixed seed whose traces, with the stories, make every step, every transition of states.ts
// and every refusal; then a random seed), planted bugs the invariants must catch, and replayed against the real API
// (spec/replay.ts): the stories, the fewest traces that reach every witness any of 400 seeds reaches (chosen by
// `npm run spec:choose`, spec/replay-seeds.json) and traces of the random seed. `npm run spec:replay` replays many
// more of the random seed.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACKABLE_DISPATCH_STATUSES,
  ACTIVE_RUN_STATUSES,
  FAILED_RUN_STATUSES,
  RUN_STATUSES,
  UNDELIVERED_DISPATCH_STATUSES,
  UNFINISHED_PARTITION_STATUSES,
  isAllowedRunFailure,
} from '../../src/domain/states.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { sized } from '../support/test-size.js';
import {
  invariants,
  quintSession,
  randomSeed,
  readTrace,
  SPEC_FILE,
  specSet,
  violatedInvariants,
  witnessCounts,
  type QuintResult,
  type Variant,
} from '../../spec/quint.js';
import { type RACE_WITNESSES, STATES_TS_TRANSITIONS, writeCoverageModule } from '../../spec/coverage.js';
import { differences, Replay, replaySettings, type Check } from '../../spec/replay.js';
import { readReplaySeeds } from '../../spec/replay-seeds.js';

const DIR = join('test-artifacts', 'spec');
/** The CI run: with this seed its samples cover every witness of spec/coverage.ts. */
const FIXED = { seed: '0x1d7', samples: 200, steps: 80 };
/** The traces replayed for coverage, each one seed's one trace. */
const CHOSEN = readReplaySeeds();
const chosenTrace = (seed: string) => join(DIR, `chosen_${seed}_0.itf.json`);
/** A new seed each time, printed, to find what the fixed one does not; SPEC_REPLAY_TRACES of its traces are replayed. */
const replayed = Number(process.env.SPEC_REPLAY_TRACES ?? 2);
const RANDOM = { seed: process.env.SPEC_SEED ?? randomSeed(), samples: Math.max(sized(20, 60), replayed), steps: 80, traces: replayed };

/**
 * The spec's variants with a bug planted: the invariant that must catch it, and where the real API, which has not
 * that bug, leaves the variant's trace. A variant with a `story` is caught by that story of its module (which ends
 * expecting the invariant broken), where the simulator's sampling seldom reaches the bug; the others by the simulator.
 * A variant may have several stories, one race each.
 */
const PLANTED: Array<{ module: string; invariant: string; divergesAt: RegExp; story?: string }> = [
  // the product resets the token: its ledger differs from the model's once a partition is reissued
  { module: 'reissueKeepsToken', invariant: 'onlyOwnerReportsCount', divergesAt: / (ReissuePartition|Tick|Sweep) .*: the ledger after it/ },
  // the product's gate is not ready while the greatest attempt has not succeeded: it refuses what the model allows
  { module: 'greatestSuccessWins', invariant: 'evidenceIsLatest', divergesAt: / (CreateRun|ClaimPublish|Publish) .*: the answer/ },
  // the product records a replayed chunk of a SUCCESS partition without counting it again
  { module: 'recountReplayedChunk', invariant: 'successCountersMatch', divergesAt: / ReportChunk .*: the (answer|ledger after it)/ },
  // the product completes the run at its last partition
  { module: 'completionNeverDecided', invariant: 'completionNotLost', divergesAt: / ReportChunk .*: the (answer|ledger after it)/ },
  // the product declares a stale publication unknown, which holds the key
  {
    module: 'staleToFailedPublish',
    invariant: 'oneWriterPerDate',
    story: 'zombieWriterBesideANewRunTest',
    divergesAt: / (Tick|Sweep) .*: the ledger after it/,
  },
  // the product's report waits for the run's row: the second last chunk counts on the first's counters
  {
    module: 'noRunLock',
    invariant: 'successCountersMatch',
    story: 'lostCounterUpdateTest',
    divergesAt: / ReportChunk .*: the (answer|ledger after it)/,
  },
  // the product's publish claim waits for the run's row, and the sweeper skips it: the claim sees the run's status
  // as the sweeper and the operator left it
  {
    module: 'noRunLock',
    invariant: 'oneWriterPerDate',
    story: 'claimAnsweredAfterTheSweeperTest',
    divergesAt: / ClaimPublish .*: the answer/,
  },
  // the product's claim waits for its partition's row: the duplicate's claim sees the partition RUNNING
  {
    module: 'noPartitionLock',
    invariant: 'onlyOwnerReportsCount',
    story: 'twoOwnersOfOnePartitionTest',
    divergesAt: / ClaimPartition .*: the answer/,
  },
  // the product answers claimed only to the publish token it stored
  {
    module: 'claimAnyToken',
    invariant: 'oneWriterPerDate',
    story: 'secondPublisherWritesTooTest',
    divergesAt: / ClaimPublish .*: the answer/,
  },
];

const SPEC = readFileSync(SPEC_FILE, 'utf8');
/** The story that shows each race of spec/coverage.ts, for those the fixed seed's traces do not reach. */
const RACE_STORIES: Record<keyof typeof RACE_WITNESSES, string> = {
  race_second_publish_claim: 'publishUnknownBlocksTheKeyUntilResolvedTest',
  race_late_result_after_unknown: 'stalePublicationIsDeclaredUnknownTest',
  race_create_during_unknown: 'publishUnknownBlocksTheKeyUntilResolvedTest',
  race_duplicate_chunk_of_success: 'duplicateChunkOfASuccessfulPartitionIsNotCountedAgainTest',
  race_double_lease: 'expiredLeaseIsLeasedAgainTest',
  race_claims_of_one_run_at_once: 'claimOfAClaimedPartitionWaitsTest',
  race_tick_beside_transaction: 'publishClaimBesideTheSweeperTest',
};
/** The protocol's stories: the `run …Test` of module checked, each a trace of `quint test`, replayed too. */
const CHECKED = SPEC.slice(SPEC.indexOf('module checked {'));
const STORIES = [...CHECKED.slice(0, CHECKED.indexOf('\nmodule ')).matchAll(/^ {2}run (\w+Test) =/gm)].map((m) => m[1]!);

/** The witnesses of spec/coverage.ts that hold in some state of a trace (races excepted: their stories are named). */
function witnessedIn(file: string): Set<string> {
  const witnessed = new Set<string>();
  for (const state of readTrace(file).states.slice(1)) {
    const last = state.last as { step: Variant; moves: string[][]; answer: Map<string, Variant> };
    witnessed.add(`step_${last.step.tag}`);
    for (const [m, from, to] of last.moves) witnessed.add(`move_${m}_${from}_${to}`);
    const code = last.answer.get('code');
    if (code) witnessed.add(`answer_${code.value}`);
  }
  return witnessed;
}

/** A difference between the API and the model, with where it happened. */
class Mismatch extends Error {}
const strictly: Check = (what, actual, expected) => {
  const found = differences(actual, expected);
  if (found.length > 0) throw new Mismatch(`${what}:\n  ${found.join('\n  ')}`);
};

let api: TestApi;
let replay: Replay;
let quint: { output: string; results: Map<string, QuintResult> };
let witnesses: string[];
const traces = (run: string, n: number) => Array.from({ length: n }, (_, i) => join(DIR, `${run}_${i}.itf.json`));

/** A command's output: the test fails with the whole session's output when the command never ran. */
function ran(title: string): QuintResult {
  const result = quint.results.get(title);
  expect(result, `quint never finished "${title}"\n${quint.output}`).toBeDefined();
  return result!;
}

beforeAll(async () => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const coverage = join(DIR, 'coverage.qnt');
  witnesses = writeCoverageModule(coverage);
  console.log(`quint run, random seed ${RANDOM.seed} (SPEC_SEED=${RANDOM.seed} to repeat it)`);
  const run = { invariants: invariants() };
  [quint, api] = await Promise.all([
    quintSession(
      coverage,
      [
        { title: 'tests', test: true, main: 'checked', seed: FIXED.seed, outItf: join(DIR, 'story_{test}.itf.json') },
        { title: 'fixed', ...run, ...FIXED, main: 'coverage', witnesses },
        ...CHOSEN.seeds.map(({ seed }) => ({
          title: `chosen ${seed}`,
          ...run,
          main: 'coverage',
          seed,
          samples: 1,
          steps: CHOSEN.steps,
          witnesses,
          outItf: join(DIR, `chosen_${seed}_{seq}.itf.json`),
        })),
        { title: 'random', ...run, ...RANDOM, main: 'checked', outItf: join(DIR, 'random_{seq}.itf.json') },
        // one command per planted module: a module's stories are one `quint test`
        ...PLANTED.filter((bug, i) => PLANTED.findIndex((other) => other.module === bug.module) === i).map((bug) =>
          bug.story
            ? { title: bug.module, test: true, main: bug.module, seed: FIXED.seed, outItf: join(DIR, `${bug.module}_{test}.itf.json`) }
            : { title: bug.module, ...run, ...FIXED, main: bug.module, outItf: join(DIR, `${bug.module}_{seq}.itf.json`), traces: 1 },
        ),
      ],
      280_000,
    ),
    startTestApi(),
  ]);
  writeFileSync(join(DIR, 'quint.log'), quint.output);
  for (const [title, { output }] of quint.results) {
    console.log(`quint ${title}: ${/\(\d+ms at \d+ traces\/second\)|\d+ passing \(\d+ms\)/.exec(output)?.[0] ?? 'see its output'}`);
  }
  replay = new Replay(api, replaySettings(api.config), await Replay.ledgerStatements(api));
}, 300_000);
afterAll(async () => api?.close());

describe('the model of the protocol (spec/load-control.qnt)', () => {
  it('states the state machines of states.ts', () => {
    const set = (name: string) => specSet(name).map((e) => e.join(' '));
    expect(set('TRANSITIONS').sort()).toEqual(STATES_TS_TRANSITIONS.map((t) => t.join(' ')).sort());
    expect(set('ACTIVE_RUN').sort()).toEqual([...ACTIVE_RUN_STATUSES].sort());
    expect(set('FAILED_RUN').sort()).toEqual([...FAILED_RUN_STATUSES].sort());
    expect(set('UNFINISHED_PARTITION').sort()).toEqual([...UNFINISHED_PARTITION_STATUSES].sort());
    expect(set('UNDELIVERED_DISPATCH').sort()).toEqual([...UNDELIVERED_DISPATCH_STATUSES].sort());
    expect(set('ACKABLE_DISPATCH').sort()).toEqual([...ACKABLE_DISPATCH_STATUSES].sort());
    const failures = RUN_STATUSES.flatMap((expected) =>
      RUN_STATUSES.filter((fail) => isAllowedRunFailure(expected, fail)).map((fail) => `${expected} ${fail}`),
    );
    expect(set('RUN_FAILURES').sort()).toEqual(failures.sort());
  });

  it(`tells its ${STORIES.length} stories (quint test)`, () => {
    const { passed, output } = ran('tests');
    expect(passed, output).toBe(true);
    expect(output).toContain(`${STORIES.length} passing`);
  });

  it(`keeps every invariant over ${FIXED.samples} traces of ${FIXED.steps} steps (seed ${FIXED.seed}), which take every kind of step`, () => {
    const { passed, output } = ran('fixed');
    expect(passed, output).toBe(true);
    expect(output).toContain('No violation found');
    const counts = witnessCounts(output);
    expect([...counts.keys()].sort()).toEqual([...witnesses].sort());
    const neverTaken = [...counts].filter(([name, n]) => name.startsWith('step_') && n === 0);
    expect(
      neverTaken.map(([name]) => name),
      'kinds of step never taken',
    ).toEqual([]);
  });

  it('makes every transition of states.ts and every refusal, in those traces or in its stories', () => {
    const counts = witnessCounts(ran('fixed').output);
    const inStories = new Set(STORIES.flatMap((story) => [...witnessedIn(join(DIR, `story_${story}.itf.json`))]));
    const rare = witnesses.filter((name) => !counts.get(name));
    if (rare.length > 0) console.log(`only in the stories (seed ${FIXED.seed}): ${rare.join(', ')}`);
    const storyOf = (name: string) => (RACE_STORIES as Record<string, string>)[name];
    expect(
      rare.filter((name) => !inStories.has(name) && !STORIES.includes(storyOf(name) ?? '')),
      'neither in the traces nor in the stories',
    ).toEqual([]);
  });

  it(`chooses ${CHOSEN.seeds.length} traces to replay (spec/replay-seeds.json) that, with the stories, reach every witness`, () => {
    for (const { seed, reaches } of CHOSEN.seeds) {
      const { passed, output } = ran(`chosen ${seed}`);
      expect(passed, output).toBe(true);
      const reached = [...witnessCounts(output)].filter(([, n]) => n > 0).map(([name]) => name);
      expect(reached.sort(), `seed ${seed} no longer makes the trace chosen: the model changed, run npm run spec:choose`).toEqual(reaches);
    }
    const replayed = new Set(CHOSEN.seeds.flatMap(({ reaches }) => reaches));
    const inStories = new Set(STORIES.flatMap((story) => [...witnessedIn(join(DIR, `story_${story}.itf.json`))]));
    const storyOf = (name: string) => (RACE_STORIES as Record<string, string>)[name];
    expect(
      witnesses.filter((name) => !replayed.has(name) && !inStories.has(name) && !STORIES.includes(storyOf(name) ?? '')),
      'reached by no trace replayed and no story',
    ).toEqual([]);
  });

  it(`keeps every invariant over ${RANDOM.samples} traces of a random seed (${RANDOM.seed})`, () => {
    const { passed, output } = ran('random');
    expect(passed, `seed ${RANDOM.seed}\n${output}`).toBe(true);
    expect(output).toContain('No violation found');
  });

  it.each(PLANTED)(
    'catches $module (a planted bug) with $invariant, and the API refuses its trace where the bug is',
    async (bug) => {
      const { passed, output } = ran(bug.module);
      if (bug.story) {
        // the story passes: it ends expecting the invariant broken
        expect(passed, output).toBe(true);
        expect(readFileSync(SPEC_FILE, 'utf8')).toMatch(new RegExp(`run ${bug.story} =[^]*?not\\(${bug.invariant}\\)`));
      } else {
        expect(passed, output).toBe(false);
        expect(violatedInvariants(output), output).toContain(bug.invariant);
      }
      const trace = join(DIR, `${bug.module}_${bug.story ?? 0}.itf.json`);
      const refused = await replay.replay(readTrace(trace), strictly).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(Mismatch);
      expect((refused as Mismatch).message).toMatch(bug.divergesAt);
    },
    150_000,
  );
});

describe('the API answers as the model does, step by step', () => {
  const stories = STORIES.map((story) => join(DIR, `story_${story}.itf.json`));
  it.each([...stories, ...CHOSEN.seeds.map(({ seed }) => chosenTrace(seed)), ...traces('random', RANDOM.traces)])(
    '%s',
    async (file) => {
      await replay.replay(readTrace(file), strictly);
    },
    120_000,
  );
});
