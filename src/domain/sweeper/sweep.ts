import type { Tx } from '../../db/client.js';
import { sweepEndedRuns } from './ended-runs.js';
import { sweepRunDeadline } from './run-deadline.js';
import type { RuleOutcome, SweeperAction, SweeperActionRecord, SweeperSettings } from './settings.js';
import { sweepStaleAlerts } from './stale-alerts.js';
import { sweepStalePartitions } from './stale-partitions.js';
import { sweepStalePublishing } from './stale-publishing.js';
import { sweepUnackedDispatches } from './unacked-dispatches.js';

interface SweeperRule {
  name: string;
  apply(tx: Tx, settings: SweeperSettings): Promise<RuleOutcome>;
}

/** Ref §5.2's five rules in its order, then deviation 6's. */
const RULES: readonly SweeperRule[] = [
  { name: 'stale_partitions', apply: sweepStalePartitions },
  { name: 'run_deadline', apply: sweepRunDeadline },
  { name: 'unacked_dispatches', apply: sweepUnackedDispatches },
  { name: 'stale_alerts', apply: sweepStaleAlerts },
  { name: 'stale_publishing', apply: sweepStalePublishing },
  { name: 'ended_runs', apply: (tx) => sweepEndedRuns(tx) },
];

export interface SweepResult {
  /** What the rules that succeeded did. */
  acted: SweeperActionRecord[];
  /** The same, counted by action (only the non-zero counters). */
  actions: Partial<Record<SweeperAction, number>>;
  /** Rules that failed; their writes were rolled back, the other rules' kept. */
  failures: Array<{ rule: string; error: unknown }>;
  /** Dispatches were created or requeued: NOTIFY the dispatchers once this transaction committed. */
  wakeDispatcher: boolean;
}

/**
 * One sweep (ref §5.2) in the caller's transaction. Only one sweeper acts per cycle: the others get
 * null. Each rule runs under its own savepoint, so one failing rule does not undo or block the others.
 */
export async function sweepOnce(tx: Tx, settings: SweeperSettings): Promise<SweepResult | null> {
  const [lock] = await tx.$queryRaw<Array<{ held: boolean }>>`
    SELECT pg_try_advisory_xact_lock(hashtext('load_control_sweeper')) AS held`;
  if (!lock?.held) return null;

  const result: SweepResult = { acted: [], actions: {}, failures: [], wakeDispatcher: false };
  for (const rule of RULES) {
    await tx.$executeRaw`SAVEPOINT sweeper_rule`;
    try {
      const outcome = await rule.apply(tx, settings);
      await tx.$executeRaw`RELEASE SAVEPOINT sweeper_rule`;
      for (const record of outcome.acted) {
        result.acted.push(record);
        result.actions[record.action] = (result.actions[record.action] ?? 0) + 1;
      }
      result.wakeDispatcher ||= outcome.wake;
    } catch (error) {
      await tx.$executeRaw`ROLLBACK TO SAVEPOINT sweeper_rule`;
      result.failures.push({ rule: rule.name, error });
    }
  }
  return result;
}
