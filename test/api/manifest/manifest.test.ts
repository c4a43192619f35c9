// registerManifest over HTTP: the payload as the kit reads it, the error envelope, input parsing and the largest plan.
// The plan's rules and refusals are domain tests: test/domain/manifest/manifest.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun, manifestInput } from '../../support/fixtures.js';

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

async function runStatus(runId: string): Promise<string> {
  const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0].status;
}

async function partitionCount(runId: string): Promise<number> {
  const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_partition WHERE run_id = $1', [runId]);
  return rows[0].n;
}

/** 8 partitions of 15,000 rows with partition 0002 empty: the reference's verification run (105,000 rows). */
const REFERENCE_COUNTS = [15000, 15000, 0, 15000, 15000, 15000, 15000, 15000];

describe('registerManifest', () => {
  it('registers the plan over GraphQL: the payload carries the dispatch plan in the kit’s types', async () => {
    const run = await createRun(api);
    const res = await api.gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, REFERENCE_COUNTS) });
    expect(res.status).toBe(200);
    const payload = res.body.data!.registerManifest;
    expect(payload).toMatchObject({ runId: run.runId, status: 'EXTRACTING', emptyPartitionCount: 1, validationScheduled: false });
    expect(payload.dispatchPartitions).toHaveLength(7);
    expect(payload.dispatchPartitions[0]).toEqual({
      partitionId: '0000',
      lowerBound: '1',
      upperBound: '1001',
      upperInclusive: false,
      isNullPartition: false,
      expectedRowCount: 15000,
    });
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

  it('answers MANIFEST_INVALID with 422, its header and the violations in the envelope, after FAILED_MANIFEST committed', async () => {
    const run = await createRun(api);
    const res = await api.gql(REGISTER_MANIFEST, { input: { ...manifestInput(run.runId, [3, 4]), sourceCount: '8' } });
    const violation = 'EXPECTED_SUM_MISMATCH sum=7 source=8';
    expect(res.status).toBe(422);
    expect(res.code).toBe('MANIFEST_INVALID');
    expect(res.headers.get('x-error-code')).toBe('MANIFEST_INVALID');
    expect(res.details!.violations).toContain(violation);
    expect(res.body.errors![0]!.message).toContain(violation);
    expect(await runStatus(run.runId)).toBe('FAILED_MANIFEST');
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
    expect(await runStatus(run.runId)).toBe('CREATED');
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
