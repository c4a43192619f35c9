import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DomainError } from '../../contract/errors.js';
import { canTransitionObservation, type ObservationState } from './observation-states.js';
import { inOneTransaction } from '../../db/operation.js';

export interface RecordObservationCommand {
  jobId: string;
  businessDate: string;
  attempt: number;
  runId: string;
  state: ObservationState;
  startedAt: Date;
  actor: string;
}

export interface ObservationRecord extends Omit<RecordObservationCommand, 'actor'> {
  firstObservedAt: Date;
  observedAt: Date;
  observedBy: string;
}

export interface RecordObservationResult {
  observation: ObservationRecord;
  changed: boolean;
}

interface ObservationRow {
  job_id: string;
  business_date: string;
  attempt: number;
  run_id: string;
  state: ObservationState;
  started_at: Date;
  first_observed_at: Date;
  observed_at: Date;
  observed_by: string;
}

const COLUMNS = Prisma.raw('job_id, business_date::text, attempt, run_id, state, started_at, first_observed_at, observed_at, observed_by');

function toRecord(row: ObservationRow): ObservationRecord {
  return {
    jobId: row.job_id,
    businessDate: row.business_date,
    attempt: row.attempt,
    runId: row.run_id,
    state: row.state,
    startedAt: row.started_at,
    firstObservedAt: row.first_observed_at,
    observedAt: row.observed_at,
    observedBy: row.observed_by,
  };
}

function conflict(cmd: RecordObservationCommand, recorded: ObservationRecord, reason: string): DomainError {
  return new DomainError(
    'OBSERVATION_CONFLICT',
    {
      jobId: cmd.jobId,
      businessDate: cmd.businessDate,
      attempt: cmd.attempt,
      reason,
      recorded: { runId: recorded.runId, state: recorded.state, startedAt: recorded.startedAt.toISOString() },
    },
    `attempt ${cmd.attempt} of ${cmd.jobId} for ${cmd.businessDate}: ${reason}`,
  );
}

/**
 * recordObservation: one attempt of an external upstream job for a business date. Each attempt is its own
 * row, so a delayed message about attempt 1 can only ever touch attempt 1. RUNNING may end once; the same
 * state again, or a RUNNING that arrives after the attempt ended, is a no-op; any other change is 409
 * OBSERVATION_CONFLICT (a repair is a new attempt).
 */
export async function recordObservation(tx: Tx, cmd: RecordObservationCommand): Promise<RecordObservationResult> {
  const loadControlJob = await tx.$queryRaw<unknown[]>`
    SELECT 1 FROM nifi_ops.load_run WHERE job_key = ${cmd.jobId} LIMIT 1`;
  if (loadControlJob.length > 0) {
    throw new DomainError(
      'OBSERVATION_CONFLICT',
      { jobId: cmd.jobId, reason: 'LOAD_CONTROL_JOB' },
      `${cmd.jobId} is a Load Control job: its runs are its observations`,
    );
  }

  // ON CONFLICT DO NOTHING waits for a concurrent first report of the same attempt and then leaves it be.
  const inserted = await tx.$queryRaw<ObservationRow[]>`
    INSERT INTO nifi_ops.gate_observation (job_id, business_date, attempt, run_id, state, started_at, observed_by)
    VALUES (${cmd.jobId}, ${cmd.businessDate}::date, ${cmd.attempt}, ${cmd.runId}, ${cmd.state}, ${cmd.startedAt}, ${cmd.actor})
    ON CONFLICT DO NOTHING
    RETURNING ${COLUMNS}`;
  if (inserted[0]) return { observation: toRecord(inserted[0]), changed: true };

  const rows = await tx.$queryRaw<ObservationRow[]>`
    SELECT ${COLUMNS} FROM nifi_ops.gate_observation
     WHERE job_id = ${cmd.jobId} AND business_date = ${cmd.businessDate}::date AND attempt = ${cmd.attempt}
       FOR UPDATE`;
  const recorded = toRecord(rows[0]!);
  // an attempt is one run: the same ordinal with another run or start time is a producer bug, not an update
  if (recorded.runId !== cmd.runId) throw conflict(cmd, recorded, `recorded with run ${recorded.runId}, not ${cmd.runId}`);
  if (recorded.startedAt.getTime() !== cmd.startedAt.getTime()) {
    throw conflict(cmd, recorded, `recorded as started at ${recorded.startedAt.toISOString()}, not ${cmd.startedAt.toISOString()}`);
  }
  // the recorded state already follows from the reported one: a late report, nothing to learn from it
  if (recorded.state === cmd.state || canTransitionObservation(cmd.state, recorded.state)) {
    return { observation: recorded, changed: false };
  }
  if (!canTransitionObservation(recorded.state, cmd.state)) {
    throw conflict(cmd, recorded, `${recorded.state} is final; a repair needs a new attempt`);
  }
  const updated = await tx.$queryRaw<ObservationRow[]>`
    UPDATE nifi_ops.gate_observation
       SET state = ${cmd.state}, observed_at = clock_timestamp(), observed_by = ${cmd.actor}
     WHERE job_id = ${cmd.jobId} AND business_date = ${cmd.businessDate}::date AND attempt = ${cmd.attempt}
       AND state = ${recorded.state}
     RETURNING ${COLUMNS}`;
  return { observation: toRecord(updated[0]!), changed: true };
}

export const recordObservationOperation = inOneTransaction(recordObservation);
