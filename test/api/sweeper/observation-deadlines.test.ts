// Expected-by deadlines (issue 15, point 3) over the API: the input's time zones, canonical or refused, and the
// sweeper's OBSERVATION_MISSING / OBSERVATION_LATE, once per job and date, in the monitor summary and alertRaised.
// When a deadline falls, and which deadlines the sweeper checks: test/domain/sweeper/observation-deadlines.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { DEFINE_GATE, defineGate, observed, readinessOf, unique } from '../../support/gate-fixtures.js';
import { subscribe } from '../../support/sse.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { sweepOnce } from '../../../src/domain/sweeper/sweep.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({}, { realtime: true });
});
afterAll(async () => api?.close());

const ALERTS = `query { monitorSummary(alertLimit: 500) { alerts { kind severity runId jobKey businessKey status at message consumer } } }`;
const ALERT_RAISED = `subscription { alertRaised { kind jobKey businessKey consumer message } }`;

const sweep = () => inTransaction(api.db, (tx, afterCommit) => sweepOnce(tx, api.config, afterCommit));

async function alerts(): Promise<Array<Record<string, any>>> {
  const res = await api.gql(ALERTS, {}, { token: 'viewer' });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.monitorSummary.alerts;
}

/** Each job's deadline for a business date, as readiness shows it. */
async function deadlines(consumer: string, businessDate: string): Promise<Record<string, string | null>> {
  const readiness = await readinessOf(api, consumer, businessDate);
  return Object.fromEntries(readiness.jobs.map((j) => [j.jobId, j.deadline]));
}

describe('when a deadline falls', () => {
  it('stores a time zone as its canonical name, and a required job without expectedBy has no deadline', async () => {
    const consumer = unique('consumer');
    const [early, free] = [unique('early'), unique('free')];
    const defined = await defineGate(api, consumer, [early, free], undefined, {
      expectedBy: [{ jobId: early, daysAfter: 1, time: '06:00', timeZone: 'asia/seoul' }],
    });
    expect(defined.gate.expectedBy).toMatchObject([{ jobId: early, timeZone: 'Asia/Seoul' }]);
    // the same expectation, written as stored: no change
    expect(
      (
        await defineGate(api, consumer, [early, free], undefined, {
          expectedBy: [{ jobId: early, daysAfter: 1, time: '06:00', timeZone: 'Asia/Seoul' }],
        })
      ).changed,
    ).toBe(false);
    expect(await deadlines(consumer, '2026-10-23')).toEqual({ [early]: '2026-10-23T21:00:00.000Z', [free]: null });
  });

  it('refuses a malformed expectedBy or notifyUrl with 422 INVALID_INPUT naming the field, and writes nothing', async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    const valid = { jobId: job, daysAfter: 1, time: '06:00', timeZone: 'Asia/Seoul' };
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ expectedBy: [{ ...valid, daysAfter: -1 }] }, 'input.expectedBy.0.daysAfter'],
      [{ expectedBy: [{ ...valid, daysAfter: 32 }] }, 'input.expectedBy.0.daysAfter'],
      [{ expectedBy: [{ ...valid, time: '24:00' }] }, 'input.expectedBy.0.time'],
      [{ expectedBy: [{ ...valid, time: '6:00' }] }, 'input.expectedBy.0.time'],
      [{ expectedBy: [{ ...valid, time: '06:00:00' }] }, 'input.expectedBy.0.time'],
      [{ expectedBy: [{ ...valid, timeZone: '+09:00' }] }, 'input.expectedBy.0.timeZone'],
      [{ expectedBy: [{ ...valid, timeZone: 'UTC+9' }] }, 'input.expectedBy.0.timeZone'],
      [{ expectedBy: [{ ...valid, timeZone: 'Mars/Olympus_Mons' }] }, 'input.expectedBy.0.timeZone'],
      [{ expectedBy: [{ ...valid, timeZone: `Asia/${'x'.repeat(64)}` }] }, 'input.expectedBy.0.timeZone'],
      [{ expectedBy: [{ ...valid, jobId: unique('other') }] }, 'input.expectedBy.0.jobId'],
      [{ expectedBy: [valid, { ...valid, time: '07:00' }] }, 'input.expectedBy.1.jobId'],
      [{ notifyUrl: 'ftp://reports.example/gate' }, 'input.notifyUrl'],
      [{ notifyUrl: 'https://user:secret@reports.example/gate' }, 'input.notifyUrl'],
      [{ notifyUrl: 'not a url' }, 'input.notifyUrl'],
      [{ notifyUrl: `https://reports.example/${'p'.repeat(2000)}` }, 'input.notifyUrl'],
    ];
    for (const [more, field] of refusals) {
      const res = await api.gql(DEFINE_GATE, { input: { consumer, requiredJobs: [job], ...more } }, { token: 'operator' });
      expect([res.status, res.code, res.details?.field], JSON.stringify(more)).toEqual([422, 'INVALID_INPUT', field]);
    }
    const { rows } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate WHERE consumer = $1', [consumer]);
    expect(rows[0].n).toBe(0);
  });
});

