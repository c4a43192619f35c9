import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { DeadlineOutcome } from '../gate/expected-by.js';
import { SWEEPER_ACTOR, type RuleOutcome } from './settings.js';

/**
 * The deadlines a cycle considers: those that passed within this window, and after their expectation was set.
 * A deadline passes once a day per job and gate, so each expectation gives at most a date or two per cycle; a
 * sweeper stopped for longer than the window leaves the dates whose deadlines passed meanwhile unchecked.
 */
const DEADLINE_LOOKBACK_HOURS = 24;
/** At most this many (job, business date) checks per cycle, earliest deadline first; the rest the next cycle. */
const CHECKS_PER_CYCLE = 500;

/** The alert's message, over a gate_deadline_check row `c`: what was expected when, and what was there instead. */
export const deadlineMessage = (c: string): Prisma.Sql => {
  const row = Prisma.raw(c);
  return Prisma.sql`'expected by ' || to_char(${row}.deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') || ' for '
    || ${row}.consumer || ': ' || CASE WHEN ${row}.attempt IS NULL THEN 'no attempt'
       ELSE 'attempt ' || ${row}.attempt || ' ' || ${row}.state || ' (run ' || ${row}.run_id || ')' END`;
};

/**
 * Expected-by deadlines (issue 15): once per job and business date, when the first deadline a gate set for it
 * passes, the job's latest attempt for the date is looked at — none is OBSERVATION_MISSING, one not SUCCEEDED
 * is OBSERVATION_LATE (WARN events, the alerts of the monitor summary and alertRaised), a success is MET. Each
 * outcome is recorded in gate_deadline_check, so no later cycle looks again. No state changes.
 *
 * Which dates: for each required job with an expectation, the business dates D whose deadline (its time on
 * D + daysAfter in its zone) passed within DEADLINE_LOOKBACK_HOURS and after the expectation was set — found from
 * today's date in the expectation's zone, so the work per cycle is bounded by the number of expectations.
 */
export async function sweepObservationDeadlines(tx: Tx): Promise<RuleOutcome> {
  const checked = await tx.$queryRaw<Array<{ job_id: string; business_date: string; outcome: DeadlineOutcome }>>`
    WITH now AS (SELECT clock_timestamp() AS at),
    due AS (
      SELECT DISTINCT ON (q.job_id, b.business_date) q.consumer, q.job_id, b.business_date, b.deadline
        FROM nifi_ops.gate_required_job q CROSS JOIN now
        CROSS JOIN LATERAL (
          SELECT d.business_date,
                 nifi_ops.observation_deadline(d.business_date, q.expected_days_after, q.expected_time, q.expected_time_zone) AS deadline
            FROM (SELECT (now.at AT TIME ZONE q.expected_time_zone)::date - q.expected_days_after - k AS business_date
                    FROM generate_series(0, 2) AS k) d
        ) b
       WHERE q.expected_days_after IS NOT NULL
         AND b.deadline <= now.at AND b.deadline > now.at - make_interval(hours => ${DEADLINE_LOOKBACK_HOURS}::int)
         AND b.deadline > q.expected_since
         AND NOT EXISTS (SELECT 1 FROM nifi_ops.gate_deadline_check c WHERE c.job_id = q.job_id AND c.business_date = b.business_date)
       ORDER BY q.job_id, b.business_date, b.deadline, q.consumer
    ), picked AS (
      SELECT * FROM due ORDER BY deadline, job_id, business_date LIMIT ${CHECKS_PER_CYCLE}
    ), found AS (
      SELECT p.*, l.attempt, l.run_id, l.state
        FROM picked p
        LEFT JOIN LATERAL (
          SELECT a.attempt, a.run_id, a.state FROM nifi_ops.gate_attempts(ARRAY[p.job_id::text], p.business_date) a
           ORDER BY a.attempt DESC, a.source LIMIT 1) l ON true
    ), inserted AS (
      INSERT INTO nifi_ops.gate_deadline_check AS c (job_id, business_date, outcome, consumer, deadline, attempt, run_id, state)
      SELECT job_id, business_date,
             CASE WHEN attempt IS NULL THEN 'OBSERVATION_MISSING' WHEN state = 'SUCCEEDED' THEN 'MET' ELSE 'OBSERVATION_LATE' END,
             consumer, deadline, attempt, run_id, state
        FROM found
      ON CONFLICT DO NOTHING
      RETURNING c.*
    ), alerted AS (
      INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, job_key, business_key, process_group,
          processor_name, message, details, actor)
      SELECT gen_random_uuid(), 'WARN', c.outcome, c.job_id, to_char(c.business_date, 'YYYY-MM-DD'), 'LOAD_CONTROL_API',
             'observation_deadline', ${deadlineMessage('c')},
             jsonb_build_object('consumer', c.consumer, 'deadline', c.deadline, 'attempt', c.attempt, 'runId', c.run_id,
                                'state', c.state),
             ${SWEEPER_ACTOR}
        FROM inserted c WHERE c.outcome <> 'MET'
    )
    SELECT job_id, to_char(business_date, 'YYYY-MM-DD') AS business_date, outcome FROM inserted ORDER BY deadline, job_id`;
  return {
    acted: checked.map((c) => ({
      action: c.outcome === 'MET' ? 'deadline_met' : 'observation_alert',
      runId: null,
      jobId: c.job_id,
      businessDate: c.business_date,
    })),
  };
}
