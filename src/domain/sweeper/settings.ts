import type { Config } from '../../config/config.js';

/** What the sweeper's rules read from the configuration (durations in milliseconds). */
export interface SweeperSettings {
  recovery: Config['recovery'];
  dispatch: Pick<Config['dispatch'], 'ackTimeout' | 'maxAttempts'>;
}

/** Events and rows written by the sweeper name it as their actor. */
export const SWEEPER_ACTOR = 'sweeper';

/** The counters of lc_sweeper_actions_total{rule} (ref §9.1, plus deviation 6's two and the gate's deadlines). */
export type SweeperAction =
  | 'reissue_partition'
  | 'timeout_stale_partition'
  | 'timeout_run_deadline'
  | 'requeue_dispatch'
  | 'dead_dispatch'
  | 'stale_alert'
  | 'publish_unknown'
  | 'abandon_partition'
  | 'cancel_dispatch'
  | 'observation_alert'
  | 'deadline_met';

/** One thing the sweeper did, for its counters and its log lines. */
export interface SweeperActionRecord {
  action: SweeperAction;
  /** Null for a gate's deadline, which is about a job and a business date. */
  runId: string | null;
  partitionId?: string | null;
  dispatchId?: string;
  jobId?: string;
  businessDate?: string;
}

export interface RuleOutcome {
  acted: SweeperActionRecord[];
}

export const seconds = (ms: number): number => ms / 1000;
