// Expected-by deadlines (issue 15, point 3): when a deadline falls in several zones — daylight saving changes and
// midnight crossings included — and which deadlines the sweeper checks. The alerts it raises, in the monitor summary
// and alertRaised, and the input's validation are in test/api/sweeper/observation-deadlines.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unique } from '../../support/gate-fixtures.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { DomainError } from '../../../src/contract/errors.js';
import { defineGate } from '../../../src/domain/gate/define-gate.js';
import { describeExpectedBy, type ExpectedBy } from '../../../src/domain/gate/expected-by.js';
import { sweepOnce } from '../../../src/domain/sweeper/sweep.js';
import { type DomainTest, gateDefined, readinessOf, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const sweep = () => inTransaction(t.db, (tx, afterCommit) => sweepOnce(tx, t.config, afterCommit));

/** Each job's deadline for a business date, as readiness shows it. */
async function deadlines(consumer: string, businessDate: string): Promise<Record<string, string | null>> {
  const readiness = await readinessOf(t, consumer, businessDate);
  return Object.fromEntries(readiness.jobs.map((j) => [j.jobId, j.deadline?.toISOString() ?? null]));
}

describe('when a deadline falls', () => {
  const cases: Array<{ what: string; date: string; expectedBy: ExpectedBy; at: string }> = [
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
    const defined = await gateDefined(t, consumer, [job], { expectedBy: [{ jobId: job, ...expectedBy }] });
    expect(defined.gate.expectedBy).toEqual([{ jobId: job, ...expectedBy }]);
    expect(describeExpectedBy(defined.gate.expectedBy[0]!)).toBe(`D+${expectedBy.daysAfter} ${expectedBy.time} ${expectedBy.timeZone}`);
    expect(await deadlines(consumer, date)).toEqual({ [job]: at });
  });

  it('refuses a zone PostgreSQL does not know, before anything is written', async () => {
    const consumer = unique('consumer');
    const job = unique('job');
    const defining = inTransaction(t.db, (tx) =>
      defineGate(tx, {
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
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.gate WHERE consumer = $1', [consumer]);
    expect(rows[0].n).toBe(0);
  });
});

/** An expectation whose deadline passed `minutesAgo` minutes ago in `timeZone`, for the business date it is the deadline of. */
async function passedAgo(timeZone: string, minutesAgo: number, daysAfter = 1): Promise<{ time: string; businessDate: string }> {
  const { rows } = await t.sql.query<{ time: string; business_date: string }>(
    `SELECT to_char(t, 'HH24:MI') AS time, to_char(t::date - $3::int, 'YYYY-MM-DD') AS business_date
       FROM (SELECT (clock_timestamp() - make_interval(mins => $2)) AT TIME ZONE $1 AS t) local`,
    [timeZone, minutesAgo, daysAfter],
  );
  return { time: rows[0]!.time, businessDate: rows[0]!.business_date };
}

/** Deadlines set before they passed: expectations are checked only for deadlines after they were set. */
const setLongAgo = (consumer: string) =>
  t.sql.query(`UPDATE nifi_ops.gate_required_job SET expected_since = expected_since - interval '2 days' WHERE consumer = $1`, [consumer]);

describe('the sweeper’s deadline check', () => {
  it('looks only at deadlines that passed, after their expectation was set, and once per job whatever the gates', async () => {
    const [first, second, fresh] = [unique('first'), unique('second'), unique('fresh')];
    const shared = unique('shared');
    const zone = 'Asia/Seoul';
    const passed = await passedAgo(zone, 30);
    const later = await passedAgo(zone, 5);
    const future = await passedAgo(zone, -120);
    const notYet = unique('not_yet');
    await gateDefined(t, first, [shared, notYet], {
      expectedBy: [
        { jobId: shared, daysAfter: 1, time: passed.time, timeZone: zone },
        { jobId: notYet, daysAfter: 1, time: future.time, timeZone: zone },
      ],
    });
    await gateDefined(t, second, [shared], { expectedBy: [{ jobId: shared, daysAfter: 1, time: later.time, timeZone: zone }] });
    await setLongAgo(first);
    await setLongAgo(second);
    // a gate defined after its deadline passed is not alerted about it
    const lateComer = unique('late_comer');
    await gateDefined(t, fresh, [lateComer], {
      expectedBy: [{ jobId: lateComer, daysAfter: 1, time: passed.time, timeZone: zone }],
    });

    await sweep();
    const { rows } = await t.sql.query(
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
