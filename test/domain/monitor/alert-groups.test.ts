// Alert groups (src/domain/monitor/monitor-summary.ts, alert-groups.ts): the alerts present now grouped by kind and
// cause, and an operator's acknowledgement and snooze of a group, their refusals and their race. The HTTP side
// (roles, input checks, the alertGroups filters) is test/api/monitor/alert-groups.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { leaseDispatchesOperation } from '../../../src/domain/dispatch/lease.js';
import { markDeadOperation } from '../../../src/domain/dispatch/deliver.js';
import { acknowledgeAlertGroupOperation, snoozeAlertGroupOperation } from '../../../src/domain/monitor/alert-groups.js';
import { alertThresholds, monitorSummary, type AlertGroup } from '../../../src/domain/monitor/monitor-summary.js';
import { notifyAlertsOperation } from '../../../src/domain/notifications/occurrences.js';
import { sized } from '../../support/test-size.js';
import { createdRun, type DomainTest, failedRun, refusal, startDomainTest } from '../support/fixtures.js';

const OPERATOR = 'alice-operator';
const RECEIVER = 'broken-hook';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
  // the receiver's first cycle: its baseline
  await notify();
});
afterAll(async () => t?.close());

const thresholds = () => alertThresholds(t.config);
const notify = () => perform(t.db, notifyAlertsOperation, { thresholds: thresholds(), receivers: [{ name: RECEIVER, kinds: null }] });

async function groups(): Promise<AlertGroup[]> {
  const summary = await monitorSummary(t.db.prisma, { alertLimit: 500, recovery: thresholds(), retention: t.config.cleanup, maxBatch: 10 });
  return summary.alertGroups;
}
const group = async (groupKey: string) => (await groups()).find((g) => g.groupKey === groupKey);

async function failures(jobKey: string, n: number): Promise<string[]> {
  const runIds: string[] = [];
  for (let i = 0; i < n; i++) {
    const { runId } = await createdRun(t, { jobKey });
    await failedRun(t, runId, { message: `no plan ${i}` });
    runIds.push(runId);
  }
  return runIds;
}

/** The dispatcher gives up on every due webhook of the receiver: DEAD, as after its last attempt. */
async function receiverGivesUp(): Promise<number> {
  const { leased } = await perform(t.db, leaseDispatchesOperation, {
    batch: 500,
    leaseMs: 60_000,
    alertReceivers: [RECEIVER],
    lineage: false,
    nifi: true,
  });
  for (const d of leased) {
    await perform(t.db, markDeadOperation, {
      dispatchId: d.dispatchId,
      runId: null,
      gate: null,
      alert: { receiver: RECEIVER, dedupKey: d.alert!.occurrence.dedupKey },
      dispatchType: d.dispatchType,
      partitionId: null,
      attempt: 20,
      httpStatus: 500,
      error: 'max attempts reached: 500 Internal Server Error',
      actor: 'dispatcher',
    });
  }
  return leased.length;
}

const acknowledge = (groupKey: string, note = 'receiver is down, ticket OPS-1', actor = OPERATOR, db: Db = t.db) =>
  perform(db, acknowledgeAlertGroupOperation, { groupKey, note, actor, thresholds: thresholds() });
const snooze = (groupKey: string, until: Date, note = 'maintenance window') =>
  perform(t.db, snoozeAlertGroupOperation, { groupKey, until, note, actor: OPERATOR, thresholds: thresholds() });
const inMinutes = (minutes: number) => new Date(Date.now() + minutes * 60_000);

async function eventsNamed(name: string) {
  const { rows } = await t.sql.query(
    `SELECT actor, message, details FROM nifi_ops.load_event WHERE event_name = $1 AND run_id IS NULL ORDER BY event_time`,
    [name],
  );
  return rows;
}

