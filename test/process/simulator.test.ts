// The CI run of the NiFi simulator (sim/simulate.ts): 20 business keys (nightly: 40) of 8 partitions with every fault —
// lost responses, duplicates, crashed and stalled PG-20 workers, failed source and extract queries, concurrent
// last chunks, PUBLISH_UNKNOWN, receiver 5xx and timeouts, API and worker processes killed with SIGKILL,
// connections terminated — must end with every invariant holding. Every request of the simulated flows is the
// NiFi kit's (nifi/requests). The simulator starts its own API and worker processes on a database it creates on
// the test server.
import { spawn } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';
import { sized } from '../support/test-size.js';

/**
 * Business keys: every fault the test asks for is already injected into the first 20 with seed 7 (the seed decides
 * each fault by the key it hits, sim/random.ts); more only make the proof longer.
 */
const RUNS = sized(20, 40);
const ARGS = ['--runs', String(RUNS), '--partitions', '8', '--faults', 'all', '--seed', '7'];

/** Every line the simulator prints for an invariant, and how many things each must at least have checked. */
const INVARIANTS: Record<string, number> = {
  runs_ended_or_alerted: RUNS,
  one_validate_run_per_extracted_run: RUNS,
  success_partitions_complete: RUNS * 7.5,
  success_partitions_single_owner: RUNS * 7.5,
  extracted_equals_source: RUNS,
  success_counts_agree: RUNS,
  one_publish_owner_per_run: RUNS,
  no_file_recorded_twice: RUNS * 25,
  gated_publications_have_evidence: RUNS / 4,
  no_server_errors: RUNS * 50,
  validation_scheduled_answered_at_most_once: RUNS,
  publish_claimed_by_one_token: RUNS,
  late_reports_rejected: 1,
  stalled_owners_replaced: 1,
  publication_written_once: 1,
  business_keys_settled: RUNS,
  flows_completed: RUNS,
  receiver_calls_well_formed: RUNS,
  processes_restarted: 1,
  cleaned_runs_ended: 10,
  cleanup_recorded_once: 10,
};

/** Runs the simulator; past limitMs it gets SIGTERM, on which it kills its own API and worker processes. */
function simulate(args: string[], limitMs = 160_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'sim/simulate.ts', ...args], {
      env: { ...process.env, DATABASE_URL: inject('testAdminDatabaseUrl') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), limitMs);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Each invariant is reported, without a violation, having checked at least so many things. */
function expectInvariants(output: string, invariants: Record<string, number>): void {
  for (const [name, atLeast] of Object.entries(invariants)) {
    const line = new RegExp(`^${name}: (\\d+), (\\d+)$`, 'm').exec(output);
    expect(line, `${name} is reported\n${output}`).not.toBeNull();
    expect(Number(line![2]), `${name} has no violation\n${output}`).toBe(0);
    expect(Number(line![1]), `${name} checked enough`).toBeGreaterThanOrEqual(atLeast);
  }
}

describe('the NiFi simulator, CI configuration', () => {
  it(`keeps every invariant under every fault (${ARGS.join(' ')})`, async () => {
    const { code, output } = await simulate(ARGS);
    expectInvariants(output, INVARIANTS);
    // every fault was really injected
    const faults = /^faults: (.*)$/m.exec(output)?.[1] ?? '';
    for (const injected of [
      'lost responses',
      'duplicated requests',
      'worker crashes',
      'source failures',
      'extract failures',
      'late reports',
      'last-chunk races',
      'API kills',
      'worker kills',
      'connections terminated',
    ]) {
      expect(Number(new RegExp(`${injected} (\\d+)`).exec(faults)?.[1]), `${injected} injected`).toBeGreaterThan(0);
    }
    expect(faults).toMatch(/receiver 5xx [1-9]/);
    expect(output).toMatch(/^operator: resolved [1-9]\d* PUBLISH_UNKNOWN/m);
    expect(output).toContain('result: every invariant holds');
    expect(code).toBe(0);
  }, 170_000);

  it('refuses an unknown fault with its usage and exit code 2', async () => {
    const { code, output } = await simulate(['--faults', 'lost-response,meteor']);
    expect(code).toBe(2);
    expect(output).toContain('--faults: unknown meteor');
    expect(output).toContain('usage: npm run simulate');
  });
});

// Issue 28's bar: a backfill of 30 dates with maxConcurrent 3 under every fault — never more than 3 active runs of
// its job, every date ends SUCCEEDED or with a named reason, its readiness pushes held until released. Few small
// business keys run alongside, so the run is about the backfill.
const BACKFILL_ARGS = [
  ...['--runs', '4', '--partitions', '2', '--chunks', '2', '--faults', 'all', '--seed', '7'],
  ...['--backfill-dates', '30', '--backfill-max-concurrent', '3', '--backfill-hold-readiness', '--timeout', '180'],
];

describe('the NiFi simulator, a backfill under faults', () => {
  it('holds maxConcurrent, ends every date with a reason and holds readiness until released (--backfill-dates 30)', async () => {
    // 30 dates 3 at a time take ten rounds of loads: more time than the CI configuration on a busy machine
    const { code, output } = await simulate(BACKFILL_ARGS, 230_000);
    expectInvariants(output, {
      backfill_concurrency_held: 100,
      backfill_dates_ended_with_reason: 30,
      backfill_readiness_held_until_released: 10,
      backfill_readiness_pushed_once_per_ready_date: 10,
      business_keys_settled: 30,
      receiver_calls_well_formed: 30,
      no_server_errors: 300,
    });
    // the backfill's loads met the faults: its START_LOAD calls were answered 5xx or late, resent, duplicated
    expect(output).toMatch(/START_LOAD ACKED \d+ \((\d+) sends/);
    const [, acked, sends] = /START_LOAD ACKED (\d+) \((\d+) sends/.exec(output)!;
    expect(Number(sends)).toBeGreaterThan(Number(acked));
    expect(output).toMatch(/^backfill: 30 dates \(COMPLETED\)/m);
    expect(output).toContain('result: every invariant holds');
    expect(code).toBe(0);
  }, 240_000);

  it('refuses backfill options without --backfill-dates, exit code 2', async () => {
    const { code, output } = await simulate(['--backfill-max-concurrent', '3']);
    expect(code).toBe(2);
    expect(output).toContain('--backfill-max-concurrent and --backfill-hold-readiness need --backfill-dates');
  });
});
