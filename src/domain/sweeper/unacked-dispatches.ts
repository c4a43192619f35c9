import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { STILL_WAITING } from '../dispatch/waiting.js';
import { recordApiEvent } from '../events/events.js';
import type { DispatchType } from '../states.js';
import { SWEEPER_ACTOR, seconds, type RuleOutcome, type SweeperSettings } from './settings.js';

/**
 * R3 unacknowledged calls (ref §5.2): a SENT call its run still waits for, with no ACK within
 * dispatch.ackTimeout, is sent again (PENDING, due now, attempts kept) — or, once dispatch.maxAttempts
 * sends were made, DEAD. So a receiver that answers 202 but never starts its flow ends DEAD.
 */
export async function sweepUnackedDispatches(tx: Tx, settings: SweeperSettings, afterCommit: AfterCommit): Promise<RuleOutcome> {
  const { ackTimeout, maxAttempts } = settings.dispatch;
  const rows = await tx.$queryRaw<Array<{
    dispatch_id: string; run_id: string; dispatch_type: DispatchType; partition_id: string | null; status: string;
    attempt_count: number; last_error: string;
  }>>`
    UPDATE nifi_ops.load_dispatch AS t
       SET status = CASE WHEN t.attempt_count >= ${maxAttempts}::int THEN 'DEAD' ELSE 'PENDING' END,
           dead_at = CASE WHEN t.attempt_count >= ${maxAttempts}::int THEN clock_timestamp() END,
           next_attempt_at = CASE WHEN t.attempt_count >= ${maxAttempts}::int THEN t.next_attempt_at ELSE clock_timestamp() END,
           last_error = CASE WHEN t.attempt_count >= ${maxAttempts}::int
                             THEN 'no ack after ' || t.attempt_count || ' attempts (ack timeout)'
                             ELSE 'ack timeout, requeued by sweeper' END
      FROM (SELECT d.dispatch_id
              FROM nifi_ops.load_dispatch d
              JOIN nifi_ops.load_run r ON r.run_id = d.run_id
              LEFT JOIN nifi_ops.load_partition p ON p.run_id = d.run_id AND p.partition_id = d.partition_id
             WHERE d.status = 'SENT' AND d.sent_at < clock_timestamp() - make_interval(secs => ${seconds(ackTimeout)}::float8)
               AND ${STILL_WAITING}
             ORDER BY d.dispatch_id
               FOR UPDATE OF d SKIP LOCKED) AS due
     WHERE t.dispatch_id = due.dispatch_id
    RETURNING t.dispatch_id::text, t.run_id::text, t.dispatch_type, t.partition_id, t.status, t.attempt_count, t.last_error`;

  const outcome: RuleOutcome = { acted: [] };
  const requeuedByRun = new Map<string, string[]>();
  for (const row of rows) {
    const record = { runId: row.run_id, partitionId: row.partition_id, dispatchId: row.dispatch_id };
    if (row.status === 'DEAD') {
      outcome.acted.push({ action: 'dead_dispatch', ...record });
      await recordApiEvent(tx, {
        level: 'ERROR', name: 'DISPATCH_DEAD', runId: row.run_id, partitionId: row.partition_id, actor: SWEEPER_ACTOR,
        message: row.last_error, details: { dispatchId: row.dispatch_id, type: row.dispatch_type, attempt: row.attempt_count },
      });
    } else {
      outcome.acted.push({ action: 'requeue_dispatch', ...record });
      afterCommit.wakeDispatcher(row.run_id);
      requeuedByRun.set(row.run_id, [...(requeuedByRun.get(row.run_id) ?? []), row.dispatch_id]);
    }
  }
  for (const [runId, dispatchIds] of requeuedByRun) {
    await recordApiEvent(tx, {
      level: 'WARN', name: 'DISPATCH_REQUEUED', runId, actor: SWEEPER_ACTOR, message: 'ack timeout, requeued by sweeper',
      details: { dispatchIds },
    });
  }
  return outcome;
}
