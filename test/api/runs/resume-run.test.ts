// resumeRun over HTTP: roles, input parsing, the contract's statuses and codes, the run query's view of a
// resumed run — and the bar end to end: a run failed on 3 of 50 partitions, resumed; the worker's
// REISSUE_PARTITION calls reach a receiver acting as PG-05 → PG-20, which claims and reports exactly those 3;
// the run reaches SUCCESS with extracted = source and every chunk counted once. The rules and races are domain
// tests (test/domain/runs/resume-run*.test.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import {
  CLAIM,
  CLAIM_PUBLISH,
  FAIL_PARTITION,
  MARK_STAGE_VALIDATED,
  MARK_SUCCESS,
  REPORT,
  REPORT_PUBLISH_RESULT,
  RESUME_RUN,
  START_VALIDATION,
  claim,
  metric,
  recordMetrics,
  report,
  startRun,
  toFailedExtract,
} from '../../support/fixtures.js';
import { ledgerViolations } from '../../support/ledger-invariants.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { until } from '../../support/until.js';
import { testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';

let api: TestApi;
let receiver: Receiver;
let worker: TestWorkerParts;
beforeAll(async () => {
  api = await startTestApi({ resume: { snapshotHorizon: 3_600_000, snapshotHorizonByJob: {} } });
  receiver = await startReceiver();
  worker = testWorker(api, workerConfig(api, receiver));
});
afterAll(async () => {
  await worker?.close();
  await receiver?.close();
  await api?.close();
});

const REASON = 'ORA-03113 on 0001, the source is back';
const resume = (runId: string, reason = REASON, token: TokenName | null = 'operator') =>
  api.gql<{ resumeRun: Record<string, unknown> }>(RESUME_RUN, { input: { runId, reason } }, { token });

const RESUMED_RUN = `query($runId: UUID!) { run(runId: $runId) {
  status resumedFromRunId resumedAsRunId hdfsRunPath snapshotScn extractedCount successPartitionCount
  tags { key value } flowVersion
  partitions { partitionId status carriedFromRunId }
} }`;

async function attempts(runId: string): Promise<number> {
  const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE retry_of_run_id = $1', [runId]);
  return rows[0].n;
}

describe('resumeRun over HTTP', () => {
  it('needs the operator role and a reason, refuses malformed input with 422, and changes nothing then', async () => {
    const failed = await toFailedExtract(api);
    for (const token of ['nifi', 'viewer'] as const) {
      const refused = await resume(failed.runId, REASON, token);
      expect([refused.status, refused.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect((await resume(failed.runId, REASON, null)).status).toBe(401);
    const short = await resume(failed.runId, 'x');
    expect([short.status, short.code, short.details]).toEqual([422, 'INVALID_INPUT', expect.objectContaining({ field: 'input.reason' })]);
    const notUuid = await resume('not-a-run');
    expect(notUuid.status).toBe(422);
    expect(await attempts(failed.runId)).toBe(0);
  });

  it('answers the new attempt, and the run query shows where it came from and which partitions were carried', async () => {
    const failed = await toFailedExtract(api);
    const res = await resume(failed.runId);
    expect(res.status).toBe(200);
    const resumed = res.body.data!.resumeRun;
    expect(resumed).toEqual({
      runId: expect.any(String),
      status: 'EXTRACTING',
      resumedFromRunId: failed.runId,
      hdfsRunPath: failed.hdfsRunPath,
      stageTable: `tmp_insp_dtl_${String(resumed.runId).replaceAll('-', '')}`,
      carriedPartitions: 1,
      reissuedPartitions: 2,
    });
    const view = await api.gql(RESUMED_RUN, { runId: resumed.runId }, { token: 'viewer' });
    expect(view.body.data!.run).toMatchObject({
      status: 'EXTRACTING',
      resumedFromRunId: failed.runId,
      resumedAsRunId: null,
      hdfsRunPath: failed.hdfsRunPath,
      extractedCount: 3,
      successPartitionCount: 1,
      partitions: [
        { partitionId: '0000', status: 'SUCCESS', carriedFromRunId: failed.runId },
        { partitionId: '0001', status: 'RETRY', carriedFromRunId: null },
        { partitionId: '0002', status: 'RETRY', carriedFromRunId: null },
      ],
    });
    const old = await api.gql(RESUMED_RUN, { runId: failed.runId }, { token: 'viewer' });
    expect(old.body.data!.run).toMatchObject({ status: 'FAILED_EXTRACT', resumedAsRunId: resumed.runId, resumedFromRunId: null });
  });

  it('answers the refusals with their statuses, codes and X-Error-Code', async () => {
    const unknown = await resume(randomUUID());
    expect([unknown.status, unknown.code]).toEqual([404, 'RUN_NOT_FOUND']);

    const active = await startRun(api, [3]);
    const notFailed = await resume(active.runId);
    expect([notFailed.status, notFailed.code, notFailed.headers.get('x-error-code')]).toEqual([
      409,
      'RUN_NOT_RESUMABLE',
      'RUN_NOT_RESUMABLE',
    ]);
    expect(notFailed.details).toMatchObject({ runStatus: 'EXTRACTING', reason: 'STATUS' });

    const failed = await toFailedExtract(api);
    const first = await resume(failed.runId);
    const again = await resume(failed.runId);
    expect([again.status, again.code, again.details?.newerRunId]).toEqual([409, 'NEWER_ATTEMPT_EXISTS', first.body.data!.resumeRun.runId]);

    const old = await toFailedExtract(api);
    await api.sql.query(`UPDATE nifi_ops.load_run SET started_at = started_at - interval '61 minutes' WHERE run_id = $1`, [old.runId]);
    const beyond = await resume(old.runId);
    expect([beyond.status, beyond.code, beyond.details?.snapshotHorizonSeconds]).toEqual([409, 'SNAPSHOT_BEYOND_HORIZON', 3600]);
    expect(await attempts(old.runId)).toBe(0);
  });
});

describe('a run failed on 3 of 50 partitions, resumed', () => {
  it('claims exactly those 3 again through the reissue calls and reaches SUCCESS with extracted = source, each chunk counted once', async () => {
    const counts = Array.from({ length: 50 }, (_, i) => 10 + i);
    const source = counts.reduce((a, b) => a + b, 0);
    const run = await startRun(api, counts);
    const pid = (i: number) => String(i).padStart(4, '0');
    for (let i = 0; i < 47; i++) {
      const owner = await claim(api, run.runId, pid(i));
      const chunk = { runId: run.runId, partitionId: pid(i), claimToken: owner.claimToken, chunkCount: '1', fragmentIdentifier: `f-${i}` };
      const r = await report(api, {
        ...chunk,
        chunkIndex: '0',
        hdfsPath: `${run.hdfsRunPath}/part-${pid(i)}-${owner.claimToken.slice(0, 8)}-00000.parquet`,
        recordCount: String(counts[i]),
        byteCount: '100',
      });
      expect(r.body.errors).toBeUndefined();
    }
    const failing = await claim(api, run.runId, pid(47));
    await api.gql(FAIL_PARTITION, {
      input: {
        runId: run.runId,
        partitionId: pid(47),
        claimToken: failing.claimToken,
        errorStage: 'EXTRACT',
        errorClass: 'SQL',
        errorCode: 'ORA-03113',
        message: 'lost',
      },
    });

    const resumed = (await resume(run.runId)).body.data!.resumeRun as {
      runId: string;
      carriedPartitions: number;
      reissuedPartitions: number;
    };
    expect([resumed.carriedPartitions, resumed.reissuedPartitions]).toEqual([47, 3]);

    // the receiver does what PG-05 → PG-20 does with a reissue call: claim the partition, extract at the SCN into
    // the run path it was given, two chunks, report each
    const claimed: string[] = [];
    const calls: Array<Record<string, string | undefined>> = [];
    receiver.onCall(async (call) => {
      const body = call.body as Record<string, string>;
      // the earlier tests' resumed runs have reissue calls of their own
      if (body.runId !== resumed.runId) return;
      calls.push({ path: call.path, hdfsRunPath: body.hdfsRunPath, snapshotScn: body.snapshotScn });
      const claimToken = randomUUID();
      const answer = await api.gql(CLAIM, {
        input: { runId: body.runId, partitionId: body.partitionId, claimToken, workerNode: 'nifi-02' },
      });
      if (answer.body.data?.claimPartition.claimed !== true) return;
      claimed.push(body.partitionId!);
      const rows = Number(body.expectedRowCount);
      for (const [chunkIndex, recordCount] of [Math.floor(rows / 2), rows - Math.floor(rows / 2)].entries()) {
        const r = await api.gql(REPORT, {
          input: {
            runId: body.runId,
            partitionId: body.partitionId,
            claimToken,
            chunkIndex: String(chunkIndex),
            chunkCount: '2',
            fragmentIdentifier: `re-${body.partitionId}`,
            hdfsPath: `${body.hdfsRunPath}/part-${body.partitionId}-${claimToken.slice(0, 8)}-${chunkIndex}.parquet`,
            recordCount: String(recordCount),
            byteCount: '50',
          },
        });
        expect(r.body.errors).toBeUndefined();
      }
    });
    await worker.dispatcher.dispatchOnce();
    await until('the three reissued partitions are extracted', () => claimed.length === 3, 10_000);
    receiver.onCall(undefined);
    expect(claimed.sort()).toEqual([pid(47), pid(48), pid(49)]);
    const { rows: scn } = await api.sql.query('SELECT snapshot_scn::text FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    expect(calls).toEqual(
      Array(3).fill({
        path: '/nifi-control/reissue/ORACLE_INSP_DTL_DAILY',
        hdfsRunPath: run.hdfsRunPath,
        snapshotScn: scn[0].snapshot_scn,
      }),
    );

    const { rows: validate } = await api.sql.query(
      `SELECT d.dispatch_id::text, r.status, r.extracted_count::int, r.source_count::int, r.success_partition_count
         FROM nifi_ops.load_run r JOIN nifi_ops.load_dispatch d USING (run_id) WHERE run_id = $1 AND dispatch_type = 'VALIDATE_RUN'`,
      [resumed.runId],
    );
    expect(validate[0]).toMatchObject({
      status: 'EXTRACTED_VALIDATED',
      extracted_count: source,
      source_count: source,
      success_partition_count: 50,
    });
    const started = await api.gql(START_VALIDATION, {
      input: { runId: resumed.runId, dispatchId: validate[0].dispatch_id, node: 'nifi-01' },
    });
    expect(started.body.data?.startValidation).toMatchObject({ started: true, hdfsRunPath: run.hdfsRunPath, extractedCount: source });
    await recordMetrics(api, resumed.runId, 'STAGING', [metric('STAGE_COUNT', 'PASS', String(source))]);
    expect((await api.gql(MARK_STAGE_VALIDATED, { input: { runId: resumed.runId } })).body.data?.markStageValidated.stageValidated).toBe(
      true,
    );
    const publishToken = randomUUID();
    await api.gql(CLAIM_PUBLISH, { input: { runId: resumed.runId, publishToken } });
    await api.gql(REPORT_PUBLISH_RESULT, { input: { runId: resumed.runId, publishToken, outcome: 'PUBLISHED' } });
    await recordMetrics(api, resumed.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', String(source))]);
    const success = await api.gql(MARK_SUCCESS, { input: { runId: resumed.runId, targetCount: String(source) } });
    expect(success.body.data?.markSuccess).toMatchObject({ success: true, runStatus: 'SUCCESS' });

    // every chunk counted once: the partitions' rows add up to the source, the new attempt's files are the
    // 3 partitions' 6 chunks, and only they were claimed in it
    const { rows: ledger } = await api.sql.query(
      `SELECT (SELECT sum(actual_row_count)::int FROM nifi_ops.load_partition WHERE run_id = $1) AS partition_rows,
              (SELECT count(*)::int FROM nifi_ops.load_file WHERE run_id = $1) AS files,
              (SELECT sum(record_count)::int FROM nifi_ops.load_file WHERE run_id = $1) AS file_rows,
              (SELECT count(*)::int FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PARTITION_STARTED') AS claims,
              (SELECT count(*)::int FROM nifi_ops.load_partition WHERE run_id = $1 AND carried_from_run_id = $2) AS carried`,
      [resumed.runId, run.runId],
    );
    expect(ledger[0]).toEqual({
      partition_rows: source,
      files: 6,
      file_rows: counts[47]! + counts[48]! + counts[49]!,
      claims: 3,
      carried: 47,
    });
    // and the ledger tells one consistent story (test/support/ledger-invariants.ts), both attempts included
    expect(await ledgerViolations(api.sql)).toEqual([]);
  });
});
