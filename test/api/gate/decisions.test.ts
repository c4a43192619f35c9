// readinessDecisions over HTTP: newest first, at most `last`, its arguments refused with 422 and anonymous callers
// with 401. What the decisions are is test/domain/gate/decisions.test.ts's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { READINESS_DECISIONS, defineGate, observed, unique } from '../../support/gate-fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const D = '2026-10-23';

describe('readinessDecisions', () => {
  it('answers newest first, at most `last`, and refuses bad arguments with 422 INVALID_INPUT', async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    await defineGate(api, consumer, [job]);
    for (const [attempt, state] of [
      [1, 'SUCCEEDED'],
      [2, 'RUNNING'],
      [2, 'SUCCEEDED'],
    ] as const)
      await observed(api, { jobId: job, businessDate: D, attempt, state });
    const res = await api.gql(READINESS_DECISIONS, { consumer, businessDate: D, last: 2 }, { token: 'viewer' });
    expect(res.body.data!.readinessDecisions.map((d: { version: number }) => d.version)).toEqual([3, 2]);
    for (const [variables, field] of [
      [{ consumer, businessDate: D, last: 0 }, 'args.last'],
      [{ consumer, businessDate: D, last: 101 }, 'args.last'],
      [{ consumer: 'no spaces allowed', businessDate: D }, 'args.consumer'],
    ] as const) {
      const refused = await api.gql(READINESS_DECISIONS, variables, { token: 'viewer' });
      expect(refused.status, JSON.stringify(variables)).toBe(422);
      expect(refused.details).toMatchObject({ field });
    }
    expect((await api.gql(READINESS_DECISIONS, { consumer, businessDate: D }, { token: null })).status).toBe(401);
  });
});
