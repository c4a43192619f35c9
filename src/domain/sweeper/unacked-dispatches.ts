import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DISPATCH_SUBJECTS, stillWaiting } from '../dispatch/waiting.js';
import { recordApiEvent } from '../events/events.js';
import type { DispatchType } from '../states.js';
import { transitionDispatch } from '../transitions.js';
import { SWEEPER_ACTOR, seconds, type RuleOutcome, type SweeperSettings } from './settings.js';

/**
 * R3 unacknowledged calls (ref §5.2): a SENT call its run still waits for, with no ACK within
 * dispatch.ackTimeout, is sent again (PENDING, due now, attempts kept) — or, once dispatch.maxAttempts
 * sends were made, DEAD. So a receiver that answers 202 but never starts its flow ends DEAD.
 */
export async function sweepUnackedDispatches(tx: Tx, settings: SweeperSettings, afterCommit: AfterCommit): Promise<RuleOutcome> {
  const { ackTimeout, maxAttempts } = settings.dispatch;
  // SENT calls still wanted whose ACK is overdue (an ALERT_WEBHOOK or LINEAGE_EVENT call is never SENT: its 2xx
  // acknowledges it, so no receiver of theirs needs naming): those with their attempts used up, or the others
  const due = (exhausted: boolean) => Prisma.sql`SELECT d.dispatch_id
              FROM nifi_ops.load_dispatch d ${DISPATCH_SUBJECTS}
             WHERE d.status = 'SENT' AND d.sent_at < clock_timestamp() - make_interval(secs => ${seconds(ackTimeout)}::float8)
               AND ${stillWaiting({ alertReceivers: [], lineage: false })} AND (d.attempt_count >= ${maxAttempts}::int) = ${exhausted}
             ORDER BY d.dispatch_id
               FOR UPDATE OF d SKIP LOCKED`;
  type DueRow = {
    dispatch_id: string;
    /** Null for a START_LOAD call: its run does not exist yet. */
    run_id: string | null;
    dispatch_type: DispatchType;
    partition_id: string | null;
    attempt_count: number;
    last_error: string;
  };
  const returning = Prisma.sql`t.dispatch_id::text, t.run_id::text, t.dispatch_type, t.partition_id, t.attempt_count, t.last_error`;
  const dead = await transitionDispatch<DueRow>(
    tx,
    { picked: due(true) },
    {
      from: ['SENT'],
      to: 'DEAD',
      set: Prisma.sql`last_error = 'no ack after ' || t.attempt_count || ' attempts (ack timeout)'`,
      returning,
      event: (row) => ({
        level: 'ERROR',
        name: 'DISPATCH_DEAD',
        runId: row.run_id,
        partitionId: row.partition_id,
        actor: SWEEPER_ACTOR,
        message: row.last_error,
        details: { dispatchId: row.dispatch_id, type: row.dispatch_type, attempt: row.attempt_count },
      }),
    },
  );
  const requeued = await transitionDispatch<DueRow>(
    tx,
    { picked: due(false) },
    {
      from: ['SENT'],
      to: 'PENDING',
      set: Prisma.sql`last_error = 'ack timeout, requeued by sweeper'`,
      returning,
    },
  );

  const record = (row: DueRow) => ({ runId: row.run_id, partitionId: row.partition_id, dispatchId: row.dispatch_id });
  const outcome: RuleOutcome = {
    acted: [
      ...dead.map((row) => ({ action: 'dead_dispatch' as const, ...record(row) })),
      ...requeued.map((row) => ({ action: 'requeue_dispatch' as const, ...record(row) })),
    ],
  };
  const requeuedByRun = new Map<string | null, string[]>();
  for (const row of requeued) {
    afterCommit.wakeDispatcher(row.run_id ?? row.dispatch_id);
    requeuedByRun.set(row.run_id, [...(requeuedByRun.get(row.run_id) ?? []), row.dispatch_id]);
  }
  for (const [runId, dispatchIds] of requeuedByRun) {
    await recordApiEvent(tx, {
      level: 'WARN',
      name: 'DISPATCH_REQUEUED',
      runId,
      actor: SWEEPER_ACTOR,
      message: 'ack timeout, requeued by sweeper',
      details: { dispatchIds },
    });
  }
  return outcome;
}
