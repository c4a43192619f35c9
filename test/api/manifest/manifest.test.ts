import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun, manifestInput, partitionsFor } from '../../support/fixtures.js';

/** registerManifest with the plan it answers (the kit's call selects less: PG-10 splits its own copy). */
const REGISTER_MANIFEST = `mutation($input: RegisterManifestInput!) {
  registerManifest(input: $input) {
    runId status emptyPartitionCount validationScheduled
    dispatchPartitions { partitionId lowerBound upperBound upperInclusive isNullPartition expectedRowCount } } }`;

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function runRow(runId: string) {
  const { rows } = await api.sql.query(
    `SELECT status, source_count::text, expected_partition_count, success_partition_count, snapshot_scn::text,
            error_code, error_message, completed_at FROM nifi_ops.load_run WHERE run_id = $1`,
    [runId],
  );
  return rows[0];
}

async function partitionCount(runId: string): Promise<number> {
  const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_partition WHERE run_id = $1', [runId]);
  return rows[0].n;
}

/** 8 partitions of 15,000 rows with partition 0002 empty: the reference's verification run (105,000 rows). */
const REFERENCE_COUNTS = [15000, 15000, 0, 15000, 15000, 15000, 15000, 15000];

describe('registerManifest', () => {
  it('registers the plan: EXTRACTING, empty partitions SUCCESS and not dispatched, source metrics stored', async () => {
    const run = await createRun(api);
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, REFERENCE_COUNTS) });
    expect(res.status).toBe(200);
    const payload = res.body.data!.registerManifest;
    expect(payload.status).toBe('EXTRACTING');
    expect(payload.emptyPartitionCount).toBe(1);
    expect(payload.validationScheduled).toBe(false);
    expect(payload.dispatchPartitions.map((p: { partitionId: string }) => p.partitionId)).toEqual([
      '0000',
      '0001',
      '0003',
      '0004',
      '0005',
      '0006',
      '0007',
    ]);
    expect(payload.dispatchPartitions[0]).toEqual({
      partitionId: '0000',
      lowerBound: '1',
      upperBound: '1001',
      upperInclusive: false,
      isNullPartition: false,
      expectedRowCount: 15000,
    });
    expect(await runRow(run.runId)).toMatchObject({
      status: 'EXTRACTING',
      source_count: '105000',
      expected_partition_count: 8,
      success_partition_count: 1,
      snapshot_scn: '1234567890',
    });
    const { rows: empty } = await api.sql.query(
      `SELECT status, actual_row_count::int, file_count, completed_at FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0002'`,
      [run.runId],
    );
    expect(empty[0]).toMatchObject({ status: 'SUCCESS', actual_row_count: 0, file_count: 0 });
    const { rows: metrics } = await api.sql.query(
      `SELECT metric_name, actual_value, result, query_version FROM nifi_ops.load_validation WHERE run_id = $1 ORDER BY metric_name`,
      [run.runId],
    );
    expect(metrics).toEqual([
      { metric_name: 'AMOUNT_SUM', actual_value: '123.45', result: 'PASS', query_version: 'v1' },
      { metric_name: 'SOURCE_COUNT', actual_value: '105000', result: 'PASS', query_version: 'v1' },
    ]);
    const { rows: events } = await api.sql.query(
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
    const run = await createRun(api);
    const input = manifestInput(run.runId, [3, 0, 4]);
    const first = await api.gql(REGISTER_MANIFEST, { input });
    const replay = await api.gql(REGISTER_MANIFEST, { input });
    expect(replay.status).toBe(200);
    expect(replay.body.data!.registerManifest).toEqual(first.body.data!.registerManifest);
    expect(await partitionCount(run.runId)).toBe(3);
  });

  it('accepts numeric (not string) bounds and counts', async () => {
    const run = await createRun(api);
    const input = manifestInput(run.runId, [5, 6]);
    const partitions = (input.partitions as Array<Record<string, unknown>>).map((p) => ({
      ...p,
      lowerBound: Number(p.lowerBound),
      upperBound: Number(p.upperBound),
      expectedRowCount: Number(p.expectedRowCount),
    }));
    const res = await api.gql(REGISTER_MANIFEST, { input: { ...input, partitions, sourceCount: 11, plannedPartitionCount: 2 } });
    expect(res.body.data!.registerManifest.status).toBe('EXTRACTING');
  });

  it('accepts a NULL partition matching sourceNullSplitCount and dispatches it', async () => {
    const run = await createRun(api);
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, [3, 4], { nullCount: 5 }) });
    const ids = res.body.data!.registerManifest.dispatchPartitions.map((p: { partitionId: string }) => p.partitionId);
    expect(ids).toEqual(['0000', '0001', 'NULL']);
  });

  it('completes extraction at once for an allowed all-empty manifest, with one VALIDATE_RUN dispatch', async () => {
    const run = await createRun(api, { allowEmptySource: true });
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, [0, 0]) });
    expect(res.body.data!.registerManifest).toMatchObject({
      status: 'EXTRACTED_VALIDATED',
      validationScheduled: true,
      dispatchPartitions: [],
      emptyPartitionCount: 2,
    });
    const { rows } = await api.sql.query(`SELECT dispatch_type, status FROM nifi_ops.load_dispatch WHERE run_id = $1`, [run.runId]);
    expect(rows).toEqual([{ dispatch_type: 'VALIDATE_RUN', status: 'PENDING' }]);
  });

  const invalid = (mutate: (input: Record<string, any>) => void, counts = [3, 4], options: { nullCount?: number } = {}) => {
    return (runId: string) => {
      const input = manifestInput(runId, counts, options) as Record<string, any>;
      mutate(input);
      return input;
    };
  };

  it.each([
    [
      'DUPLICATE_PARTITION_ID',
      invalid((i) => {
        i.partitions[1].partitionId = '0000';
      }),
    ],
    [
      'PARTITION_COUNT_MISMATCH planned=3 actual=2',
      invalid((i) => {
        i.plannedPartitionCount = '3';
      }),
    ],
    [
      'EXPECTED_SUM_MISMATCH sum=7 source=8',
      invalid((i) => {
        i.sourceCount = '8';
      }),
    ],
    ['EMPTY_SOURCE_BLOCKED', invalid(() => undefined, [0, 0])],
    [
      'MULTIPLE_NULL_PARTITIONS',
      invalid(
        (i) => {
          i.partitions.push({ ...i.partitions[2], partitionId: 'NULL' });
          i.plannedPartitionCount = '4';
        },
        [3, 4],
        { nullCount: 0 },
      ),
    ],
    [
      'INVALID_NULL_PARTITION NULL',
      invalid(
        (i) => {
          i.partitions[2].lowerBound = '5';
        },
        [3, 4],
        { nullCount: 2 },
      ),
    ],
    [
      'NULL_COUNT_MISMATCH expected=2 source=3',
      invalid(
        (i) => {
          i.sourceNullSplitCount = '3';
          i.sourceCount = '9';
        },
        [3, 4],
        { nullCount: 2 },
      ),
    ],
    [
      'NULL_ROWS_WITHOUT_NULL_PARTITION',
      invalid((i) => {
        i.sourceNullSplitCount = '1';
      }),
    ],
    [
      'INVALID_BOUNDS 0000',
      invalid((i) => {
        i.partitions[0].lowerBound = '5000';
      }),
    ],
    [
      'INVALID_BOUNDS 0001',
      invalid((i) => {
        i.partitions[1].upperBound = null;
      }),
    ],
    [
      'UPPER_INCLUSIVE_INVALID 0001',
      invalid((i) => {
        i.partitions[1].upperInclusive = false;
      }),
    ],
    [
      'RANGE_GAP_OR_OVERLAP 0000->0001',
      invalid((i) => {
        i.partitions[1].lowerBound = '1002';
      }),
    ],
    [
      'MIN_SPLIT_MISMATCH',
      invalid((i) => {
        i.sourceMinSplit = '0';
      }),
    ],
    [
      'MAX_SPLIT_MISMATCH',
      invalid((i) => {
        i.sourceMaxSplit = '9999';
      }),
    ],
  ])('commits FAILED_MANIFEST and answers 422 MANIFEST_INVALID naming %s', async (violation, build) => {
    const run = await createRun(api);
    const res = await api.gql(REGISTER_MANIFEST, { input: build(run.runId) });
    expect(res.status).toBe(422);
    expect(res.code).toBe('MANIFEST_INVALID');
    expect(res.headers.get('x-error-code')).toBe('MANIFEST_INVALID');
    expect(res.details!.violations).toContain(violation);
    expect(res.body.errors![0]!.message).toContain(violation);
    const row = await runRow(run.runId);
    expect(row).toMatchObject({ status: 'FAILED_MANIFEST', error_code: 'MANIFEST_INVALID' });
    expect(row.error_message).toContain(violation);
    expect(row.completed_at).toBeInstanceOf(Date);
    expect(await partitionCount(run.runId)).toBe(0);
    const { rows } = await api.sql.query(
      `SELECT event_name FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'MANIFEST_INVALID'`,
      [run.runId],
    );
    expect(rows).toHaveLength(1);
  });

  it('refuses a different plan after registration with 409 RUN_STATUS_MISMATCH (whole plan compared)', async () => {
    const run = await createRun(api);
    const input = manifestInput(run.runId, [3, 4]) as Record<string, any>;
    await api.gql(REGISTER_MANIFEST, { input });
    const otherIds = { ...input, partitions: partitionsFor([3, 4]).map((p, i) => ({ ...p, partitionId: `000${i + 5}` })) };
    const sameIdsOtherBounds = structuredClone(input);
    sameIdsOtherBounds.partitions[0].upperBound = '1000';
    sameIdsOtherBounds.partitions[1].lowerBound = '1000';
    const otherScn = { ...input, snapshotScn: '1' };
    const otherMetrics = { ...input, sourceMetrics: { AMOUNT_SUM: '999' } };
    for (const changed of [otherIds, sameIdsOtherBounds, otherScn, otherMetrics]) {
      const res = await api.gql(REGISTER_MANIFEST, { input: changed });
      expect(res.status).toBe(409);
      expect(res.code).toBe('RUN_STATUS_MISMATCH');
      expect(res.details).toEqual({ runStatus: 'EXTRACTING' });
    }
  });

  it('answers a manifest for a FAILED_MANIFEST run with 409 RUN_STATUS_MISMATCH', async () => {
    const run = await createRun(api);
    await api.gql(REGISTER_MANIFEST, { input: { ...manifestInput(run.runId, [3, 4]), sourceCount: '1' } });
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, [3, 4]) });
    expect(res.status).toBe(409);
    expect(res.details).toEqual({ runStatus: 'FAILED_MANIFEST' });
  });

  it('answers 404 RUN_NOT_FOUND for an unknown run', async () => {
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(randomUUID(), [3]) });
    expect(res.status).toBe(404);
    expect(res.code).toBe('RUN_NOT_FOUND');
  });

  it.each([
    [
      'partitions.0.partitionId',
      (i: Record<string, any>) => {
        i.partitions[0].partitionId = 'abc';
      },
    ],
    [
      'snapshotScn',
      (i: Record<string, any>) => {
        i.snapshotScn = '1'.repeat(39);
      },
    ],
    [
      'plannedPartitionCount',
      (i: Record<string, any>) => {
        i.plannedPartitionCount = '10001';
      },
    ],
    [
      'sourceMetricsVersion',
      (i: Record<string, any>) => {
        i.sourceMetricsVersion = 'v'.repeat(51);
      },
    ],
    [
      'sourceMetrics',
      (i: Record<string, any>) => {
        i.sourceMetrics = { ['M'.repeat(151)]: '1' };
      },
    ],
    [
      'sourceMetrics',
      (i: Record<string, any>) => {
        i.sourceMetrics = Object.fromEntries(Array.from({ length: 201 }, (_, n) => [`M${n}`, '1']));
      },
    ],
    [
      'sourceCount',
      (i: Record<string, any>) => {
        i.sourceCount = '-1';
      },
    ],
    [
      'partitions',
      (i: Record<string, any>) => {
        i.partitions = [];
      },
    ],
  ])('refuses malformed %s with 422 INVALID_INPUT before touching the run', async (_field, mutate) => {
    const run = await createRun(api);
    const input = manifestInput(run.runId, [3, 4]) as Record<string, any>;
    mutate(input);
    const res = await api.gql(REGISTER_MANIFEST, { input });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect((await runRow(run.runId)).status).toBe('CREATED');
  });

  it('registers a plan of 10,000 partitions', async () => {
    const run = await createRun(api);
    const counts = Array.from({ length: 10_000 }, () => 2);
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, counts) });
    expect(res.status).toBe(200);
    expect(res.body.data!.registerManifest.dispatchPartitions).toHaveLength(10_000);
    expect(await partitionCount(run.runId)).toBe(10_000);
  });
});
