import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { sweepEndedRuns } from './ended-runs.js';
import { sweepObservationDeadlines } from './observation-deadlines.js';
import { sweepRunDeadline } from './run-deadline.js';
import type { RuleOutcome, SweeperAction, SweeperActionRecord, SweeperSettings } from './settings.js';
import { sweepStaleAlerts } from './stale-alerts.js';
import { sweepStalePartitions } from './stale-partitions.js';
import { sweepStalePublishing } from './stale-publishing.js';
import { sweepUnackedDispatches } from './unacked-dispatches.js';

interface SweeperRule {
  name: string;
  apply(tx: Tx, settings: SweeperSettings, afterCommit: AfterCommit): Promise<RuleOutcome>;
}

/** Ref §5.2's five rules in its order, then deviation 6's, then the gate's expected-by deadlines. */
const RULES: readonly SweeperRule[] = [
  { name: 'stale_partitions', apply: sweepStalePartitions },
  { name: 'run_deadline', apply: sweepRunDeadline },
  { name: 'unacked_dispatches', apply: sweepUnackedDispatches },
  { name: 'stale_alerts', apply: sweepStaleAlerts },
  { name: 'stale_publishing', apply: sweepStalePublishing },
  { name: 'ended_runs', apply: (tx) => sweepEndedRuns(tx) },
  { name: 'observation_deadlines', apply: (tx) => sweepObservationDeadlines(tx) },
];

export interface SweepResult {
  /** What the rules that succeeded did. */
  acted: SweeperActionRecord[];
  /** The same, counted by action (only the non-zero counters). */
  actions: Partial<Record<SweeperAction, number>>;
  /** Rules that failed; their writes were rolled back, the other rules' kept. */
  failures: Array<{ rule: string; error: unknown }>;
}

/** A rule's wake-ups, passed on only when its savepoint is released: a rule rolled back leaves nothing due. */
function ruleEffects(afterCommit: AfterCommit): { effects: AfterCommit; release(): void } {
  const wakes: string[] = [];
  return {
    effects: {
      wakeDispatcher: (hint) => void wakes.push(hint),
      runProgressed: (runId) => afterCommit.runProgressed(runId),
      raise: (error) => afterCommit.raise(error),
    },
    release: () => {
      for (const hint of wakes) afterCommit.wakeDispatcher(hint);
    },
  };
}

/**
 * One sweep (ref §5.2) in the caller's transaction. Only one sweeper acts per cycle: the others get
 * null. Each rule runs under its own savepoint, so one failing rule does not undo or block the others.
 */
export async function sweepOnce(tx: Tx, settings: SweeperSettings, afterCommit: AfterCommit): Promise<SweepResult | null> {
  const [lock] = await tx.$queryRaw<Array<{ held: boolean }>>`
    SELECT pg_try_advisory_xact_lock(hashtext('load_control_sweeper')) AS held`;
  if (!lock?.held) return null;

  const result: SweepResult = { acted: [], actions: {}, failures: [] };
  for (const rule of RULES) {
    await tx.$executeRaw`SAVEPOINT sweeper_rule`;
    try {
      const { effects, release } = ruleEffects(afterCommit);
      const outcome = await rule.apply(tx, settings, effects);
      await tx.$executeRaw`RELEASE SAVEPOINT sweeper_rule`;
      release();
      for (const record of outcome.acted) {
        result.acted.push(record);
        result.actions[record.action] = (result.actions[record.action] ?? 0) + 1;
      }
    } catch (error) {
      await tx.$executeRaw`ROLLBACK TO SAVEPOINT sweeper_rule`;
      result.failures.push({ rule: rule.name, error });
    }
  }
  return result;
}

export const sweepOnceOperation = inOneTransaction(sweepOnce);
