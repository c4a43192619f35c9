// recordObservation's rules (issue 15): an attempt's states, replays, conflicts and races, on the domain operation.
// Its HTTP contract (the DateTime and Date scalars, the input's refusals, the nifi role) is in
// test/api/gate/record-observation.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { JOB } from '../../support/fixtures.js';
import { createdRun, type DomainTest, observedAs, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const D = '2026-10-23';

async function storedObservations(jobId: string) {
  const { rows } = await t.sql.query(
    `SELECT attempt, run_id, state, started_at, observed_by FROM nifi_ops.gate_observation WHERE job_id = $1 ORDER BY business_date, attempt`,
    [jobId],
  );
  return rows;
}

type ObservationInput = Parameters<typeof observedAs>[1];

/** An upstream attempt's report as NiFi sends it (attempt 1, run id and start derived unless given). */
const observe = (input: ObservationInput) => observedAs(t, input);

/** The same call, settled: the result or the error it raised. */
const settled = (input: ObservationInput) =>
  observe(input).then(
    (result) => ({ result, error: null }),
    (error: unknown) => ({ result: null, error }),
  );

describe('recordObservation', () => {
  it('lets RUNNING end as SUCCEEDED once, and answers the replay of SUCCEEDED with changed=false', async () => {
    const jobId = unique('job');
    expect((await observe({ jobId, businessDate: D, state: 'RUNNING' })).changed).toBe(true);
    const done = await observe({ jobId, businessDate: D, state: 'SUCCEEDED' });
    expect(done).toMatchObject({ changed: true, observation: { state: 'SUCCEEDED' } });
    const replay = await observe({ jobId, businessDate: D, state: 'SUCCEEDED' });
    expect(replay).toMatchObject({ changed: false, observation: { state: 'SUCCEEDED' } });
    expect(replay.observation.observedAt).toEqual(done.observation.observedAt);
  });

  it('lets RUNNING end as FAILED once, and answers the replay of FAILED with changed=false', async () => {
    const jobId = unique('job');
    await observe({ jobId, businessDate: D, state: 'RUNNING' });
    expect((await observe({ jobId, businessDate: D, state: 'FAILED' })).changed).toBe(true);
    expect(await observe({ jobId, businessDate: D, state: 'FAILED' })).toMatchObject({
      changed: false,
      observation: { state: 'FAILED' },
    });
  });

  it('accepts a first report that is already final, and a replayed RUNNING as changed=false', async () => {
    const jobId = unique('job');
    expect((await observe({ jobId, businessDate: D, attempt: 1, state: 'FAILED' })).changed).toBe(true);
    expect((await observe({ jobId, businessDate: D, attempt: 2, state: 'RUNNING' })).changed).toBe(true);
    expect((await observe({ jobId, businessDate: D, attempt: 2, state: 'RUNNING' })).changed).toBe(false);
  });

  it('treats a RUNNING that arrives after its attempt ended as a late message: changed=false, the final state stays', async () => {
    const jobId = unique('job');
    await observe({ jobId, businessDate: D, state: 'SUCCEEDED' });
    const late = await observe({ jobId, businessDate: D, state: 'RUNNING' });
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
      await observe({ jobId, businessDate: D, state: first });
      await expect(observe({ jobId, businessDate: D, state: second })).rejects.toMatchObject({
        name: 'DomainError',
        code: 'OBSERVATION_CONFLICT',
        httpStatus: 409,
        details: { jobId, businessDate: D, attempt: 1, recorded: { state: first } },
      });
      expect((await storedObservations(jobId)).map((r) => r.state)).toEqual([first]);
      // the repair: a new attempt
      expect((await observe({ jobId, businessDate: D, attempt: 2, state: second })).changed).toBe(true);
    },
  );

  it.each([
    ['another run id', { runId: 'someone-else' }],
    ['another start time', { startedAt: '2026-10-23T07:00:00Z' }],
  ])('refuses the same attempt with %s with 409 OBSERVATION_CONFLICT', async (_what, change) => {
    const jobId = unique('job');
    await observe({ jobId, businessDate: D, state: 'RUNNING', runId: 'r1', startedAt: '2026-10-23T06:00:00Z' });
    const changed = observe({ jobId, businessDate: D, state: 'SUCCEEDED', runId: 'r1', startedAt: '2026-10-23T06:00:00Z', ...change });
    await expect(changed).rejects.toMatchObject({ name: 'DomainError', code: 'OBSERVATION_CONFLICT', httpStatus: 409 });
    expect((await storedObservations(jobId))[0]).toMatchObject({ run_id: 'r1', state: 'RUNNING' });
  });

  it('accepts the same instant written in another offset as the same start time', async () => {
    const jobId = unique('job');
    await observe({ jobId, businessDate: D, state: 'RUNNING', startedAt: '2026-10-23T23:30:00+09:00' });
    const done = await observe({ jobId, businessDate: D, state: 'SUCCEEDED', startedAt: '2026-10-23T09:30:00-05:00' });
    expect(done.changed).toBe(true);
  });

  it('keeps attempts apart: a delayed report about attempt 1 never touches attempt 2', async () => {
    const jobId = unique('job');
    await observe({ jobId, businessDate: D, attempt: 2, state: 'SUCCEEDED' });
    await observe({ jobId, businessDate: D, attempt: 1, state: 'RUNNING' });
    await observe({ jobId, businessDate: D, attempt: 1, state: 'FAILED' });
    expect((await storedObservations(jobId)).map((r) => [r.attempt, r.state])).toEqual([
      [1, 'FAILED'],
      [2, 'SUCCEEDED'],
    ]);
  });

  it('refuses a Load Control job id with 409 OBSERVATION_CONFLICT: its runs are its observations', async () => {
    await createdRun(t);
    await expect(observe({ jobId: JOB, businessDate: D, state: 'SUCCEEDED' })).rejects.toMatchObject({
      name: 'DomainError',
      code: 'OBSERVATION_CONFLICT',
      httpStatus: 409,
      details: { jobId: JOB, reason: 'LOAD_CONTROL_JOB' },
    });
    expect(await storedObservations(JOB)).toEqual([]);
  });

  it('lets exactly one of two racing final reports for one RUNNING attempt win; the other is a conflict', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const jobId = unique('race');
      await observe({ jobId, businessDate: D, state: 'RUNNING' });
      const [a, b] = await Promise.all([
        settled({ jobId, businessDate: D, state: 'SUCCEEDED' }),
        settled({ jobId, businessDate: D, state: 'FAILED' }),
      ]);
      const winners = [a, b].filter((r) => r.error === null);
      expect(winners).toHaveLength(1);
      expect([a, b].filter((r) => (r.error as { code?: string } | null)?.code === 'OBSERVATION_CONFLICT')).toHaveLength(1);
      const won = winners[0]!.result!.observation.state;
      expect((await storedObservations(jobId)).map((r) => r.state)).toEqual([won]);
    }
  });

  it('records one row when the same first report arrives on several connections at once', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const jobId = unique('race');
      const results = await Promise.all(Array.from({ length: 6 }, () => settled({ jobId, businessDate: D, state: 'SUCCEEDED' })));
      expect(results.map((r) => r.error)).toEqual(Array(6).fill(null));
      expect(results.filter((r) => r.result!.changed)).toHaveLength(1);
      expect(await storedObservations(jobId)).toHaveLength(1);
    }
  });
});