describe('alert groups', () => {
  it('makes one row of one broken receiver, however many of its webhooks die (30), and one of one failing job', async () => {
    const jobKey = 'GROUPS_BROKEN_RECEIVER';
    await failures(jobKey, 30);
    await notify();
    expect(await receiverGivesUp()).toBe(30);

    const all = await groups();
    const dead = all.filter((g) => g.kind === 'DISPATCH_DEAD');
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ groupKey: `DISPATCH_DEAD:RECEIVER:${RECEIVER}`, causeType: 'RECEIVER', cause: RECEIVER, count: 30 });
    expect(dead[0]!.firstAt!.getTime()).toBeLessThanOrEqual(dead[0]!.lastAt!.getTime());
    expect(dead[0]!.latest.at).toEqual(dead[0]!.lastAt);
    expect(dead[0]!.latest.message).toContain(`ALERT_WEBHOOK to ${RECEIVER}`);
    const failed = all.filter((g) => g.kind === 'RUN_FAILED' && g.cause === jobKey);
    expect(failed.map((g) => [g.groupKey, g.causeType, g.count])).toEqual([[`RUN_FAILED:JOB:${jobKey}`, 'JOB', 30]]);
    // every alert names its group
    const summary = await monitorSummary(t.db.prisma, {
      alertLimit: 500,
      recovery: thresholds(),
      retention: t.config.cleanup,
      maxBatch: 10,
    });
    const deadAlerts = summary.alerts.filter((a) => a.kind === 'DISPATCH_DEAD');
    expect(deadAlerts).toHaveLength(30);
    expect(new Set(deadAlerts.map((a) => a.groupKey))).toEqual(new Set([`DISPATCH_DEAD:RECEIVER:${RECEIVER}`]));
  });

  it('groups each job apart, and a gate’s alerts by its consumer', async () => {
    await failures('GROUPS_JOB_A', 2);
    await failures('GROUPS_JOB_B', 1);
    await t.sql.query(
      `INSERT INTO nifi_ops.gate_deadline_check (consumer, job_id, business_date, deadline, outcome, checked_at)
       VALUES ('groups_mart', 'ERP_DAILY', '2026-11-02', clock_timestamp() - interval '1 hour', 'OBSERVATION_MISSING', clock_timestamp())`,
    );
    const all = await groups();
    const byKey = (key: string) => all.find((g) => g.groupKey === key);
    expect(byKey('RUN_FAILED:JOB:GROUPS_JOB_A')?.count).toBe(2);
    expect(byKey('RUN_FAILED:JOB:GROUPS_JOB_B')?.count).toBe(1);
    expect(byKey('OBSERVATION_MISSING:CONSUMER:groups_mart')).toMatchObject({ causeType: 'CONSUMER', count: 1, severity: 'WARN' });
  });

  it('acknowledges a group with a note, once; a new alert of it raises it again until acknowledged again', async () => {
    const jobKey = 'GROUPS_ACK';
    const key = `RUN_FAILED:JOB:${jobKey}`;
    await failures(jobKey, 2);
    expect(await group(key)).toMatchObject({ acknowledgement: null, unacknowledgedCount: 2 });

    expect(await acknowledge(key)).toEqual({ groupKey: key, changed: true, count: 2 });
    const acked = await group(key);
    expect(acked).toMatchObject({ unacknowledgedCount: 0, acknowledgement: { by: OPERATOR, note: 'receiver is down, ticket OPS-1' } });
    // the same again: nothing new to cover
    expect(await acknowledge(key, 'again, by someone else', 'bob-operator')).toEqual({ groupKey: key, changed: false, count: 2 });
    expect((await group(key))!.acknowledgement!.by).toBe(OPERATOR);

    await failures(jobKey, 1);
    expect(await group(key)).toMatchObject({ count: 3, unacknowledgedCount: 1, acknowledgement: { by: OPERATOR } });
    expect(await acknowledge(key, 'the third one too', 'bob-operator')).toMatchObject({ changed: true, count: 3 });
    expect(await group(key)).toMatchObject({ unacknowledgedCount: 0, acknowledgement: { by: 'bob-operator', note: 'the third one too' } });

    const audit = (await eventsNamed('ALERT_GROUP_ACKNOWLEDGED')).filter((e) => e.details.groupKey === key);
    expect(audit.map((e) => [e.actor, e.message, e.details.count])).toEqual([
      [OPERATOR, 'receiver is down, ticket OPS-1', 2],
      ['bob-operator', 'the third one too', 3],
    ]);
  });

  it('snoozes a group until a time, whatever is raised meanwhile, and shows it again after', async () => {
    const jobKey = 'GROUPS_SNOOZE';
    const key = `RUN_FAILED:JOB:${jobKey}`;
    await failures(jobKey, 1);
    const until = inMinutes(60);
    expect(await snooze(key, until)).toEqual({ groupKey: key, changed: true, until });
    expect((await group(key))!.snooze).toMatchObject({ until, by: OPERATOR, note: 'maintenance window' });
    expect(await snooze(key, until)).toMatchObject({ changed: false });
    await failures(jobKey, 1);
    expect(await group(key)).toMatchObject({ count: 2, snooze: { until } });
    // the time passes
    await t.sql.query(`UPDATE nifi_ops.alert_group_ack SET snoozed_until = clock_timestamp() - interval '1 second' WHERE group_key = $1`, [
      key,
    ]);
    expect(await group(key)).toMatchObject({ snooze: null, acknowledgement: null });
    const audit = (await eventsNamed('ALERT_GROUP_SNOOZED')).filter((e) => e.details.groupKey === key);
    expect(audit.map((e) => [e.actor, e.message, e.details.until])).toEqual([[OPERATOR, 'maintenance window', until.toISOString()]]);
  });

  it('refuses a group with no alert now (ALERT_GROUP_NOT_FOUND) and a snooze in the past or beyond a week (INVALID_INPUT), writing nothing', async () => {
    const missing = await refusal(acknowledge('RUN_FAILED:JOB:NO_SUCH_JOB'));
    expect([missing.code, missing.details]).toEqual(['ALERT_GROUP_NOT_FOUND', { groupKey: 'RUN_FAILED:JOB:NO_SUCH_JOB' }]);
    expect((await refusal(snooze('RUN_FAILED:JOB:NO_SUCH_JOB', inMinutes(10)))).code).toBe('ALERT_GROUP_NOT_FOUND');

    const jobKey = 'GROUPS_REFUSED';
    const key = `RUN_FAILED:JOB:${jobKey}`;
    await failures(jobKey, 1);
    const past = await refusal(snooze(key, inMinutes(-1)));
    expect([past.code, past.details]).toEqual(['INVALID_INPUT', { field: 'input.until', reason: 'must be in the future' }]);
    const far = await refusal(snooze(key, inMinutes(7 * 24 * 60 + 5)));
    expect([far.code, far.details]).toEqual(['INVALID_INPUT', { field: 'input.until', reason: 'must be at most 7 days ahead' }]);
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM nifi_ops.alert_group_ack WHERE group_key = ANY($1)', [
      [key, 'RUN_FAILED:JOB:NO_SUCH_JOB'],
    ]);
    expect(rows[0].n).toBe(0);
  });

  it('lets exactly one of two operators acknowledging the same group at once change it (separate connections, repeated)', async () => {
    const rounds = sized(8, 60);
    const jobKey = 'GROUPS_RACE';
    const key = `RUN_FAILED:JOB:${jobKey}`;
    // the window between reading the group and writing the acknowledgement, for every new session of this database
    await t.sql.query(`ALTER DATABASE ${t.database.name} SET load_control.fault_points = 'acknowledge_alert_group=0.05'`);
    const racers = [
      createDb(t.database.url, { poolSize: 2, timeouts: t.config.database }),
      createDb(t.database.url, { poolSize: 2, timeouts: t.config.database }),
    ];
    try {
      for (let round = 0; round < rounds; round++) {
        await failures(jobKey, 1);
        const answers = await Promise.all(racers.map((db, i) => acknowledge(key, `round ${round} by ${i}`, `operator-${i}`, db)));
        expect(
          answers.filter((a) => a.changed),
          `round ${round}`,
        ).toHaveLength(1);
        expect((await group(key))!.unacknowledgedCount).toBe(0);
      }
      const audit = (await eventsNamed('ALERT_GROUP_ACKNOWLEDGED')).filter((e) => e.details.groupKey === key);
      expect(audit).toHaveLength(rounds);
    } finally {
      await t.sql.query(`ALTER DATABASE ${t.database.name} RESET load_control.fault_points`);
      await Promise.all(racers.map((db) => db.close()));
    }
  });
});
