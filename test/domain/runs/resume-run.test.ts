// resumeRun's rules: the new attempt keeps the failed run's manifest, SCN, HDFS run path and SUCCESS partitions,
// extracts only the others, and completes by the unchanged rule with every carried partition counted once; every
// refusal. The races against itself and createRun are in resume-run-race.test.ts, the HTTP contract in
// test/api/runs/resume-run.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { reportChunkOperation } from '../../../src/domain/chunks/report-chunk.js';
import { cleanupCandidates } from '../../../src/domain/cleanup/cleanup-candidates.js';
import { pauseJobOperation, resumeJobOperation } from '../../../src/domain/jobs/job-pause.js';
import { registerManifestOperation } from '../../../src/domain/manifest/register-manifest.js';
import { resumeRunOperation, type SnapshotHorizon } from '../../../src/domain/runs/resume-run.js';
import { unique } from '../../support/gate-fixtures.js';
import { JOB } from '../../support/fixtures.js';
import {
  ACTOR,
  cancelled,
  chunk,
  claimed,
  createdRun,
  type DomainRun,
  type DomainTest,
  extractedRun,
  failedRun,
  gateDefined,
  manifestCommand,
  OPERATOR,
  observed,
  partitionFailed,
  refusal,
  startDomainTest,
  startedRun,
} from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const HOUR = 3_600_000;
const HORIZON: SnapshotHorizon = { snapshotHorizon: HOUR, snapshotHorizonByJob: {} };
const REASON = 'partition 0001 failed on ORA-03113, source is back';

const resume = (runId: string, horizon: SnapshotHorizon = HORIZON) =>
  perform(t.db, resumeRunOperation, { runId, reason: REASON, horizon, actor: OPERATOR });

/** A resumed run as the chunk fixtures take a run. */
const asRun = (
  resumed: { runId: string; status: DomainRun['status']; hdfsRunPath: string; stageTable: string },
  businessKey: string,
): DomainRun => ({
  runId: resumed.runId,
  status: resumed.status,
  hdfsRunPath: resumed.hdfsRunPath,
  stageTable: resumed.stageTable,
  created: true,
  businessKey,
});

/** A chunk as the kit names its file: the claim token in the name, so a re-extracted partition's files are its own. */
function ownChunk(run: DomainRun, partitionId: string, claimToken: string, index: number, count: number, rows: number) {
  const report = chunk(run, partitionId, claimToken, index, count, rows);
  return { ...report, hdfsPath: `${run.hdfsRunPath}/part-${partitionId}-${claimToken.slice(0, 8)}-${index}.parquet` };
}

/**
 * A run of partitions 0000…: those in `succeeded` extracted (one chunk each), 0001 failed by its owner, which
 * fails the run FAILED_EXTRACT. 0001 reported one chunk of two before it failed.
 */
async function failedExtract(counts: number[], succeeded: string[], create: Parameters<typeof startedRun>[2] = {}) {
  const run = await startedRun(t, counts, create);
  for (const partitionId of succeeded) {
    const { claimToken } = await claimed(t, run.runId, partitionId);
    await perform(t.db, reportChunkOperation, ownChunk(run, partitionId, claimToken, 0, 1, counts[Number(partitionId)]!));
  }
  const { claimToken } = await claimed(t, run.runId, '0001');
  await perform(t.db, reportChunkOperation, ownChunk(run, '0001', claimToken, 0, 2, 1));
  const failure = await partitionFailed(t, run.runId, claimToken, { partitionId: '0001', errorCode: 'ORA-03113' });
  expect(failure.runStatus).toBe('FAILED_EXTRACT');
  return run;
}

