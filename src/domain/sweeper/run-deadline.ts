import type { Tx } from '../../db/client.js';
import { formatDuration } from '../../config/durations.js';
import { RUN_STATUSES, canTransitionRun } from '../states.js';
import { lockRunsWithPartitions } from './lock-runs.js';
import { seconds, type RuleOutcome, type SweeperSettings } from './settings.js';
import { timeoutRun } from './timeout-run.js';

/** The statuses a run may time out from: before its extraction completed (CREATED, EXTRACTING). */
const DEADLINE_STATUSES = RUN_STATUSES.filter((s) => canTransitionRun(s, 'TIMED_OUT'));

/**
 * R2 run deadline (ref §5.2): a run still CREATED or EXTRACTING recovery.runTimeout after it started
 * times out, with its unfinished partitions, however fresh its heartbeats are.
 */
export async function sweepRunDeadline(tx: Tx, settings: SweeperSettings): Promise<RuleOutcome> {
  const { runTimeout } = settings.recovery;
  const candidates = await tx.$queryRaw<Array<{ run_id: string }>>`
    SELECT run_id::text FROM nifi_ops.load_run
     WHERE status = ANY(${DEADLINE_STATUSES}::text[])
       AND started_at < clock_timestamp() - make_interval(secs => ${seconds(runTimeout)}::float8)`;
  const runs = await lockRunsWithPartitions(
    tx,
    candidates.map((c) => c.run_id),
    DEADLINE_STATUSES,
  );
  for (const run of runs) {
    await timeoutRun(tx, {
      runId: run.runId,
      from: run.status,
      errorCode: 'RUN_TIMEOUT',
      message: `exceeded ${formatDuration(runTimeout)} in ${run.status}`,
      details: {},
    });
  }
  return { acted: runs.map((run) => ({ action: 'timeout_run_deadline', runId: run.runId })) };
}
