// jobs, jobMatrix and Run.eventPage as the console and the CLI read them: what a page holds, its cursors, its
// bounds (422), its cost (400 QUERY_TOO_COSTLY before it runs) and its filters.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_EVENT_PAGE, CANCEL_RUN } from '../../../schema/documents/operator.js';
import { JOB_MATRIX, JOBS } from '../../../web/src/api/operations.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun, failCreatedRun, MARK_SUCCESS, metric, recordMetrics, startRun, toPublished } from '../../support/fixtures.js';
import { defineGate, observed } from '../../support/gate-fixtures.js';
import { encodeEventCursor } from '../../../src/domain/events/events.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const jobKey = (name: string) => `${name}_${randomUUID().slice(0, 8).toUpperCase()}`;

async function succeeded(job: string, businessKey: string) {
  const run = await toPublished(api, [3, 4], { create: { jobKey: job, businessKey } });
  expect((await recordMetrics(api, run.runId, 'TARGET', [metric('TARGET_COUNT', 'PASS', '7')])).body.errors).toBeUndefined();
  const res = await api.gql(MARK_SUCCESS, { input: { runId: run.runId, targetCount: '7' } });
  expect(res.body.data!.markSuccess.runStatus).toBe('SUCCESS');
  return run;
}

async function failed(job: string, businessKey: string) {
  const run = await createRun(api, { jobKey: job, businessKey });
  await failCreatedRun(api, run.runId);
  return run;
}