/** An expectation whose deadline passed `minutesAgo` minutes ago in `timeZone`, for the business date it is the deadline of. */
async function passedAgo(timeZone: string, minutesAgo: number, daysAfter = 1): Promise<{ time: string; businessDate: string }> {
  const { rows } = await api.sql.query<{ time: string; business_date: string }>(
    `SELECT to_char(t, 'HH24:MI') AS time, to_char(t::date - $3::int, 'YYYY-MM-DD') AS business_date
       FROM (SELECT (clock_timestamp() - make_interval(mins => $2)) AT TIME ZONE $1 AS t) local`,
    [timeZone, minutesAgo, daysAfter],
  );
  return { time: rows[0]!.time, businessDate: rows[0]!.business_date };
}

/** Deadlines set before they passed: expectations are checked only for deadlines after they were set. */
const setLongAgo = (consumer: string) =>
  api.sql.query(`UPDATE nifi_ops.gate_required_job SET expected_since = expected_since - interval '2 days' WHERE consumer = $1`, [
    consumer,
  ]);

describe('the sweeper’s deadline check', () => {
  it('raises OBSERVATION_MISSING and OBSERVATION_LATE once per job and date, east and west of UTC; a success is MET', async () => {
    const consumer = unique('consumer');
    const zones = { missing: 'Pacific/Kiritimati', late: 'America/New_York', met: 'Pacific/Pago_Pago' } as const;
    const jobs = { missing: unique('missing'), late: unique('late'), met: unique('met') };
    const due = {
      missing: await passedAgo(zones.missing, 10),
      late: await passedAgo(zones.late, 10),
      met: await passedAgo(zones.met, 10, 0),
    };
    const expectedBy = (kind: keyof typeof jobs, daysAfter: number) => ({
      jobId: jobs[kind],
      daysAfter,
      time: due[kind].time,
      timeZone: zones[kind],
    });
    await defineGate(api, consumer, Object.values(jobs), undefined, {
      expectedBy: [expectedBy('missing', 1), expectedBy('late', 1), expectedBy('met', 0)],
    });
    await setLongAgo(consumer);
    await observed(api, { jobId: jobs.late, businessDate: due.late.businessDate, attempt: 1, state: 'FAILED' });
    await observed(api, { jobId: jobs.late, businessDate: due.late.businessDate, attempt: 2, state: 'RUNNING', runId: 'late-2' });
    await observed(api, { jobId: jobs.met, businessDate: due.met.businessDate, state: 'SUCCEEDED' });
    const raised = await subscribe(api.url, ALERT_RAISED);

    try {
      const mineActed = (result: Awaited<ReturnType<typeof sweep>>) =>
        (result?.acted ?? []).filter((a) => Object.values(jobs).includes(a.jobId!)).map((a) => [a.action, a.jobId, a.businessDate]);
      const first = await sweep();
      expect(first?.failures).toEqual([]);
      expect(mineActed(first).sort()).toEqual(
        [
          ['observation_alert', jobs.missing, due.missing.businessDate],
          ['observation_alert', jobs.late, due.late.businessDate],
          ['deadline_met', jobs.met, due.met.businessDate],
        ].sort(),
      );
      expect(mineActed(await sweep())).toEqual([]);

      const mine = (await alerts()).filter((a) => a.consumer === consumer);
      expect(mine).toHaveLength(2);
      expect(mine.find((a) => a.kind === 'OBSERVATION_MISSING')).toMatchObject({
        severity: 'WARN',
        runId: null,
        jobKey: jobs.missing,
        businessKey: due.missing.businessDate,
        message: expect.stringMatching(new RegExp(`^expected by \\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}Z for ${consumer}: no attempt$`)),
      });
      expect(mine.find((a) => a.kind === 'OBSERVATION_LATE')).toMatchObject({
        jobKey: jobs.late,
        businessKey: due.late.businessDate,
        message: expect.stringContaining(': attempt 2 RUNNING (run late-2)'),
      });
      await raised.waitFor((m) => m.data?.alertRaised?.kind === 'OBSERVATION_MISSING' && m.data.alertRaised.consumer === consumer);
      await raised.waitFor((m) => m.data?.alertRaised?.kind === 'OBSERVATION_LATE' && m.data.alertRaised.consumer === consumer);
      const { rows: events } = await api.sql.query(
        `SELECT event_name, event_level, job_key, business_key, actor FROM nifi_ops.load_event WHERE job_key = ANY($1) ORDER BY event_name`,
        [Object.values(jobs)],
      );
      expect(events).toEqual([
        { event_name: 'OBSERVATION_LATE', event_level: 'WARN', job_key: jobs.late, business_key: due.late.businessDate, actor: 'sweeper' },
        {
          event_name: 'OBSERVATION_MISSING',
          event_level: 'WARN',
          job_key: jobs.missing,
          business_key: due.missing.businessDate,
          actor: 'sweeper',
        },
      ]);
      expect((await readinessOf(api, consumer, due.met.businessDate)).jobs.find((j) => j.jobId === jobs.met)?.deadlineOutcome).toBe('MET');

      // the late job succeeds: its alert is gone, the record of its lateness stays
      await observed(api, { jobId: jobs.late, businessDate: due.late.businessDate, attempt: 2, state: 'SUCCEEDED', runId: 'late-2' });
      expect((await alerts()).filter((a) => a.consumer === consumer).map((a) => a.kind)).toEqual(['OBSERVATION_MISSING']);
      const late = await readinessOf(api, consumer, due.late.businessDate);
      expect(late.jobs.find((j) => j.jobId === jobs.late)).toMatchObject({ reason: null, deadlineOutcome: 'OBSERVATION_LATE' });
    } finally {
      raised.close();
    }
  });
});