async function runRow(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT status, hdfs_run_path, stage_table_name, snapshot_scn::text, source_count::int, expected_partition_count,
            success_partition_count, extracted_count::int, retry_of_run_id::text, tags, flow_registry, flow_bucket, flow_id,
            flow_version, parameters, created_by
       FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function partitionsOf(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT partition_id, status, actual_row_count::int, file_count, received_chunks, carried_from_run_id::text
       FROM nifi_ops.load_partition WHERE run_id = $1 ORDER BY partition_id`,
    [runId],
  );
  return rows;
}

describe('resumeRun', () => {
  it('starts a new attempt EXTRACTING with the manifest, SCN, run path and SUCCESS partitions, and reissues the others', async () => {
    const failed = await failedExtract([3, 4, 5, 0], ['0000'], {
      tags: { team: 'finance', source: 'erp' },
      flowRegistry: 'nifi-registry',
      flowBucket: 'loads',
      flowId: 'f-1',
      flowVersion: '7',
      parameters: { sourceTable: 'INSP.INSP_DTL' },
    });
    const resumed = await resume(failed.runId);
    expect(resumed).toMatchObject({
      status: 'EXTRACTING',
      resumedFromRunId: failed.runId,
      hdfsRunPath: failed.hdfsRunPath,
      stageTable: `tmp_insp_dtl_${resumed.runId.replaceAll('-', '')}`,
      carriedPartitions: 2,
      reissuedPartitions: 2,
    });
    const old = await runRow(failed.runId);
    expect(await runRow(resumed.runId)).toEqual({
      ...old,
      status: 'EXTRACTING',
      stage_table_name: resumed.stageTable,
      success_partition_count: 2,
      extracted_count: 3,
      retry_of_run_id: failed.runId,
      created_by: OPERATOR,
    });
    expect(old).toMatchObject({ tags: { team: 'finance', source: 'erp' }, flow_version: '7', snapshot_scn: expect.any(String) });
    expect(await partitionsOf(resumed.runId)).toEqual([
      {
        partition_id: '0000',
        status: 'SUCCESS',
        actual_row_count: 3,
        file_count: 1,
        received_chunks: 1,
        carried_from_run_id: failed.runId,
      },
      { partition_id: '0001', status: 'RETRY', actual_row_count: null, file_count: null, received_chunks: 0, carried_from_run_id: null },
      { partition_id: '0002', status: 'RETRY', actual_row_count: null, file_count: null, received_chunks: 0, carried_from_run_id: null },
      {
        partition_id: '0003',
        status: 'SUCCESS',
        actual_row_count: 0,
        file_count: 0,
        received_chunks: 0,
        carried_from_run_id: failed.runId,
      },
    ]);
    const { rows: dispatches } = await t.sql.query(
      `SELECT dispatch_type, partition_id, status FROM nifi_ops.load_dispatch WHERE run_id = $1 ORDER BY partition_id`,
      [resumed.runId],
    );
    expect(dispatches).toEqual([
      { dispatch_type: 'REISSUE_PARTITION', partition_id: '0001', status: 'PENDING' },
      { dispatch_type: 'REISSUE_PARTITION', partition_id: '0002', status: 'PENDING' },
    ]);
    // the SOURCE metrics PG-40 compares staging with come along
    const { rows: metrics } = await t.sql.query(
      `SELECT run_id::text, metric_name, actual_value FROM nifi_ops.load_validation WHERE stage = 'SOURCE' AND run_id = ANY($1::uuid[])
        ORDER BY metric_name, run_id = $2`,
      [[failed.runId, resumed.runId], resumed.runId],
    );
    expect(metrics.length).toBeGreaterThan(0);
    expect(metrics.filter((m) => m.run_id === resumed.runId).map(({ metric_name, actual_value }) => [metric_name, actual_value])).toEqual(
      metrics.filter((m) => m.run_id === failed.runId).map(({ metric_name, actual_value }) => [metric_name, actual_value]),
    );
    // audited on both runs with the operator's name and the reason
    const { rows: events } = await t.sql.query(
      `SELECT run_id::text, event_name, actor, message, details FROM nifi_ops.load_event
        WHERE event_name IN ('RUN_RESUMED', 'RUN_RESUMED_AS') ORDER BY event_name`,
    );
    const ofThese = events.filter((e) => e.run_id === resumed.runId || e.run_id === failed.runId);
    expect(ofThese).toEqual([
      {
        run_id: resumed.runId,
        event_name: 'RUN_RESUMED',
        actor: OPERATOR,
        message: REASON,
        details: { resumedFromRunId: failed.runId, snapshotScn: old.snapshot_scn, carriedPartitions: 2, reissuedPartitions: 2 },
      },
      {
        run_id: failed.runId,
        event_name: 'RUN_RESUMED_AS',
        actor: OPERATOR,
        message: REASON,
        details: { resumedAsRunId: resumed.runId, carriedPartitions: 2, reissuedPartitions: 2 },
      },
    ]);
  });

  it('completes once only the reissued partitions are extracted: every carried partition counted once, extracted = source', async () => {
    const failed = await failedExtract([3, 4, 5, 2], ['0000', '0003']);
    const resumed = await resume(failed.runId);
    const run = asRun(resumed, failed.businessKey);
    // a carried partition takes no report: it has no owner in the new run
    const carried = await perform(t.db, reportChunkOperation, { ...ownChunk(run, '0000', randomUUID(), 0, 1, 3), actor: ACTOR }).then(
      () => null,
      (error: { code: string }) => error.code,
    );
    expect(carried).toBe('CLAIM_MISMATCH');

    const first = await claimed(t, resumed.runId, '0001');
    expect(first).toMatchObject({ claimed: true, attempt: 1 });
    await perform(t.db, reportChunkOperation, ownChunk(run, '0001', first.claimToken, 0, 2, 2));
    await perform(t.db, reportChunkOperation, ownChunk(run, '0001', first.claimToken, 1, 2, 2));
    const second = await claimed(t, resumed.runId, '0002');
    const last = await perform(t.db, reportChunkOperation, ownChunk(run, '0002', second.claimToken, 0, 1, 5));
    expect(last).toMatchObject({ runStatus: 'EXTRACTED_VALIDATED', validationScheduled: true });

    expect(await runRow(resumed.runId)).toMatchObject({
      status: 'EXTRACTED_VALIDATED',
      source_count: 14,
      extracted_count: 14,
      success_partition_count: 4,
    });
    const { rows: dispatches } = await t.sql.query(
      `SELECT dispatch_type, status FROM nifi_ops.load_dispatch WHERE run_id = $1 ORDER BY dispatch_type, partition_id`,
      [resumed.runId],
    );
    // the claims acknowledged the reissue calls; completion wrote the one VALIDATE_RUN call
    expect(dispatches).toEqual([
      { dispatch_type: 'REISSUE_PARTITION', status: 'ACKED' },
      { dispatch_type: 'REISSUE_PARTITION', status: 'ACKED' },
      { dispatch_type: 'VALIDATE_RUN', status: 'PENDING' },
    ]);
    // one PARTITION_SUCCESS per partition extracted by this attempt; the carried ones' are the failed run's
    const { rows } = await t.sql.query(
      `SELECT partition_id FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PARTITION_SUCCESS' ORDER BY partition_id`,
      [resumed.runId],
    );
    expect(rows.map((r) => r.partition_id)).toEqual(['0001', '0002']);
    // the failed run's ledger is as it was left
    expect(await runRow(failed.runId)).toMatchObject({ status: 'FAILED_EXTRACT', success_partition_count: 2, extracted_count: 5 });
  });

  it('carries a partition from the run that extracted it when a resumed run is resumed again', async () => {
    const failed = await failedExtract([3, 4, 5], ['0000']);
    const second = await resume(failed.runId);
    const claim = await claimed(t, second.runId, '0002');
    await perform(t.db, reportChunkOperation, ownChunk(asRun(second, failed.businessKey), '0002', claim.claimToken, 0, 1, 5));
    const retry = await claimed(t, second.runId, '0001');
    await partitionFailed(t, second.runId, retry.claimToken, { partitionId: '0001', errorCode: 'ORA-03113' });
    const third = await resume(second.runId);
    expect(third.carriedPartitions).toBe(2);
    expect((await partitionsOf(third.runId)).map((p) => [p.partition_id, p.status, p.carried_from_run_id])).toEqual([
      ['0000', 'SUCCESS', failed.runId],
      ['0001', 'RETRY', null],
      ['0002', 'SUCCESS', second.runId],
    ]);
    expect(await runRow(third.runId)).toMatchObject({
      hdfs_run_path: failed.hdfsRunPath,
      extracted_count: 8,
      retry_of_run_id: second.runId,
    });
  });

  it('resumes a run that timed out or was cancelled while extracting', async () => {
    const extracting = await startedRun(t, [3, 4]);
    await cancelled(t, extracting.runId);
    expect(await resume(extracting.runId)).toMatchObject({ status: 'EXTRACTING', carriedPartitions: 0, reissuedPartitions: 2 });
  });

  it('leaves a resumed run out of cleanup: its last attempt works in the same HDFS run path', async () => {
    const jobKey = unique('RESUME_CLEANUP').toUpperCase();
    const failed = await failedExtract([3, 4], ['0000'], { jobKey });
    const due = { successRetention: 1, failedRetention: 1 };
    const candidates = async () => {
      // ended a minute ago, past the retention of 1 ms
      await t.sql.query(`UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '1 minute' WHERE job_key = $1`, [jobKey]);
      return cleanupCandidates(t.db.prisma, { jobKey, limit: 100, retention: due, maxBatch: 100 });
    };
    expect((await candidates()).map((c) => c.runId)).toContain(failed.runId);
    const resumed = await resume(failed.runId);
    await cancelled(t, resumed.runId);
    const after = (await candidates()).map((c) => c.runId);
    expect(after).toContain(resumed.runId);
    expect(after).not.toContain(failed.runId);
  });
});