async function jobs(variables: Record<string, unknown>) {
  const res = await api.gql(JOBS, variables, { token: 'viewer' });
  return { res, page: res.body.data?.jobs as { nodes: any[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
}

describe('jobs', () => {
  it('lists each job once in key order with its last run, last success, recent runs, success rate and gate, a page at a time', async () => {
    const tag = jobKey('JOBS');
    const [a, b, c] = [`${tag}_A`, `${tag}_B`, `${tag}_C`];
    const success = await succeeded(a, '2026-11-01');
    const failure = await failed(a, '2026-11-02');
    const active = await startRun(api, [1], { create: { jobKey: a, businessKey: '2026-11-03' } });
    await failed(b, '2026-11-01');
    await succeeded(c, '2026-11-01');
    await defineGate(api, jobKey('consumer').toLowerCase(), [`upstream_${tag}`], c);

    const { page: first } = await jobs({ jobKeyContains: tag.toLowerCase(), first: 2 });
    expect(first.nodes.map((j) => j.jobKey)).toEqual([a, b]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const jobA = first.nodes[0]!;
    expect(jobA.lastRun.runId).toBe(active.runId);
    expect(jobA.lastSuccess.runId).toBe(success.runId);
    expect(jobA.recentRuns.map((r: { runId: string }) => r.runId)).toEqual([active.runId, failure.runId, success.runId]);
    // the active run does not count: one success of two ended runs
    expect(jobA.successRate).toBe(0.5);
    expect(jobA.gatedBy).toBeNull();
    expect(first.nodes[1]).toMatchObject({ successRate: 0, lastSuccess: null });

    const { page: second } = await jobs({ jobKeyContains: tag, first: 2, after: first.pageInfo.endCursor });
    expect(second.nodes.map((j) => j.jobKey)).toEqual([c]);
    expect(second.nodes[0]).toMatchObject({ successRate: 1, gatedBy: expect.stringMatching(/^consumer_/) });
    expect(second.pageInfo.hasNextPage).toBe(false);

    const { page: window } = await jobs({ jobKeyContains: a, recentRuns: 1 });
    expect(window.nodes[0].recentRuns.map((r: { runId: string }) => r.runId)).toEqual([active.runId]);
    expect(window.nodes[0].successRate).toBeNull();
  });

  it('refuses a page over 100, a window over 50 and a foreign cursor with 422 INVALID_INPUT, changing nothing', async () => {
    for (const [args, field] of [
      [{ first: 101 }, 'first'],
      [{ first: 0 }, 'first'],
      [{ recentRuns: 51 }, 'recentRuns'],
      [{ after: 'not-a-cursor' }, 'after'],
      [{ after: Buffer.from('run:X').toString('base64url') }, 'after'],
    ] as const) {
      const { res } = await jobs(args);
      expect(res.status, JSON.stringify(args)).toBe(422);
      expect(res.code).toBe('INVALID_INPUT');
      expect(res.details).toMatchObject({ field });
    }
  });

  it('costs as many jobs as first asks for, times the runs each may hold: a page of 100 with every run’s events is refused', async () => {
    const res = await api.gql(`{ jobs(first: 100) { nodes { recentRuns { runId events(last: 100) { eventId } } } } }`);
    expect(res.status).toBe(400);
    expect(res.code).toBe('QUERY_TOO_COSTLY');
  });
});

describe('jobMatrix', () => {
  it('gives each job and business date its latest attempt, the number of attempts and its gate’s readiness', async () => {
    const job = jobKey('MATRIX');
    const upstream = `upstream_${randomUUID().slice(0, 8)}`;
    const consumer = `matrix_${randomUUID().slice(0, 8)}`;
    await defineGate(api, consumer, [upstream], job);
    // the gate holds the job's runs back until its upstream succeeded for the date
    await observed(api, { jobId: upstream, businessDate: '2026-10-30', state: 'SUCCEEDED' });
    await failed(job, '2026-10-30');
    const retried = await succeeded(job, '2026-10-30');
    await observed(api, { jobId: upstream, businessDate: '2026-10-31', state: 'RUNNING' });

    const res = await api.gql(JOB_MATRIX, { jobKeys: [job], days: 3, endDate: '2026-10-31' }, { token: 'viewer' });
    expect(res.body.errors).toBeUndefined();
    const matrix = res.body.data!.jobMatrix;
    expect(matrix.businessDates).toEqual(['2026-10-29', '2026-10-30', '2026-10-31']);
    expect(matrix.consumerReadiness).toEqual([]);
    expect(matrix.rows).toHaveLength(1);
    expect(matrix.rows[0].gatedBy).toBe(consumer);
    const [none, twice, missing] = matrix.rows[0].cells;
    expect(none).toEqual({ businessDate: '2026-10-29', attempts: 0, latest: null, gateReady: false });
    expect(twice).toMatchObject({
      businessDate: '2026-10-30',
      attempts: 2,
      gateReady: true,
      latest: { attempt: 2, runId: retried.runId, state: 'SUCCEEDED', source: 'LOAD_CONTROL', runStatus: 'SUCCESS' },
    });
    expect(missing).toMatchObject({ attempts: 0, gateReady: false });

    const byGate = await api.gql(JOB_MATRIX, { consumer, days: 2, endDate: '2026-10-31' }, { token: 'viewer' });
    const gateMatrix = byGate.body.data!.jobMatrix;
    expect(gateMatrix.rows.map((r: { jobId: string }) => r.jobId)).toEqual([upstream, job]);
    expect(gateMatrix.consumerReadiness).toEqual([true, false]);
    const upstreamRow = gateMatrix.rows.find((r: { jobId: string }) => r.jobId === upstream);
    expect(upstreamRow.gatedBy).toBeNull();
    expect(upstreamRow.cells[1]).toMatchObject({
      attempts: 1,
      gateReady: null,
      latest: { state: 'RUNNING', source: 'EXTERNAL', runStatus: null },
    });

    const noGate = await api.gql(JOB_MATRIX, { consumer: 'no_such_gate', days: 2 }, { token: 'viewer' });
    expect(noGate.body.data!.jobMatrix.rows).toEqual([]);
  });

  it('ends at today (UTC) by default', async () => {
    const res = await api.gql(JOB_MATRIX, { jobKeys: ['ANY_JOB'], days: 1 }, { token: 'viewer' });
    expect(res.body.data!.jobMatrix.businessDates).toEqual([new Date().toISOString().slice(0, 10)]);
  });

  it('refuses neither or both of jobKeys and consumer, more than 20 jobs or 31 dates and a bad date with 422', async () => {
    for (const [args, field] of [
      [{}, 'jobKeys'],
      [{ jobKeys: ['A'], consumer: 'c' }, 'jobKeys'],
      [{ jobKeys: [] }, 'jobKeys'],
      [{ jobKeys: Array.from({ length: 21 }, (_, i) => `J${i}`) }, 'jobKeys'],
      [{ jobKeys: ['A'], days: 32 }, 'days'],
      [{ jobKeys: ['A'], days: 0 }, 'days'],
      [{ jobKeys: ['bad key!'] }, 'jobKeys.0'],
    ] as const) {
      const res = await api.gql(JOB_MATRIX, args, { token: 'viewer' });
      expect(res.status, JSON.stringify(args)).toBe(422);
      expect(res.code).toBe('INVALID_INPUT');
      expect(res.details).toMatchObject({ field });
    }
    const badDate = await api.gql(JOB_MATRIX, { jobKeys: ['A'], endDate: '2026-02-30' }, { token: 'viewer' });
    expect(badDate.status).toBe(422);
  });
});

describe('Run.eventPage', () => {
  async function eventPage(runId: string, variables: Record<string, unknown> = {}) {
    const res = await api.gql(RUN_EVENT_PAGE, { runId, ...variables }, { token: 'viewer' });
    return { res, page: res.body.data?.run?.eventPage as { nodes: any[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
  }

  it('pages a run’s events newest first and filters them by level, kind, partition and operator actions', async () => {
    const run = await startRun(api, [1, 1, 1]);
    const RECORD_EVENT = `mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`;
    for (let i = 0; i < 7; i++) {
      const res = await api.gql(RECORD_EVENT, {
        input: { runId: run.runId, level: i % 3 === 0 ? 'WARN' : 'INFO', name: 'PARTITION_PROGRESS', partitionId: `000${i % 3}` },
      });
      expect(res.body.errors).toBeUndefined();
    }
    const cancelled = await api.gql(
      CANCEL_RUN,
      { input: { runId: run.runId, reason: 'demo of the operator filter' } },
      { token: 'operator' },
    );
    expect(cancelled.body.errors).toBeUndefined();

    const everything: any[] = [];
    let after: string | null = null;
    do {
      const { page } = await eventPage(run.runId, { first: 3, after });
      everything.push(...page.nodes);
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    } while (after);
    const times = everything.map((e) => e.eventTime);
    expect([...times].sort().reverse()).toEqual(times);
    expect(new Set(everything.map((e) => e.eventId)).size).toBe(everything.length);
    const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1`, [run.runId]);
    expect(everything).toHaveLength(rows[0].n);
    expect(everything[0].name).toBe('RUN_CANCELLED');

    const { page: warnings } = await eventPage(run.runId, { minLevel: 'WARN', name: 'PARTITION_PROGRESS' });
    expect(warnings.nodes.map((e) => e.level)).toEqual(['WARN', 'WARN', 'WARN']);
    const { page: ofPartition } = await eventPage(run.runId, { partitionId: '0001' });
    expect(ofPartition.nodes.map((e) => e.partitionId)).toEqual(['0001', '0001']);
    const { page: operator } = await eventPage(run.runId, { operatorActions: true });
    expect(operator.nodes.map((e) => [e.name, e.actor])).toEqual([['RUN_CANCELLED', 'alice-operator']]);
    const { page: errors } = await eventPage(run.runId, { minLevel: 'ERROR' });
    expect(errors.nodes).toEqual([]);
    expect(errors.pageInfo).toEqual({ hasNextPage: false, endCursor: null });
    // another run's event as a cursor: an empty page, not that run's events
    const other = await startRun(api, [1]);
    const { rows: foreign } = await api.sql.query(`SELECT event_id::text FROM nifi_ops.load_event WHERE run_id = $1 LIMIT 1`, [
      other.runId,
    ]);
    const { page: crossed } = await eventPage(run.runId, { after: encodeEventCursor(foreign[0].event_id) });
    expect(crossed.nodes).toEqual([]);
  });

  it('refuses a page over 200, an unknown level and a foreign cursor with 422; events(last) is unchanged', async () => {
    const run = await startRun(api, [1]);
    for (const [args, field] of [
      [{ first: 201 }, 'first'],
      [{ after: 'xyz' }, 'after'],
      [{ after: Buffer.from('event:not-a-uuid').toString('base64url') }, 'after'],
      [{ name: 'N'.repeat(81) }, 'name'],
    ] as const) {
      const { res } = await eventPage(run.runId, args);
      expect(res.status, JSON.stringify(args)).toBe(422);
      expect(res.details).toMatchObject({ field });
    }
    const level = await api.gql(RUN_EVENT_PAGE, { runId: run.runId, minLevel: 'LOUD' }, { token: 'viewer' });
    expect(level.status).toBeGreaterThanOrEqual(400);
    expect(level.status).toBeLessThan(500);
    const last = await api.gql(`query($runId: UUID!) { run(runId: $runId) { events(last: 1) { name } } }`, { runId: run.runId });
    expect(last.body.data!.run.events).toHaveLength(1);
  });

  it('costs as many events as first asks for: 200 events of each of 500 runs is refused before it runs', async () => {
    const res = await api.gql(`{ runs(first: 500) { nodes { eventPage(first: 200) { nodes { eventId message details } } } } }`);
    expect(res.status).toBe(400);
    expect(res.code).toBe('QUERY_TOO_COSTLY');
  });
});
