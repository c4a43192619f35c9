import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/config.js';
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { recordApiEvent } from '../events/events.js';
import { assertRunGateReady, refusableByGate } from '../gate/run-gate.js';
import { OPERATOR_EVENTS } from '../events/operator-events.js';
import { assertJobNotPaused } from '../jobs/job-pause.js';
import {
  ACTIVE_RUN_STATUSES,
  parseRunStatus,
  REISSUE_WAITING_PARTITION_STATUS,
  RESUMABLE_RUN_STATUSES,
  type RunStatus,
} from '../states.js';
import { transitionRun } from '../transitions.js';
import { newerAttempt } from './queries.js';

/** How old a run's SCN may be for resumeRun (config.resume), in milliseconds. */
export type SnapshotHorizon = Config['resume'];

export interface ResumeRunCommand {
  runId: string;
  reason: string;
  horizon: SnapshotHorizon;
  actor: string;
}

export interface ResumeRunResult {
  runId: string;
  status: RunStatus;
  resumedFromRunId: string;
  hdfsRunPath: string;
  stageTable: string;
  carriedPartitions: number;
  reissuedPartitions: number;
}

/** Why a run cannot be resumed (RUN_NOT_RESUMABLE's `reason`). */
type NotResumableReason = 'STATUS' | 'NO_MANIFEST' | 'NO_SNAPSHOT' | 'EXTRACTION_COMPLETED';

interface FailedRun {
  job_key: string;
  business_key: string;
  status: string;
  snapshot_scn: string | null;
  expected_partition_count: number | null;
  extract_completed_at: Date | null;
  hdfs_run_path: string;
  stage_table_name: string;
  started_at: Date;
}

const notResumable = (runStatus: RunStatus, reason: NotResumableReason) =>
  new DomainError('RUN_NOT_RESUMABLE', { runStatus, reason, resumableStatuses: RESUMABLE_RUN_STATUSES }, `run not resumable: ${reason}`);

const horizonOf = (horizon: SnapshotHorizon, jobKey: string): number => horizon.snapshotHorizonByJob[jobKey] ?? horizon.snapshotHorizon;

/**
 * resumeRun: a new attempt of a failed run's job and business key that keeps its manifest, its snapshot SCN and
 * its SUCCESS partitions, and extracts only the others again. The new run starts EXTRACTING, under the failed
 * run's HDFS run path (where the carried partitions' files are, and where PG-40's table over the run path
 * reads), its carried partitions SUCCESS with their counts and the run's counters already holding them, the
 * others RETRY with one REISSUE_PARTITION call each — PG-05 → PG-20 extracts each at the SCN, and its claim
 * is the call's ACK. Completion is unchanged: count_run_successes adds each new success to counters that start
 * at the carried ones, so a carried partition is counted once. The failed run's row lock serialises resumes of
 * it: the second sees the first's attempt and gets NEWER_ATTEMPT_EXISTS. createRun's gate rule holds.
 */
function resumeRun(tx: Tx, cmd: ResumeRunCommand, afterCommit: AfterCommit): Promise<ResumeRunResult> {
  return refusableByGate(tx, afterCommit, () => insertResumedRun(tx, cmd, afterCommit));
}

