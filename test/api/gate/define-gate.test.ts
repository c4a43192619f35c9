// defineGate over HTTP: the happy path with the gates query, the input's refusals and the operator role. Its rules
// (a changed definition, a bound job moving, concurrent bindings) are in test/domain/gate/define-gate.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { DEFINE_GATE, defineGate, unique } from '../../support/gate-fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const GATES = `query { gates { consumer requiredJobs boundJobKey definedBy } }`;

async function gateEvents(consumer: string) {
  const { rows } = await api.sql.query(
    `SELECT event_level, actor, details FROM nifi_ops.load_event WHERE event_name = 'GATE_DEFINED' AND details->>'consumer' = $1 ORDER BY event_time`,
    [consumer],
  );
  return rows;
}

describe('defineGate', () => {
  it('defines the exact set of required jobs, recorded with the operator’s token name', async () => {
    const consumer = unique('daily_sales');
    const defined = await defineGate(api, consumer, ['dim_product', 'dim_customer']);
    expect(defined).toMatchObject({
      changed: true,
      gate: { consumer, requiredJobs: ['dim_customer', 'dim_product'], boundJobKey: null, definedBy: 'alice-operator' },
    });
    expect(await gateEvents(consumer)).toEqual([
      {
        event_level: 'INFO',
        actor: 'alice-operator',
        details: expect.objectContaining({ consumer, requiredJobs: ['dim_customer', 'dim_product'], previous: null }),
      },
    ]);
    const listed = await api.gql(GATES, {}, { token: 'viewer' });
    expect(listed.body.data!.gates).toContainEqual({
      consumer,
      requiredJobs: ['dim_customer', 'dim_product'],
      boundJobKey: null,
      definedBy: 'alice-operator',
    });
  });

  it.each([
    ['no required job', { requiredJobs: [] }, 'input.requiredJobs'],
    ['a repeated job', { requiredJobs: ['a', 'a'] }, 'input.requiredJobs'],
    ['a malformed job id', { requiredJobs: ['has space'] }, 'input.requiredJobs.0'],
    ['too many jobs', { requiredJobs: Array.from({ length: 101 }, (_, i) => `j${i}`) }, 'input.requiredJobs'],
    ['an over-long consumer', { consumer: 'c'.repeat(201) }, 'input.consumer'],
    ['a bound job key that is not a Load Control job key', { boundJobKey: 'lower_case' }, 'input.boundJobKey'],
    ['a bound job the gate itself requires', { requiredJobs: ['SALES_LOAD'], boundJobKey: 'SALES_LOAD' }, 'input.boundJobKey'],
  ])('refuses %s with 422 INVALID_INPUT and writes nothing', async (_what, change, field) => {
    const consumer = unique('consumer');
    const res = await api.gql(DEFINE_GATE, { input: { consumer, requiredJobs: ['a'], ...change } }, { token: 'operator' });
    expect(res.status).toBe(422);
    expect(res.code).toBe('INVALID_INPUT');
    expect(res.details).toMatchObject({ field });
    const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate WHERE consumer = $1', [consumer]);
    expect(rows[0].n).toBe(0);
  });

  it('is for operators: 403 for nifi and viewer, 401 without a token', async () => {
    const input = { consumer: unique('consumer'), requiredJobs: ['a'] };
    expect((await api.gql(DEFINE_GATE, { input }, { token: 'nifi' })).status).toBe(403);
    expect((await api.gql(DEFINE_GATE, { input }, { token: 'viewer' })).status).toBe(403);
    expect((await api.gql(DEFINE_GATE, { input }, { token: null })).status).toBe(401);
  });
});