describe('resumeRun refusals', () => {
  it('refuses an unknown run with 404 RUN_NOT_FOUND', async () => {
    const error = await refusal(resume(randomUUID()));
    expect([error.httpStatus, error.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });

  it('refuses a run that is active, succeeded, or failed where a resume keeps nothing, with 409 RUN_NOT_RESUMABLE and the reason', async () => {
    const cases: Array<[string, () => Promise<DomainRun>, string, string]> = [
      ['active', () => startedRun(t, [3]), 'EXTRACTING', 'STATUS'],
      [
        'no manifest',
        async () => {
          const run = await createdRun(t);
          await failedRun(t, run.runId);
          return run;
        },
        'FAILED_MANIFEST',
        'STATUS',
      ],
      [
        'snapshot expired',
        async () => {
          const run = await startedRun(t, [3, 4]);
          const { claimToken } = await claimed(t, run.runId, '0000');
          await partitionFailed(t, run.runId, claimToken, { errorCode: 'ORA-01555' });
          return run;
        },
        'FAILED_SNAPSHOT_EXPIRED',
        'STATUS',
      ],
      [
        'cancelled before its manifest',
        async () => {
          const run = await createdRun(t);
          await cancelled(t, run.runId);
          return run;
        },
        'CANCELLED',
        'NO_MANIFEST',
      ],
      [
        'cancelled once extracted',
        async () => {
          const run = await extractedRun(t);
          await cancelled(t, run.runId);
          return run;
        },
        'CANCELLED',
        'EXTRACTION_COMPLETED',
      ],
      [
        'planned without an SCN',
        async () => {
          const run = await createdRun(t);
          await perform(t.db, registerManifestOperation, { ...manifestCommand(run.runId, [3]), snapshotScn: null });
          await cancelled(t, run.runId);
          return run;
        },
        'CANCELLED',
        'NO_SNAPSHOT',
      ],
    ];
    for (const [name, make, runStatus, reason] of cases) {
      const run = await make();
      const error = await refusal(resume(run.runId));
      expect([name, error.httpStatus, error.code, error.details]).toEqual([
        name,
        409,
        'RUN_NOT_RESUMABLE',
        { runStatus, reason, resumableStatuses: ['FAILED_EXTRACT', 'TIMED_OUT', 'CANCELLED'] },
      ]);
      const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE retry_of_run_id = $1', [run.runId]);
      expect(rows[0].n).toBe(0);
    }
  });

  it('refuses with 409 NEWER_ATTEMPT_EXISTS when the key has a newer run, or the run was resumed already', async () => {
    const failed = await failedExtract([3, 4], ['0000']);
    const resumed = await resume(failed.runId);
    const again = await refusal(resume(failed.runId));
    expect([again.httpStatus, again.code, again.details]).toEqual([
      409,
      'NEWER_ATTEMPT_EXISTS',
      { jobKey: JOB, businessKey: failed.businessKey, newerRunId: resumed.runId, newerRunStatus: 'EXTRACTING' },
    ]);

    const older = await failedExtract([3, 4], ['0000']);
    await cancelled(t, (await createdRun(t, { businessKey: older.businessKey })).runId);
    const newer = await refusal(resume(older.runId));
    expect([newer.code, newer.details?.newerRunStatus]).toEqual(['NEWER_ATTEMPT_EXISTS', 'CANCELLED']);
  });

  it('refuses with 409 SNAPSHOT_BEYOND_HORIZON once the run is older than the job’s horizon', async () => {
    const failed = await failedExtract([3, 4], ['0000']);
    await t.sql.query(`UPDATE nifi_ops.load_run SET started_at = started_at - interval '2 hours' WHERE run_id = $1`, [failed.runId]);
    const error = await refusal(resume(failed.runId));
    expect([error.httpStatus, error.code]).toEqual([409, 'SNAPSHOT_BEYOND_HORIZON']);
    expect(error.details).toMatchObject({ snapshotScn: expect.any(String), snapshotHorizonSeconds: 3600 });
    expect(Date.parse(String(error.details?.horizonEndedAt))).toBeLessThan(Date.now());
    // the job's own horizon wins over the default
    const longer = await resume(failed.runId, { snapshotHorizon: HOUR, snapshotHorizonByJob: { [JOB]: 3 * HOUR } });
    expect(longer.status).toBe('EXTRACTING');
  });

  it('refuses a gated job while its gate is not ready, as createRun does, and creates nothing', async () => {
    const D = '2026-10-23';
    const jobKey = unique('RESUME_GATED').toUpperCase();
    const consumer = unique('resume_gate');
    const upstream = unique('dim_customer');
    await gateDefined(t, consumer, [upstream], { boundJobKey: jobKey });
    await observed(t, { jobId: upstream, businessDate: D, state: 'SUCCEEDED' });
    const failed = await failedExtract([3, 4], ['0000'], { jobKey, businessKey: D });
    await observed(t, { jobId: upstream, businessDate: D, attempt: 2, state: 'FAILED' });
    const error = await refusal(resume(failed.runId));
    expect([error.httpStatus, error.code]).toEqual([409, 'DEPENDENCIES_NOT_READY']);
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1', [jobKey]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a paused job with 409 JOB_PAUSED, as createRun does, creates nothing, and resumes once the job is', async () => {
    const jobKey = unique('RESUME_PAUSED').toUpperCase();
    const failed = await failedExtract([3, 4], ['0000'], { jobKey });
    await perform(t.db, pauseJobOperation, { jobKey, reason: 'maintenance window', actor: OPERATOR });
    const error = await refusal(resume(failed.runId));
    expect([error.httpStatus, error.code]).toEqual([409, 'JOB_PAUSED']);
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE job_key = $1', [jobKey]);
    expect(rows[0].n).toBe(1);
    await perform(t.db, resumeJobOperation, { jobKey, reason: 'maintenance is over', actor: OPERATOR });
    expect((await resume(failed.runId)).status).toBe('EXTRACTING');
  });
});
