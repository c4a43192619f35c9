// Expected-by deadlines (issue 15, point 3): when a deadline falls in several zones — daylight saving changes and
// midnight crossings included — and the sweeper's OBSERVATION_MISSING / OBSERVATION_LATE, once per job and date,
// in the monitor summary and alertRaised.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { DEFINE_GATE, defineGate, observed, readinessOf, unique, type ExpectedByInput } from '../../support/gate-fixtures.js';
import { subscribe } from '../../support/sse.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { DomainError } from '../../../src/contract/errors.js';
import { defineGate as defineGateInTx } from '../../../src/domain/gate/define-gate.js';
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
  const cases: Array<{ what: string; date: string; expectedBy: Omit<ExpectedByInput, 'jobId'>; at: string }> = [
    {
      what: 'D+1 06:00 Seoul: the evening of D in UTC',
      date: '2026-10-23',
      expectedBy: { daysAfter: 1, time: '06:00', timeZone: 'Asia/Seoul' },
      at: '2026-10-23T21:00:00.000Z',
    },
    {
      what: 'D+0 00:30 Kiritimati (+14): the day before D in UTC',
      date: '2026-10-23',
      expectedBy: { daysAfter: 0, time: '00:30', timeZone: 'Pacific/Kiritimati' },
      at: '2026-10-22T10:30:00.000Z',
    },
    {
      what: 'D+0 23:59 Pago Pago (−11): the day after D in UTC',
      date: '2026-10-23',
      expectedBy: { daysAfter: 0, time: '23:59', timeZone: 'Pacific/Pago_Pago' },
      at: '2026-10-24T10:59:00.000Z',
    },
    {
      what: 'New York, the day before clocks go forward (EST)',
      date: '2026-03-06',
      expectedBy: { daysAfter: 1, time: '06:00', timeZone: 'America/New_York' },
      at: '2026-03-07T11:00:00.000Z',
    },
    {
      what: 'New York, the day clocks go forward (EDT)',
      date: '2026-03-07',
      expectedBy: { daysAfter: 1, time: '06:00', timeZone: 'America/New_York' },
      at: '2026-03-08T10:00:00.000Z',
    },
    {
      what: 'New York, 02:30 the clocks skip: read as 03:30 EDT',
      date: '2026-03-07',
      expectedBy: { daysAfter: 1, time: '02:30', timeZone: 'America/New_York' },
      at: '2026-03-08T07:30:00.000Z',
    },
    {
      what: 'New York, 01:30 the clocks repeat: the second one, EST',
      date: '2026-10-31',
      expectedBy: { daysAfter: 1, time: '01:30', timeZone: 'America/New_York' },
      at: '2026-11-01T06:30:00.000Z',
    },
    {
      what: 'Berlin, 02:30 the clocks skip (CET → CEST)',
      date: '2026-03-28',
      expectedBy: { daysAfter: 1, time: '02:30', timeZone: 'Europe/Berlin' },
      at: '2026-03-29T01:30:00.000Z',
    },
    {
      what: 'Berlin, 02:30 the clocks repeat: the second one, CET',
      date: '2026-10-24',
      expectedBy: { daysAfter: 1, time: '02:30', timeZone: 'Europe/Berlin' },
      at: '2026-10-25T01:30:00.000Z',
    },
    {
      what: 'Lord Howe, 02:15 in its half-hour spring gap',
      date: '2026-10-03',
      expectedBy: { daysAfter: 1, time: '02:15', timeZone: 'Australia/Lord_Howe' },
      at: '2026-10-03T15:45:00.000Z',
    },
    {
      what: 'a month later, in UTC, across the year end',
      date: '2026-12-31',
      expectedBy: { daysAfter: 31, time: '00:00', timeZone: 'UTC' },
      at: '2027-01-31T00:00:00.000Z',
    },
  ];

  it.each(cases)('$what', async ({ date, expectedBy, at }) => {
    const consumer = unique('consumer');
    const job = unique('job');
    const defined = await defineGate(api, consumer, [job], undefined, { expectedBy: [{ jobId: job, ...expectedBy }] });
    expect(defined.gate.expectedBy).toEqual([
      { jobId: job, ...expectedBy, text: `D+${expectedBy.daysAfter} ${expectedBy.time} ${expectedBy.timeZone}` },
    ]);
    expect(await deadlines(consumer, date)).toEqual({ [job]: at });
  });

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

  it('refuses a zone PostgreSQL does not know, before anything is written', async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    const defining = inTransaction(api.db, (tx) =>
      defineGateInTx(tx, {
        consumer,
        requiredJobs: [job],
        boundJobKey: null,
        notifyUrl: null,
        // past the API's Intl check (a newer tz database than the server's would let such a zone through)
        expectedBy: [{ jobId: job, daysAfter: 1, time: '06:00', timeZone: 'Mars/Olympus_Mons' }],
        actor: 'test',
      }),
    );
    await expect(defining).rejects.toSatisfy(
      (e) =>
        e instanceof DomainError && e.code === 'INVALID_INPUT' && (e.details as { field: string }).field === 'input.expectedBy.0.timeZone',
    );
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

  it('looks only at deadlines that passed, after their expectation was set, and once per job whatever the gates', async () => {
    const [first, second, fresh] = [unique('first'), unique('second'), unique('fresh')];
    const shared = unique('shared');
    const zone = 'Asia/Seoul';
    const passed = await passedAgo(zone, 30);
    const later = await passedAgo(zone, 5);
    const future = await passedAgo(zone, -120);
    const notYet = unique('not_yet');
    await defineGate(api, first, [shared, notYet], undefined, {
      expectedBy: [
        { jobId: shared, daysAfter: 1, time: passed.time, timeZone: zone },
        { jobId: notYet, daysAfter: 1, time: future.time, timeZone: zone },
      ],
    });
    await defineGate(api, second, [shared], undefined, { expectedBy: [{ jobId: shared, daysAfter: 1, time: later.time, timeZone: zone }] });
    await setLongAgo(first);
    await setLongAgo(second);
    // a gate defined after its deadline passed is not alerted about it
    const lateComer = unique('late_comer');
    await defineGate(api, fresh, [lateComer], undefined, {
      expectedBy: [{ jobId: lateComer, daysAfter: 1, time: passed.time, timeZone: zone }],
    });

    await sweep();
    const { rows } = await api.sql.query(
      `SELECT job_id, to_char(business_date, 'YYYY-MM-DD') AS business_date, outcome, consumer FROM nifi_ops.gate_deadline_check
        WHERE job_id = ANY($1)`,
      [[shared, notYet, lateComer]],
    );
    // shared: the earlier deadline (first's) decided, and the date is not checked again for second's. notYet: its
    // deadline for its date is two hours away, the one for the day before passed 22 hours ago. lateComer: nothing
    const dayBefore = new Date(Date.parse(`${future.businessDate}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
    const expected = [
      { job_id: shared, business_date: passed.businessDate, outcome: 'OBSERVATION_MISSING', consumer: first },
      { job_id: notYet, business_date: dayBefore, outcome: 'OBSERVATION_MISSING', consumer: first },
    ];
    // (between 00:00 and 00:30 in Seoul the two deadlines of shared fall on two business dates: two checks)
    if (later.businessDate !== passed.businessDate) {
      expected.push({ job_id: shared, business_date: later.businessDate, outcome: 'OBSERVATION_MISSING', consumer: second });
    }
    const order = (r: { job_id: string; business_date: string }) => `${r.job_id} ${r.business_date}`;
    expect(rows.sort((a, b) => (order(a) < order(b) ? -1 : 1))).toEqual(expected.sort((a, b) => (order(a) < order(b) ? -1 : 1)));
  });
});
