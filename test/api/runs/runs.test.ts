// createRun and failRun over HTTP (the envelope, input parsing) and the run and runs queries. The mutations' rules
// and races are domain tests: test/domain/runs/runs.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CREATE_RUN, FAIL_RUN, HDFS_ROOT, JOB, RUN, chunkInput, claim, createRun, report, startRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const input = (overrides: Record<string, unknown> = {}) => ({
  jobKey: JOB,
  businessKey: `BK_${randomUUID().slice(0, 8)}`,
  hdfsRoot: `${HDFS_ROOT}/`,
  stageTablePrefix: 'TMP_INSP_DTL_',
  ...overrides,
});

describe('createRun', () => {
  it('answers DUPLICATE_ACTIVE_RUN with 409, its header, a null field and the details', async () => {
    const first = await createRun(api);
    const res = await api.gql(CREATE_RUN, { input: input({ businessKey: first.businessKey }) });
    expect(res.status).toBe(409);
    expect(res.headers.get('x-error-code')).toBe('DUPLICATE_ACTIVE_RUN');
    expect(res.body.data).toEqual({ createRun: null });
    expect(res.details).toEqual({ jobKey: JOB, businessKey: first.businessKey, activeRunId: first.runId });
  });

  it.each([
    ['jobKey', { jobKey: 'lower_case' }],
    ['hdfsRoot', { hdfsRoot: 'relative/path' }],
    ['stageTablePrefix', { stageTablePrefix: 'x; DROP' }],
    ['businessKey', { businessKey: 'has space' }],
    ['hdfsRoot', { hdfsRoot: `/${'a'.repeat(1200)}` }],
    ['idempotencyKey', { idempotencyKey: 'k'.repeat(201) }],
    ['jobKey', { jobKey: 'J'.repeat(201) }],
  ])('refuses a malformed %s with 422 INVALID_INPUT and writes nothing', async (field, overrides) => {
    const before = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    const res = await api.gql(CREATE_RUN, { input: input(overrides) });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(String(res.details!.field)).toBe(`input.${field}`);
    const after = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('refuses an unknown input field as a schema-level 400', async () => {
    const res = await api.gql(CREATE_RUN, { input: input({ unknownField: 1 }) });
    expect(res.status).toBe(400);
    expect(res.code).toBe('BAD_REQUEST');
  });
});

describe('failRun', () => {
  it('refuses an over-long errorStage with 422, not a database error', async () => {
    const run = await createRun(api);
    const res = await api.gql(FAIL_RUN, {
      input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'S'.repeat(81), errorCode: 'E' },
    });
    expect(res.status).toBe(422);
    expect(res.details).toMatchObject({ field: 'input.errorStage' });
  });
});

describe('run and runs queries', () => {
  it('answers 404 RUN_NOT_FOUND for an unknown run and 422 for a malformed id', async () => {
    const missing = await api.gql(RUN, { runId: randomUUID() });
    expect(missing.status).toBe(404);
    expect(missing.code).toBe('RUN_NOT_FOUND');
    const malformed = await api.gql(RUN, { runId: 'not-a-uuid' });
    expect(malformed.status).toBe(422);
    expect(malformed.code).toBe('INVALID_INPUT');
  });

  it('pages runs newest first with a cursor and filters by business key and status', async () => {
    const businessKey = `PAGE_${randomUUID().slice(0, 6)}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const run = await createRun(api, { businessKey });
      ids.push(run.runId);
      await api.gql(FAIL_RUN, {
        input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'M', errorCode: 'E' },
      });
    }
    const active = await createRun(api, { businessKey });
    const query = `query($f: RunFilter, $first: Int, $after: String) { runs(filter: $f, first: $first, after: $after) {
      nodes { runId status } pageInfo { hasNextPage endCursor } } }`;
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const res: any = await api.gql(query, { f: { businessKey }, first: 2, after });
      seen.push(...res.body.data.runs.nodes.map((n: { runId: string }) => n.runId));
      after = res.body.data.runs.pageInfo.hasNextPage ? res.body.data.runs.pageInfo.endCursor : null;
    } while (after);
    expect(seen).toEqual([active.runId, ...ids.reverse()]);
    const failed = await api.gql(query, { f: { businessKey, status: 'FAILED_MANIFEST' }, first: 10 });
    expect(failed.body.data!.runs.nodes).toHaveLength(5);
    const activeOnly = await api.gql(query, { f: { businessKey, activeOnly: true }, first: 10 });
    expect(activeOnly.body.data!.runs.nodes).toEqual([{ runId: active.runId, status: 'CREATED' }]);
    const badStatus = await api.gql(query, { f: { status: 'NOPE' } });
    expect(badStatus.status).toBe(400);
    const badFirst = await api.gql(query, { first: 501 });
    expect(badFirst.status).toBe(422);
  });

  it('searches job and business keys by substring in any case (wildcards taken literally), by start range, oldest first', async () => {
    const tag = randomUUID().slice(0, 6);
    const runs = [];
    for (const businessKey of [`Srch_${tag}_a`, `SRCH_${tag}_b`, `srch_${tag}Xc`]) {
      runs.push({ ...(await createRun(api, { businessKey })), businessKey });
    }
    const { rows } = await api.sql.query<{ started_at: Date }>('SELECT started_at FROM nifi_ops.load_run WHERE run_id = $1', [
      runs[1]!.runId,
    ]);
    const second = rows[0]!.started_at;
    const query = `query($f: RunFilter, $first: Int, $after: String, $order: RunOrder) {
      runs(filter: $f, first: $first, after: $after, order: $order) { nodes { runId } pageInfo { hasNextPage endCursor } } }`;
    const ids = async (variables: Record<string, unknown>) => {
      const res = await api.gql<{ runs: { nodes: Array<{ runId: string }> } }>(query, { first: 50, ...variables }, { token: 'viewer' });
      expect(res.status).toBe(200);
      return res.body.data!.runs.nodes.map((n) => n.runId);
    };
    const [a, b, c] = runs.map((r) => r.runId);
    expect(await ids({ f: { businessKeyContains: `srch_${tag}` } })).toEqual([c, b, a]);
    // LIKE's wildcards are plain characters here: % matches nothing, _ only an underscore
    expect(await ids({ f: { businessKeyContains: `${tag}%` } })).toEqual([]);
    expect(await ids({ f: { businessKeyContains: `${tag}_` } })).toEqual([b, a]);
    expect(await ids({ f: { businessKeyContains: tag, jobKeyContains: JOB.slice(3, 12).toLowerCase() } })).toEqual([c, b, a]);
    expect(await ids({ f: { businessKeyContains: tag, jobKeyContains: 'NO_SUCH' } })).toEqual([]);
    expect(await ids({ f: { businessKeyContains: tag, startedFrom: second.toISOString() } })).toEqual([c, b]);
    expect(await ids({ f: { businessKeyContains: tag, startedBefore: second.toISOString() } })).toEqual([a]);
    expect(await ids({ f: { businessKeyContains: tag }, order: 'OLDEST_FIRST' })).toEqual([a, b, c]);
    // oldest first, a page at a time
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const res: any = await api.gql(
        query,
        { f: { businessKeyContains: tag }, first: 2, after, order: 'OLDEST_FIRST' },
        { token: 'viewer' },
      );
      seen.push(...res.body.data.runs.nodes.map((n: { runId: string }) => n.runId));
      after = res.body.data.runs.pageInfo.hasNextPage ? res.body.data.runs.pageInfo.endCursor : null;
    } while (after);
    expect(seen).toEqual([a, b, c]);
    const badFrom = await api.gql(query, { f: { startedFrom: 'yesterday' } }, { token: 'viewer' });
    expect([badFrom.status, badFrom.code]).toEqual([422, 'INVALID_INPUT']);
    const longSearch = await api.gql(query, { f: { jobKeyContains: 'x'.repeat(201) } }, { token: 'viewer' });
    expect([longSearch.status, longSearch.code]).toEqual([422, 'INVALID_INPUT']);
  });

  it('pages runs started within the same millisecond once each, in either order', async () => {
    const businessKey = `SAME_MS_${randomUUID().slice(0, 6)}`;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const run = await createRun(api, { businessKey });
      await api.gql(FAIL_RUN, {
        input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'M', errorCode: 'E' },
      });
      ids.push(run.runId);
    }
    // microseconds apart, one millisecond: what a JavaScript Date cannot tell apart
    await api.sql.query(
      `UPDATE nifi_ops.load_run r SET started_at = '2026-11-30T10:00:00.123000Z'::timestamptz + (o.n * interval '100 microseconds')
         FROM unnest($1::uuid[]) WITH ORDINALITY AS o(run_id, n) WHERE r.run_id = o.run_id`,
      [ids],
    );
    const query = `query($f: RunFilter, $after: String, $order: RunOrder) { runs(filter: $f, first: 1, after: $after, order: $order) {
      nodes { runId } pageInfo { hasNextPage endCursor } } }`;
    for (const [order, expected] of [
      ['NEWEST_FIRST', [...ids].reverse()],
      ['OLDEST_FIRST', ids],
    ] as const) {
      const seen: string[] = [];
      let after: string | null = null;
      do {
        const res: any = await api.gql(query, { f: { businessKey }, after, order }, { token: 'viewer' });
        seen.push(...res.body.data.runs.nodes.map((n: { runId: string }) => n.runId));
        after = res.body.data.runs.pageInfo.hasNextPage ? res.body.data.runs.pageInfo.endCursor : null;
      } while (after);
      expect(seen, order).toEqual(expected);
    }
  });

  it('answers every partition of a run larger than a read page (1,000) and a list slice (250), in partition order', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 1_203 }, () => 1),
    );
    const { claimToken } = await claim(api, run.runId, '1100');
    await report(api, chunkInput(run, '1100', claimToken, 0, 1, 1));
    const res = await api.gql(
      `query($runId: UUID!) { run(runId: $runId) {
      partitions { partitionId status } pending: partitions(status: PENDING) { partitionId } partitionCounts { status count } } }`,
      { runId: run.runId },
    );
    expect(res.body.errors).toBeUndefined();
    const { partitions, pending, partitionCounts } = res.body.data!.run;
    expect(partitions.map((p: { partitionId: string }) => p.partitionId)).toEqual(
      Array.from({ length: 1_203 }, (_, i) => String(i).padStart(4, '0')),
    );
    expect(partitions[1100]).toEqual({ partitionId: '1100', status: 'SUCCESS' });
    expect(pending).toHaveLength(1_202);
    expect(pending.map((p: { partitionId: string }) => p.partitionId)).not.toContain('1100');
    expect(partitionCounts).toEqual([
      { status: 'PENDING', count: 1_202 },
      { status: 'SUCCESS', count: 1 },
    ]);
  });

  it("a page of runs reads each run's events, partition counts and evidence as asked, the same as one run at a time", async () => {
    const businessKey = `BATCH_${randomUUID().slice(0, 6)}`;
    const runs = [await startRun(api, [1, 2], { create: { businessKey } })];
    await api.gql(FAIL_RUN, {
      input: { runId: runs[0]!.runId, expectedStatus: 'EXTRACTING', failStatus: 'FAILED_EXTRACT', errorStage: 'X', errorCode: 'E' },
    });
    runs.push(await createRun(api, { businessKey }));
    const fields = 'runId partitionCounts { status count } events(last: 2) { name } all: events(last: 50) { name } evidence { jobId }';
    const page = await api.gql(`query($f: RunFilter) { runs(filter: $f, first: 10) { nodes { ${fields} } } }`, { f: { businessKey } });
    expect(page.body.errors).toBeUndefined();
    const nodes = page.body.data!.runs.nodes as Array<Record<string, unknown>>;
    expect(nodes.map((n) => n.runId)).toEqual([runs[1]!.runId, runs[0]!.runId]);
    for (const node of nodes) {
      const one = await api.gql(`query($runId: UUID!) { run(runId: $runId) { ${fields} } }`, { runId: node.runId });
      expect(node).toEqual(one.body.data!.run);
    }
    const [created, failed] = nodes as Array<{ partitionCounts: unknown; events: Array<{ name: string }>; all: Array<{ name: string }> }>;
    expect(created!.partitionCounts).toEqual([]);
    expect(created!.all.map((e) => e.name)).toEqual(['RUN_STARTED']);
    expect(failed!.partitionCounts).toEqual([{ status: 'PENDING', count: 2 }]); // the sweeper abandons them later
    expect(failed!.events).toEqual(failed!.all.slice(-2));
    expect(failed!.all.length).toBeGreaterThan(2);
  });
});
