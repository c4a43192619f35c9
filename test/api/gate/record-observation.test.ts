import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun, JOB } from '../../support/fixtures.js';
import { observe, observed, unique } from '../../support/gate-fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const D = '2026-10-23';

async function storedObservations(jobId: string) {
  const { rows } = await api.sql.query(
    `SELECT attempt, run_id, state, started_at, observed_by FROM nifi_ops.gate_observation WHERE job_id = $1 ORDER BY business_date, attempt`,
    [jobId],
  );
  return rows;
}

describe('recordObservation', () => {
  it('records an attempt with its business date, offset-carrying start time (returned in UTC) and reporter', async () => {
    const jobId = unique('dim_customer');
    const res = await observe(api, {
      jobId,
      businessDate: D,
      attempt: 1,
      runId: 'db-run-881',
      state: 'RUNNING',
      startedAt: '2026-10-23T23:30:00+09:00',
    });
    expect(res.status).toBe(200);
    expect(res.body.data!.recordObservation).toMatchObject({
      changed: true,
      observation: {
        jobId,
        businessDate: D,
        attempt: 1,
        runId: 'db-run-881',
        state: 'RUNNING',
        startedAt: '2026-10-23T14:30:00.000Z',
        observedBy: 'nifi-cluster',
      },
    });
  });

  it('lets RUNNING end as SUCCEEDED once, and answers the replay of SUCCEEDED with changed=false', async () => {
    const jobId = unique('job');
    expect((await observed(api, { jobId, businessDate: D, state: 'RUNNING' })).changed).toBe(true);
    const done = await observed(api, { jobId, businessDate: D, state: 'SUCCEEDED' });
    expect(done).toMatchObject({ changed: true, observation: { state: 'SUCCEEDED' } });
    const replay = await observed(api, { jobId, businessDate: D, state: 'SUCCEEDED' });
    expect(replay).toMatchObject({ changed: false, observation: { state: 'SUCCEEDED' } });
    expect(replay.observation.observedAt).toBe(done.observation.observedAt);
  });

  it('lets RUNNING end as FAILED once, and answers the replay of FAILED with changed=false', async () => {
    const jobId = unique('job');
    await observed(api, { jobId, businessDate: D, state: 'RUNNING' });
    expect((await observed(api, { jobId, businessDate: D, state: 'FAILED' })).changed).toBe(true);
    expect(await observed(api, { jobId, businessDate: D, state: 'FAILED' })).toMatchObject({
      changed: false,
      observation: { state: 'FAILED' },
    });
  });

  it('accepts a first report that is already final, and a replayed RUNNING as changed=false', async () => {
    const jobId = unique('job');
    expect((await observed(api, { jobId, businessDate: D, attempt: 1, state: 'FAILED' })).changed).toBe(true);
    expect((await observed(api, { jobId, businessDate: D, attempt: 2, state: 'RUNNING' })).changed).toBe(true);
    expect((await observed(api, { jobId, businessDate: D, attempt: 2, state: 'RUNNING' })).changed).toBe(false);
  });

  it('treats a RUNNING that arrives after its attempt ended as a late message: changed=false, the final state stays', async () => {
    const jobId = unique('job');
    await observed(api, { jobId, businessDate: D, state: 'SUCCEEDED' });
    const late = await observed(api, { jobId, businessDate: D, state: 'RUNNING' });
    expect(late).toMatchObject({ changed: false, observation: { state: 'SUCCEEDED' } });
    expect((await storedObservations(jobId)).map((r) => r.state)).toEqual(['SUCCEEDED']);
  });

  it.each([
    ['SUCCEEDED', 'FAILED'],
    ['FAILED', 'SUCCEEDED'],
  ] as const)(
    'refuses to change a final %s into %s with 409 OBSERVATION_CONFLICT (a repair needs a new attempt)',
    async (first, second) => {
      const jobId = unique('job');
      await observed(api, { jobId, businessDate: D, state: first });
      const res = await observe(api, { jobId, businessDate: D, state: second });
      expect(res.status).toBe(409);
      expect(res.code).toBe('OBSERVATION_CONFLICT');
      expect(res.details).toMatchObject({ jobId, businessDate: D, attempt: 1, recorded: { state: first } });
      expect((await storedObservations(jobId)).map((r) => r.state)).toEqual([first]);
      // the repair: a new attempt
      expect((await observed(api, { jobId, businessDate: D, attempt: 2, state: second })).changed).toBe(true);
    },
  );

  it.each([
    ['another run id', { runId: 'someone-else' }],
    ['another start time', { startedAt: '2026-10-23T07:00:00Z' }],
  ])('refuses the same attempt with %s with 409 OBSERVATION_CONFLICT', async (_what, change) => {
    const jobId = unique('job');
    await observed(api, { jobId, businessDate: D, state: 'RUNNING', runId: 'r1', startedAt: '2026-10-23T06:00:00Z' });
    const res = await observe(api, {
      jobId,
      businessDate: D,
      state: 'SUCCEEDED',
      runId: 'r1',
      startedAt: '2026-10-23T06:00:00Z',
      ...change,
    });
    expect(res.status).toBe(409);
    expect(res.code).toBe('OBSERVATION_CONFLICT');
    expect((await storedObservations(jobId))[0]).toMatchObject({ run_id: 'r1', state: 'RUNNING' });
  });

  it('accepts the same instant written in another offset as the same start time', async () => {
    const jobId = unique('job');
    await observed(api, { jobId, businessDate: D, state: 'RUNNING', startedAt: '2026-10-23T23:30:00+09:00' });
    const done = await observed(api, { jobId, businessDate: D, state: 'SUCCEEDED', startedAt: '2026-10-23T09:30:00-05:00' });
    expect(done.changed).toBe(true);
  });

  it('keeps attempts apart: a delayed report about attempt 1 never touches attempt 2', async () => {
    const jobId = unique('job');
    await observed(api, { jobId, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    await observed(api, { jobId, businessDate: D, attempt: 1, state: 'RUNNING' });
    await observed(api, { jobId, businessDate: D, attempt: 1, state: 'FAILED' });
    expect((await storedObservations(jobId)).map((r) => [r.attempt, r.state])).toEqual([
      [1, 'FAILED'],
      [2, 'SUCCEEDED'],
    ]);
  });

  it('refuses a Load Control job id with 409 OBSERVATION_CONFLICT: its runs are its observations', async () => {
    await createRun(api);
    const res = await observe(api, { jobId: JOB, businessDate: D, state: 'SUCCEEDED' });
    expect(res.status).toBe(409);
    expect(res.code).toBe('OBSERVATION_CONFLICT');
    expect(res.details).toEqual({ jobId: JOB, reason: 'LOAD_CONTROL_JOB' });
    expect(await storedObservations(JOB)).toEqual([]);
  });

  it.each([
    ['2026-02-30', 'Date'],
    ['2025-02-29', 'Date'],
    ['2026-13-01', 'Date'],
    ['2026-10-23T00:00:00Z', 'Date'],
    ['23.10.2026', 'Date'],
    ['0000-01-01', 'Date'],
  ])('refuses the business date %s with 422 INVALID_INPUT and writes nothing', async (businessDate, field) => {
    const jobId = unique('job');
    const res = await observe(api, { jobId, businessDate, state: 'SUCCEEDED', runId: 'r1', startedAt: '2026-10-23T06:00:00Z' });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field });
    expect(await storedObservations(jobId)).toEqual([]);
  });

  it('accepts 29 February in a leap year', async () => {
    expect((await observed(api, { jobId: unique('job'), businessDate: '2024-02-29', state: 'SUCCEEDED' })).changed).toBe(true);
  });

  it.each([
    ['startedAt without an offset', { startedAt: '2026-10-23T06:00:00' }, 'DateTime'],
    ['startedAt as a date only', { startedAt: '2026-10-23' }, 'DateTime'],
    ['attempt 0', { attempt: 0 }, 'input.attempt'],
    ['attempt beyond 32 bits', { attempt: '2147483648' }, 'input.attempt'],
    ['a job id with a space', { jobId: 'dim customer' }, 'input.jobId'],
    ['an over-long job id', { jobId: 'j'.repeat(201) }, 'input.jobId'],
    ['an over-long run id', { runId: 'r'.repeat(201) }, 'input.runId'],
    ['an empty run id', { runId: '' }, 'input.runId'],
  ])('refuses %s with 422 INVALID_INPUT and writes nothing', async (_what, change, field) => {
    const before = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_observation');
    const res = await observe(api, { jobId: unique('job'), businessDate: D, state: 'RUNNING', ...change });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field });
    const after = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate_observation');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('is for the nifi role: 401 without a token, 403 for operator and viewer', async () => {
    const input = { jobId: unique('job'), businessDate: D, state: 'RUNNING' as const };
    expect((await observe(api, input, null)).status).toBe(401);
    expect((await observe(api, input, 'operator')).status).toBe(403);
    expect((await observe(api, input, 'viewer')).code).toBe('FORBIDDEN');
  });

  it('lets exactly one of two racing final reports for one RUNNING attempt win; the other is a conflict', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const jobId = unique('race');
      await observed(api, { jobId, businessDate: D, state: 'RUNNING' });
      const [a, b] = await Promise.all([
        observe(api, { jobId, businessDate: D, state: 'SUCCEEDED' }),
        observe(api, { jobId, businessDate: D, state: 'FAILED' }),
      ]);
      const winners = [a, b].filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect([a, b].filter((r) => r.code === 'OBSERVATION_CONFLICT')).toHaveLength(1);
      const won = winners[0]!.body.data!.recordObservation.observation.state;
      expect((await storedObservations(jobId)).map((r) => r.state)).toEqual([won]);
    }
  });

  it('records one row when the same first report arrives on several connections at once', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const jobId = unique('race');
      const results = await Promise.all(Array.from({ length: 6 }, () => observe(api, { jobId, businessDate: D, state: 'SUCCEEDED' })));
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(results.filter((r) => r.body.data!.recordObservation.changed)).toHaveLength(1);
      expect(await storedObservations(jobId)).toHaveLength(1);
    }
  });
});
