// defineGate's rules: the same definition again, a new one replacing the set, a bound job moving between gates, and
// concurrent definitions binding one job, on the domain operation. Its HTTP contract: test/api/gate/define-gate.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { type DomainTest, gateDefined, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

async function gateEvents(consumer: string) {
  const { rows } = await t.sql.query(
    `SELECT event_level, actor, details FROM nifi_ops.load_event WHERE event_name = 'GATE_DEFINED' AND details->>'consumer' = $1 ORDER BY event_time`,
    [consumer],
  );
  return rows;
}

describe('defineGate', () => {
  it('answers the same definition again with changed=false, and replaces the set on a new definition', async () => {
    const consumer = unique('daily_sales');
    await gateDefined(t, consumer, ['a', 'b']);
    expect((await gateDefined(t, consumer, ['b', 'a'])).changed).toBe(false);
    const redefined = await gateDefined(t, consumer, ['b', 'c']);
    expect(redefined).toMatchObject({ changed: true, gate: { requiredJobs: ['b', 'c'] } });
    const events = await gateEvents(consumer);
    expect(events).toHaveLength(2);
    expect(events[1].details.previous).toEqual({
      requiredJobs: ['a', 'b'],
      boundJobKey: null,
      notifyUrl: null,
      notifyFormat: 'GENERIC',
      notifyAsset: null,
      expectedBy: [],
    });
  });

  it('binds a Load Control job to one gate at a time: binding it elsewhere moves it', async () => {
    const jobKey = unique('GATED').toUpperCase();
    const first = unique('consumer_a');
    const second = unique('consumer_b');
    expect((await gateDefined(t, first, ['x'], { boundJobKey: jobKey })).gate.boundJobKey).toBe(jobKey);
    expect((await gateDefined(t, second, ['y'], { boundJobKey: jobKey })).gate.boundJobKey).toBe(jobKey);
    const { rows } = await t.sql.query('SELECT consumer, bound_job_key FROM nifi_ops.gate WHERE consumer = ANY($1) ORDER BY consumer', [
      [first, second],
    ]);
    expect(rows).toEqual([
      { consumer: first, bound_job_key: null },
      { consumer: second, bound_job_key: jobKey },
    ]);
    expect((await gateEvents(second))[0].details.boundJobKeyMovedFrom).toBe(first);
  });

  it('serialises concurrent definitions binding one job to different gates: it ends bound exactly once', async () => {
    for (let rep = 0; rep < 10; rep++) {
      const jobKey = unique('RACE').toUpperCase();
      const consumers = [unique('c1'), unique('c2'), unique('c3')];
      const results = await Promise.all(consumers.map((consumer) => gateDefined(t, consumer, ['x'], { boundJobKey: jobKey })));
      expect(results.map((r) => r.changed)).toEqual([true, true, true]);
      const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate WHERE bound_job_key = $1', [jobKey]);
      expect(rows[0].n).toBe(1);
    }
  });
});
