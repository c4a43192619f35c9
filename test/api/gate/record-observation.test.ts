// recordObservation over HTTP: the DateTime and Date scalars, the input's refusals and the nifi role. Its rules
// (states, replays, conflicts, races) are in test/domain/gate/record-observation.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
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
});