async function insertResumedRun(tx: Tx, cmd: ResumeRunCommand, afterCommit: AfterCommit): Promise<ResumeRunResult> {
  const [failed] = await tx.$queryRaw<FailedRun[]>`
    SELECT job_key, business_key, status, snapshot_scn::text, expected_partition_count, extract_completed_at,
           hdfs_run_path, stage_table_name, started_at
      FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid FOR UPDATE`;
  if (!failed) throw new DomainError('RUN_NOT_FOUND', { runId: cmd.runId });
  const runStatus = parseRunStatus(failed.status);
  if (!RESUMABLE_RUN_STATUSES.includes(runStatus)) throw notResumable(runStatus, 'STATUS');
  if (failed.expected_partition_count === null) throw notResumable(runStatus, 'NO_MANIFEST');
  if (failed.snapshot_scn === null) throw notResumable(runStatus, 'NO_SNAPSHOT');
  if (failed.extract_completed_at !== null) throw notResumable(runStatus, 'EXTRACTION_COMPLETED');

  // the row lock above makes a concurrent resume's attempt visible here
  const newer = await newerAttempt(tx, cmd.runId);
  if (newer) {
    throw new DomainError('NEWER_ATTEMPT_EXISTS', {
      jobKey: failed.job_key,
      businessKey: failed.business_key,
      newerRunId: newer.runId,
      newerRunStatus: newer.status,
    });
  }

  // The SCN was read after the run was created: its start bounds the SCN's age from above.
  const horizonMs = horizonOf(cmd.horizon, failed.job_key);
  const [age] = await tx.$queryRaw<Array<{ beyond: boolean; horizon_ended_at: Date }>>`
    SELECT started_at < clock_timestamp() - ${horizonMs}::double precision * interval '1 millisecond' AS beyond,
           started_at + ${horizonMs}::double precision * interval '1 millisecond' AS horizon_ended_at
      FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid`;
  if (age!.beyond) {
    throw new DomainError('SNAPSHOT_BEYOND_HORIZON', {
      snapshotScn: failed.snapshot_scn,
      runStartedAt: failed.started_at.toISOString(),
      snapshotHorizonSeconds: horizonMs / 1000,
      horizonEndedAt: age!.horizon_ended_at.toISOString(),
    });
  }

  // Some partition is left to extract: every partition SUCCESS (and rows = source, which the manifest's
  // expected counts make so) would have completed the extraction.
  const [plan] = await tx.$queryRaw<Array<{ carried: number; carried_rows: bigint }>>`
    SELECT count(*)::int AS carried, COALESCE(sum(actual_row_count), 0)::bigint AS carried_rows
      FROM nifi_ops.load_partition WHERE run_id = ${cmd.runId}::uuid AND status = 'SUCCESS'`;
  await tx.$executeRaw`SELECT nifi_ops.fault_point('resume_run')`;

  // a new attempt is a new run of the job: a paused job takes none, as createRun
  await assertJobNotPaused(tx, failed.job_key);
  await assertRunGateReady(tx, { jobKey: failed.job_key, businessKey: failed.business_key, runId: null, actor: cmd.actor });

  const runId = randomUUID();
  // the failed run's table name is its prefix and its id's 32 hexadecimal digits (createRun)
  const stageTable = failed.stage_table_name.slice(0, -32) + runId.replaceAll('-', '');
  const inserted = await tx.$queryRaw<Array<{ run_id: string }>>`
    INSERT INTO nifi_ops.load_run (run_id, job_key, business_key, status, hdfs_run_path, stage_table_name, parameters,
        created_by, retry_of_run_id, tags, flow_registry, flow_bucket, flow_id, flow_version)
    SELECT ${runId}::uuid, job_key, business_key, 'CREATED', hdfs_run_path, ${stageTable}, parameters,
           ${cmd.actor}, run_id, tags, flow_registry, flow_bucket, flow_id, flow_version
      FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid
    ON CONFLICT DO NOTHING
    RETURNING run_id`;
  if (inserted.length === 0) {
    const active = await tx.$queryRaw<Array<{ run_id: string }>>`
      SELECT run_id::text FROM nifi_ops.load_run
       WHERE job_key = ${failed.job_key} AND business_key = ${failed.business_key} AND status = ANY(${ACTIVE_RUN_STATUSES}::text[])`;
    throw new DomainError('DUPLICATE_ACTIVE_RUN', {
      jobKey: failed.job_key,
      businessKey: failed.business_key,
      activeRunId: active[0]?.run_id ?? null,
    });
  }

  // A carried partition keeps its counts and names the run whose extraction wrote its files (those files' rows
  // stay that run's: a path is recorded once). The others wait for their reissue call's new owner.
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_partition (run_id, partition_id, lower_bound, upper_bound, upper_inclusive, is_null_partition,
        expected_row_count, status, actual_row_count, file_count, fragment_count, byte_count, received_chunks, received_rows,
        received_bytes, reported_chunk_count, completed_at, carried_from_run_id)
    SELECT ${runId}::uuid, partition_id, lower_bound, upper_bound, upper_inclusive, is_null_partition, expected_row_count,
           CASE WHEN carried THEN 'SUCCESS' ELSE ${REISSUE_WAITING_PARTITION_STATUS} END,
           CASE WHEN carried THEN actual_row_count END, CASE WHEN carried THEN file_count END,
           CASE WHEN carried THEN fragment_count END, CASE WHEN carried THEN byte_count END,
           CASE WHEN carried THEN received_chunks ELSE 0 END, CASE WHEN carried THEN received_rows ELSE 0 END,
           CASE WHEN carried THEN received_bytes ELSE 0 END, CASE WHEN carried THEN reported_chunk_count END,
           CASE WHEN carried THEN completed_at END,
           CASE WHEN carried THEN COALESCE(carried_from_run_id, run_id) END
      FROM (SELECT *, status = 'SUCCESS' AS carried FROM nifi_ops.load_partition WHERE run_id = ${cmd.runId}::uuid) p`;

  await transitionRun(
    tx,
    { runId },
    {
      from: ['CREATED'],
      to: 'EXTRACTING',
      set: Prisma.sql`(snapshot_scn, source_count, source_null_split_count, source_min_split, source_max_split,
             expected_partition_count) =
           (SELECT snapshot_scn, source_count, source_null_split_count, source_min_split, source_max_split,
                   expected_partition_count FROM nifi_ops.load_run WHERE run_id = ${cmd.runId}::uuid),
           success_partition_count = ${plan!.carried}, extracted_count = ${plan!.carried_rows}`,
    },
  );

  // the manifest's SOURCE metrics: startValidation hands them to PG-40, which compares staging with them
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_validation (run_id, stage, metric_name, expected_value, actual_value, tolerance, result,
        query_version, details)
    SELECT ${runId}::uuid, stage, metric_name, expected_value, actual_value, tolerance, result, query_version, details
      FROM nifi_ops.load_validation WHERE run_id = ${cmd.runId}::uuid AND stage = 'SOURCE'`;

  const reissued = await tx.$queryRaw<Array<{ partition_id: string }>>`
    INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, partition_id)
    SELECT gen_random_uuid(), run_id, 'REISSUE_PARTITION', partition_id
      FROM nifi_ops.load_partition WHERE run_id = ${runId}::uuid AND status = ${REISSUE_WAITING_PARTITION_STATUS}
     ORDER BY partition_id
    RETURNING partition_id`;

  const counts = { carriedPartitions: plan!.carried, reissuedPartitions: reissued.length };
  await recordApiEvent(tx, {
    level: 'INFO',
    name: OPERATOR_EVENTS.resumeRun,
    runId,
    actor: cmd.actor,
    message: cmd.reason,
    rowCount: plan!.carried_rows,
    details: { resumedFromRunId: cmd.runId, snapshotScn: failed.snapshot_scn, ...counts },
  });
  await recordApiEvent(tx, {
    level: 'INFO',
    name: OPERATOR_EVENTS.resumedAs,
    runId: cmd.runId,
    actor: cmd.actor,
    message: cmd.reason,
    details: { resumedAsRunId: runId, ...counts },
  });
  afterCommit.wakeDispatcher(runId);
  return {
    runId,
    status: 'EXTRACTING',
    resumedFromRunId: cmd.runId,
    hdfsRunPath: failed.hdfs_run_path,
    stageTable,
    ...counts,
  };
}

export const resumeRunOperation = inOneTransaction(resumeRun);
