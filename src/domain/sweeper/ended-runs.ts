import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { recordApiEvent } from '../events/events.js';
import {
  RUN_WAITING_DISPATCH_TYPES,
  TERMINAL_RUN_STATUSES,
  UNDELIVERED_DISPATCH_STATUSES,
  UNFINISHED_PARTITION_STATUSES,
} from '../states.js';
import { transitionDispatch, transitionPartition } from '../transitions.js';
import { SWEEPER_ACTOR, type RuleOutcome } from './settings.js';

/**
 * R6 ended runs (deviation 6): a run that ended — however it ended — leaves no work behind. Its
 * unfinished partitions become ABANDONED and its undelivered calls CANCELLED (not its lineage events: they report
 * the end), so nothing is claimed,
 * sent or counted for it any more. Terminal runs never move again, so their rows need no lock; the
 * partition rows are locked before the dispatch rows (lock order), skipping rows in use.
 */
export async function sweepEndedRuns(tx: Tx): Promise<RuleOutcome> {
  const partitions = await transitionPartition<{ run_id: string; partition_id: string; run_status: string }>(
    tx,
    {
      picked: Prisma.sql`SELECT p.run_id, p.partition_id, r.status AS run_status
              FROM nifi_ops.load_partition p
              JOIN nifi_ops.load_run r ON r.run_id = p.run_id
             WHERE p.status = ANY(${UNFINISHED_PARTITION_STATUSES}::text[]) AND r.status = ANY(${TERMINAL_RUN_STATUSES}::text[])
             ORDER BY p.run_id, p.partition_id
               FOR UPDATE OF p SKIP LOCKED`,
    },
    {
      from: UNFINISHED_PARTITION_STATUSES,
      to: 'ABANDONED',
      set: Prisma.sql`error_code = 'RUN_ENDED', error_message = 'run ended in ' || picked.run_status`,
      returning: Prisma.sql`t.run_id::text, t.partition_id, picked.run_status`,
    },
  );
  const dispatches = await transitionDispatch<{ run_id: string; dispatch_id: string; run_status: string }>(
    tx,
    {
      picked: Prisma.sql`SELECT d.dispatch_id, r.status AS run_status
              FROM nifi_ops.load_dispatch d
              JOIN nifi_ops.load_run r ON r.run_id = d.run_id
             WHERE d.status = ANY(${UNDELIVERED_DISPATCH_STATUSES}::text[]) AND r.status = ANY(${TERMINAL_RUN_STATUSES}::text[])
               AND d.dispatch_type = ANY(${RUN_WAITING_DISPATCH_TYPES}::text[])
             ORDER BY d.dispatch_id
               FOR UPDATE OF d SKIP LOCKED`,
    },
    {
      from: UNDELIVERED_DISPATCH_STATUSES,
      to: 'CANCELLED',
      set: Prisma.sql`last_error = 'run ended in ' || picked.run_status`,
      returning: Prisma.sql`t.run_id::text, t.dispatch_id::text, picked.run_status`,
    },
  );

  const byRun = new Map<string, { runStatus: string; abandonedPartitions: string[]; cancelledDispatches: string[] }>();
  const entry = (runId: string, runStatus: string) => {
    const e = byRun.get(runId) ?? { runStatus, abandonedPartitions: [], cancelledDispatches: [] };
    byRun.set(runId, e);
    return e;
  };
  for (const p of partitions) entry(p.run_id, p.run_status).abandonedPartitions.push(p.partition_id);
  for (const d of dispatches) entry(d.run_id, d.run_status).cancelledDispatches.push(d.dispatch_id);
  for (const [runId, e] of byRun) {
    await recordApiEvent(tx, {
      level: 'INFO',
      name: 'RUN_WORK_ABANDONED',
      runId,
      actor: SWEEPER_ACTOR,
      message: `run ended in ${e.runStatus}: ${e.abandonedPartitions.length} partitions abandoned, ${e.cancelledDispatches.length} calls cancelled`,
      details: { runStatus: e.runStatus, abandonedPartitions: e.abandonedPartitions.sort(), cancelledDispatches: e.cancelledDispatches },
    });
  }
  return {
    acted: [
      ...partitions.map((p) => ({ action: 'abandon_partition' as const, runId: p.run_id, partitionId: p.partition_id })),
      ...dispatches.map((d) => ({ action: 'cancel_dispatch' as const, runId: d.run_id, dispatchId: d.dispatch_id })),
    ],
  };
}
