// registerManifest's rules (ref §3.2): the plan, its replay, its invariants and the refusals, performed on the
// database directly. What only HTTP shows (the payload, the envelope, input parsing) is in test/api/manifest/.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perform } from '../../../src/db/operation.js';
import { type RegisterManifestCommand, registerManifestOperation } from '../../../src/domain/manifest/register-manifest.js';
import { partitionsFor } from '../../support/fixtures.js';
import { createdRun, type DomainTest, manifestCommand, refusal, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const register = (cmd: RegisterManifestCommand) => perform(t.db, registerManifestOperation, cmd);

async function runRow(runId: string) {
  const { rows } = await t.sql.query(
    `SELECT status, source_count::text, expected_partition_count, success_partition_count, snapshot_scn::text,
            error_code, error_message, completed_at FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function partitionCount(runId: string): Promise<number> {
  const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_partition WHERE run_id = $1', [runId]);
  return rows[0].n;
}

/** 8 partitions of 15,000 rows with partition 0002 empty: the reference's verification run (105,000 rows). */
const REFERENCE_COUNTS = [15000, 15000, 0, 15000, 15000, 15000, 15000, 15000];

describe('registerManifest', () => {
  it('registers the plan: EXTRACTING, empty partitions SUCCESS and not dispatched, source metrics stored', async () => {
    const run = await createdRun(t);
    const result = await register(manifestCommand(run.runId, REFERENCE_COUNTS));
    expect(result.status).toBe('EXTRACTING');
    expect(result.emptyPartitionCount).toBe(1);
    expect(result.validationScheduled).toBe(false);
    expect(result.dispatchPartitions.map((p) => p.partitionId)).toEqual(['0000', '0001', '0003', '0004', '0005', '0006', '0007']);
    expect(result.dispatchPartitions[0]).toEqual({
      partitionId: '0000',
      lowerBound: '1',
      upperBound: '1001',
      upperInclusive: false,
      isNullPartition: false,
      expectedRowCount: 15000n,
    });
    expect(await runRow(run.runId)).toMatchObject({
      status: 'EXTRACTING',
      source_count: '105000',
      expected_partition_count: 8,
      success_partition_count: 1,
      snapshot_scn: '1234567890',
    });
    const { rows: empty } = await t.sql.query(
      `SELECT status, actual_row_count::int, file_count, completed_at FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0002'`,
      [run.runId],
    );
    expect(empty[0]).toMatchObject({ status: 'SUCCESS', actual_row_count: 0, file_count: 0 });
    const { rows: metrics } = await t.sql.query(
      `SELECT metric_name, actual_value, result, query_version FROM nifi_ops.load_validation WHERE run_id = $1 ORDER BY metric_name`,
      [run.runId],
    );
    expect(metrics).toEqual([
      { metric_name: 'AMOUNT_SUM', actual_value: '123.45', result: 'PASS', query_version: 'v1' },
      { metric_name: 'SOURCE_COUNT', actual_value: '105000', result: 'PASS', query_version: 'v1' },
    ]);
    const { rows: events } = await t.sql.query(
      `SELECT event_name, row_count::int, details FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'MANIFEST_CREATED'`,
      [run.runId],
    );
    expect(events[0]).toEqual({
      event_name: 'MANIFEST_CREATED',
      row_count: 105000,
      details: { partitions: 8, empty: 1, snapshotScn: '1234567890' },
    });
  });

  it('answers an identical replay with the stored plan and validationScheduled=false', async () => {
    const run = await createdRun(t);
    const cmd = manifestCommand(run.runId, [3, 0, 4]);
    const first = await register(cmd);
    const replay = await register(cmd);
    expect(replay).toEqual(first);
    expect(await partitionCount(run.runId)).toBe(3);
  });

  it('accepts a NULL partition matching sourceNullSplitCount and dispatches it', async () => {
    const run = await createdRun(t);
    const result = await register(manifestCommand(run.runId, [3, 4], { nullCount: 5 }));
    expect(result.dispatchPartitions.map((p) => p.partitionId)).toEqual(['0000', '0001', 'NULL']);
  });

  it('completes extraction at once for an allowed all-empty manifest, with one VALIDATE_RUN dispatch', async () => {
    const run = await createdRun(t, { allowEmptySource: true });
    expect(await register(manifestCommand(run.runId, [0, 0]))).toMatchObject({
      status: 'EXTRACTED_VALIDATED',
      validationScheduled: true,
      dispatchPartitions: [],
      emptyPartitionCount: 2,
    });
    const { rows } = await t.sql.query(`SELECT dispatch_type, status FROM nifi_ops.load_dispatch WHERE run_id = $1`, [run.runId]);
    expect(rows).toEqual([{ dispatch_type: 'VALIDATE_RUN', status: 'PENDING' }]);
  });

  const invalid = (mutate: (cmd: RegisterManifestCommand) => void, counts = [3, 4], options: { nullCount?: number } = {}) => {
    return (runId: string) => {
      const cmd = manifestCommand(runId, counts, options);
      mutate(cmd);
      return cmd;
    };
  };

  it.each([
    [
      'DUPLICATE_PARTITION_ID',
      invalid((c) => {
        c.partitions[1]!.partitionId = '0000';
      }),
    ],
    [
      'PARTITION_COUNT_MISMATCH planned=3 actual=2',
      invalid((c) => {
        c.plannedPartitionCount = 3;
      }),
    ],
    [
      'EXPECTED_SUM_MISMATCH sum=7 source=8',
      invalid((c) => {
        c.sourceCount = 8n;
      }),
    ],
    ['EMPTY_SOURCE_BLOCKED', invalid(() => undefined, [0, 0])],
    [
      'MULTIPLE_NULL_PARTITIONS',
      invalid(
        (c) => {
          c.partitions.push({ ...c.partitions[2]!, partitionId: 'NULL' });
          c.plannedPartitionCount = 4;
        },
        [3, 4],
        { nullCount: 0 },
      ),
    ],
    [
      'INVALID_NULL_PARTITION NULL',
      invalid(
        (c) => {
          c.partitions[2]!.lowerBound = '5';
        },
        [3, 4],
        { nullCount: 2 },
      ),
    ],
    [
      'NULL_COUNT_MISMATCH expected=2 source=3',
      invalid(
        (c) => {
          c.sourceNullSplitCount = 3n;
          c.sourceCount = 9n;
        },
        [3, 4],
        { nullCount: 2 },
      ),
    ],
    [
      'NULL_ROWS_WITHOUT_NULL_PARTITION',
      invalid((c) => {
        c.sourceNullSplitCount = 1n;
      }),
    ],
    [
      'INVALID_BOUNDS 0000',
      invalid((c) => {
        c.partitions[0]!.lowerBound = '5000';
      }),
    ],
    [
      'INVALID_BOUNDS 0001',
      invalid((c) => {
        c.partitions[1]!.upperBound = null;
      }),
    ],
    [
      'UPPER_INCLUSIVE_INVALID 0001',
      invalid((c) => {
        c.partitions[1]!.upperInclusive = false;
      }),
    ],
    [
      'RANGE_GAP_OR_OVERLAP 0000->0001',
      invalid((c) => {
        c.partitions[1]!.lowerBound = '1002';
      }),
    ],
    [
      'MIN_SPLIT_MISMATCH',
      invalid((c) => {
        c.sourceMinSplit = '0';
      }),
    ],
    [
      'MAX_SPLIT_MISMATCH',
      invalid((c) => {
        c.sourceMaxSplit = '9999';
      }),
    ],
  ])('commits FAILED_MANIFEST and answers 422 MANIFEST_INVALID naming %s', async (violation, build) => {
    const run = await createdRun(t);
    const error = await refusal(register(build(run.runId)));
    expect([error.httpStatus, error.code]).toEqual([422, 'MANIFEST_INVALID']);
    expect(error.details!.violations).toContain(violation);
    expect(error.message).toContain(violation);
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'FAILED_MANIFEST', error_code: 'MANIFEST_INVALID' });
    expect(row.error_message).toContain(violation);
    expect(row.completed_at).toBeInstanceOf(Date);
    expect(await partitionCount(run.runId)).toBe(0);
    const { rows } = await t.sql.query(`SELECT event_name FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'MANIFEST_INVALID'`, [
      run.runId,
    ]);
    expect(rows).toHaveLength(1);
  });

  it('refuses a different plan after registration with 409 RUN_STATUS_MISMATCH (whole plan compared)', async () => {
    const run = await createdRun(t);
    const cmd = manifestCommand(run.runId, [3, 4]);
    await register(cmd);
    const otherIds = {
      ...cmd,
      partitions: partitionsFor([3, 4]).map((p, i) => ({ ...p, partitionId: `000${i + 5}`, expectedRowCount: BigInt(p.expectedRowCount) })),
    };
    const sameIdsOtherBounds = structuredClone(cmd);
    sameIdsOtherBounds.partitions[0]!.upperBound = '1000';
    sameIdsOtherBounds.partitions[1]!.lowerBound = '1000';
    const otherScn = { ...cmd, snapshotScn: '1' };
    const otherMetrics = { ...cmd, sourceMetrics: { AMOUNT_SUM: '999' } };
    for (const changed of [otherIds, sameIdsOtherBounds, otherScn, otherMetrics]) {
      const error = await refusal(register(changed));
      expect([error.httpStatus, error.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
      expect(error.details).toEqual({ runStatus: 'EXTRACTING' });
    }
  });

  it('answers a manifest for a FAILED_MANIFEST run with 409 RUN_STATUS_MISMATCH', async () => {
    const run = await createdRun(t);
    expect((await refusal(register({ ...manifestCommand(run.runId, [3, 4]), sourceCount: 1n }))).code).toBe('MANIFEST_INVALID');
    const error = await refusal(register(manifestCommand(run.runId, [3, 4])));
    expect(error.httpStatus).toBe(409);
    expect(error.details).toEqual({ runStatus: 'FAILED_MANIFEST' });
  });

  it('answers 404 RUN_NOT_FOUND for an unknown run', async () => {
    const error = await refusal(register(manifestCommand(randomUUID(), [3])));
    expect([error.httpStatus, error.code]).toEqual([404, 'RUN_NOT_FOUND']);
  });
});
