// Jobs over business dates (Airflow's grid, Dagster's partition view): for each job and each of the last N
// business dates, the latest attempt, how many there were, and where a gate guards the job, its readiness.
import type { Tx } from '../../db/client.js';
import type { AttemptSource } from '../gate/ledger.js';
import type { ObservationState } from '../gate/observation-states.js';
import { parseRunStatus, type RunStatus } from '../states.js';

export interface MatrixCell {
  businessDate: string;
  /** Attempts of the job for the date: Load Control runs whose business key is the date, or observations. */
  attempts: number;
  /** The greatest attempt (it alone decides readiness), or null without one. */
  latest: {
    attempt: number;
    runId: string;
    state: ObservationState;
    source: AttemptSource;
    startedAt: Date;
    /** For a Load Control run, its status. */
    runStatus: RunStatus | null;
  } | null;
  /** The readiness for the date of the gate bound to the job; null when no gate guards the job. */
  gateReady: boolean | null;
}

export interface MatrixRow {
  jobId: string;
  /** The gate whose bound job this is, if any. */
  gatedBy: string | null;
  cells: MatrixCell[];
}

export interface JobMatrix {
  /** Oldest first, ending at the matrix's end date. */
  businessDates: string[];
  rows: MatrixRow[];
  /** For a gate's matrix, its readiness on each date (in businessDates' order); empty otherwise. */
  consumerReadiness: boolean[];
}

interface CellRow {
  ordinal: bigint;
  business_date: string;
  attempts: number;
  attempt: number | null;
  run_id: string | null;
  state: ObservationState | null;
  source: AttemptSource | null;
  started_at: Date | null;
  run_status: string | null;
  gated_by: string | null;
  gate_ready: boolean | null;
}

/** The jobs a gate requires, in job order, then the job it holds back (none for a consumer without a gate). */
export async function gateJobs(tx: Tx, consumer: string): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ job_id: string }>>`
    SELECT job_id FROM (
      SELECT job_id, 0 AS rank FROM nifi_ops.gate_required_job WHERE consumer = ${consumer}
      UNION ALL
      SELECT bound_job_key, 1 FROM nifi_ops.gate WHERE consumer = ${consumer} AND bound_job_key IS NOT NULL
    ) jobs ORDER BY rank, job_id`;
  return rows.map((row) => row.job_id);
}

/**
 * The matrix of `jobIds` (in that order) over the `days` business dates ending at `endDate`, in one statement:
 * each cell reads the attempts of one job and date (nifi_ops.gate_attempts: ix_load_run_job_business_started and
 * the observations' key), and a gated job's cell the gate's readiness for the date.
 */
export async function jobMatrix(
  tx: Tx,
  jobIds: readonly string[],
  endDate: string,
  days: number,
  consumer: string | null,
): Promise<JobMatrix> {
  const dates = await tx.$queryRaw<Array<{ day: string; ready: boolean | null }>>`
    SELECT to_char(d.day, 'YYYY-MM-DD') AS day,
           CASE WHEN ${consumer}::text IS NULL THEN NULL ELSE
             (SELECT count(*) > 0 AND bool_and(COALESCE(gr.state = 'SUCCEEDED', false))
                FROM nifi_ops.gate_readiness(${consumer}::text, d.day::date) gr) END AS ready
      FROM generate_series(${endDate}::date - (${days}::int - 1), ${endDate}::date, interval '1 day') AS d(day)
     ORDER BY d.day`;
  const cells = await tx.$queryRaw<CellRow[]>`
    SELECT j.ordinal, to_char(d.day, 'YYYY-MM-DD') AS business_date, COALESCE(l.attempts, 0)::int AS attempts,
           l.attempt, l.run_id, l.state, l.source, l.started_at, r.status AS run_status, g.consumer AS gated_by,
           -- a gate's readiness on a date: every required job's greatest attempt succeeded
           CASE WHEN g.consumer IS NULL THEN NULL ELSE
             (SELECT count(*) > 0 AND bool_and(COALESCE(gr.state = 'SUCCEEDED', false))
                FROM nifi_ops.gate_readiness(g.consumer, d.day::date) gr) END AS gate_ready
      FROM unnest(${jobIds}::text[]) WITH ORDINALITY AS j(job_id, ordinal)
      CROSS JOIN generate_series(${endDate}::date - (${days}::int - 1), ${endDate}::date, interval '1 day') AS d(day)
      LEFT JOIN nifi_ops.gate g ON g.bound_job_key = j.job_id
      LEFT JOIN LATERAL (
        SELECT a.*, count(*) OVER () AS attempts
          FROM nifi_ops.gate_attempts(ARRAY[j.job_id], d.day::date) a
         ORDER BY a.attempt DESC, a.source LIMIT 1) l ON true
      -- an observation's run id is the producer's own text, never cast: CASE decides before the cast is made
      LEFT JOIN nifi_ops.load_run r ON r.run_id = CASE WHEN l.source = 'LOAD_CONTROL' THEN l.run_id::uuid END
     ORDER BY j.ordinal, d.day`;
  const rows: MatrixRow[] = jobIds.map((jobId) => ({ jobId, gatedBy: null, cells: [] }));
  for (const cell of cells) {
    const row = rows[Number(cell.ordinal) - 1]!;
    row.gatedBy = cell.gated_by;
    row.cells.push({
      businessDate: cell.business_date,
      attempts: cell.attempts,
      latest:
        cell.attempt === null
          ? null
          : {
              attempt: cell.attempt,
              runId: cell.run_id!,
              state: cell.state!,
              source: cell.source!,
              startedAt: cell.started_at!,
              runStatus: cell.run_status === null ? null : parseRunStatus(cell.run_status),
            },
      gateReady: cell.gate_ready,
    });
  }
  return {
    businessDates: dates.map((d) => d.day),
    rows,
    consumerReadiness: consumer === null ? [] : dates.map((d) => d.ready === true),
  };
}
