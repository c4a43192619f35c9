// MonitorSummary.alertGroups, acknowledgeAlertGroup and snoozeAlertGroup over HTTP: the filters, the roles, the input
// checks and the error envelope. The grouping, the re-raise and the race are test/domain/monitor/alert-groups.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACKNOWLEDGE_ALERT_GROUP as ACKNOWLEDGE, SNOOZE_ALERT_GROUP as SNOOZE } from '../../../schema/documents/operator.js';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import { createRun, failCreatedRun } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

interface Group {
  groupKey: string;
  kind: string;
  severity: string;
  causeType: string;
  cause: string;
  count: number;
  acknowledged: boolean;
  unacknowledgedCount: number;
  acknowledgement: { by: string; note: string } | null;
  snooze: { until: string; by: string; note: string } | null;
  latest: { runId: string | null; groupKey: string };
}

const GROUPS = `query($kinds: [AlertKind!], $severities: [AlertSeverity!], $includeSnoozed: Boolean) {
  monitorSummary { alertGroups(kinds: $kinds, severities: $severities, includeSnoozed: $includeSnoozed) {
    groupKey kind severity causeType cause count acknowledged unacknowledgedCount
    acknowledgement { by note } snooze { until by note } latest { runId groupKey } } } }`;

async function groups(variables: Record<string, unknown> = {}, token: TokenName = 'viewer'): Promise<Group[]> {
  const res = await api.gql<{ monitorSummary: { alertGroups: Group[] } }>(GROUPS, variables, { token });
  expect(res.status).toBe(200);
  return res.body.data!.monitorSummary.alertGroups;
}

async function failed(jobKey: string): Promise<string> {
  const { runId } = await createRun(api, { jobKey });
  await failCreatedRun(api, runId);
  return runId;
}

const acknowledge = (groupKey: string, note: string, token: TokenName | null = 'operator') =>
  api.gql(ACKNOWLEDGE, { input: { groupKey, note } }, { token });
const snooze = (groupKey: string, until: string, note = 'maintenance window', token: TokenName | null = 'operator') =>
  api.gql(SNOOZE, { input: { groupKey, until, note } }, { token });
const inHours = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();

async function ackRows(groupKey: string) {
  const { rows } = await api.sql.query('SELECT * FROM nifi_ops.alert_group_ack WHERE group_key = $1', [groupKey]);
  return rows;
}

describe('alertGroups', () => {
  it('lists each cause once with its count, filtered by kind and level, snoozed ones only when asked', async () => {
    const first = await failed('GROUPS_API_LIST');
    await failed('GROUPS_API_LIST');
    const key = 'RUN_FAILED:JOB:GROUPS_API_LIST';
    const mine = (await groups()).filter((g) => g.groupKey === key);
    expect(mine).toEqual([
      expect.objectContaining({ kind: 'RUN_FAILED', severity: 'ERROR', causeType: 'JOB', cause: 'GROUPS_API_LIST', count: 2 }),
    ]);
    expect(mine[0]!.latest.groupKey).toBe(key);
    expect([first]).not.toContain(mine[0]!.latest.runId);

    expect((await groups({ kinds: ['RUN_STALE'] })).map((g) => g.groupKey)).not.toContain(key);
    expect((await groups({ kinds: ['RUN_FAILED'], severities: ['ERROR'] })).map((g) => g.groupKey)).toContain(key);
    expect((await groups({ severities: ['WARN'] })).map((g) => g.groupKey)).not.toContain(key);

    expect((await snooze(key, inHours(2))).status).toBe(200);
    expect((await groups()).map((g) => g.groupKey)).not.toContain(key);
    const snoozed = (await groups({ includeSnoozed: true })).find((g) => g.groupKey === key);
    expect(snoozed?.snooze).toMatchObject({ by: 'alice-operator', note: 'maintenance window' });
  });

  it('shows who acknowledged a group and why, until a new alert of it raises it again', async () => {
    await failed('GROUPS_API_ACK');
    const key = 'RUN_FAILED:JOB:GROUPS_API_ACK';
    const res = await acknowledge(key, 'known: the source is being migrated');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ acknowledgeAlertGroup: { groupKey: key, changed: true, count: 1 } });
    expect((await acknowledge(key, 'again, nothing new')).body.data).toEqual({
      acknowledgeAlertGroup: { groupKey: key, changed: false, count: 1 },
    });
    const acked = (await groups()).find((g) => g.groupKey === key)!;
    expect(acked).toMatchObject({
      acknowledged: true,
      unacknowledgedCount: 0,
      acknowledgement: { by: 'alice-operator', note: 'known: the source is being migrated' },
    });
    await failed('GROUPS_API_ACK');
    expect((await groups()).find((g) => g.groupKey === key)).toMatchObject({ acknowledged: false, unacknowledgedCount: 1, count: 2 });
  });
});

describe('acknowledgeAlertGroup and snoozeAlertGroup', () => {
  it('need the operator role, before the input is looked at', async () => {
    await failed('GROUPS_API_ROLES');
    const key = 'RUN_FAILED:JOB:GROUPS_API_ROLES';
    for (const token of ['viewer', 'nifi'] as const) {
      const ack = await acknowledge(key, 'x', token);
      expect([ack.status, ack.code]).toEqual([403, 'FORBIDDEN']);
      const snoozed = await snooze(key, inHours(1), 'x', token);
      expect([snoozed.status, snoozed.code]).toEqual([403, 'FORBIDDEN']);
    }
    const anonymous = await acknowledge(key, 'known issue', null);
    expect([anonymous.status, anonymous.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(await ackRows(key)).toEqual([]);
  });

  it('refuse a bad note, key or time with 422, and a group with no alert now with 404, changing nothing', async () => {
    await failed('GROUPS_API_INPUT');
    const key = 'RUN_FAILED:JOB:GROUPS_API_INPUT';
    const short = await acknowledge(key, ' ab ');
    expect([short.status, short.code, short.details]).toMatchObject([422, 'INVALID_INPUT', { field: 'input.note' }]);
    expect((await acknowledge(key, 'n'.repeat(2001))).status).toBe(422);
    const empty = await acknowledge('', 'known issue');
    expect([empty.status, empty.details]).toMatchObject([422, { field: 'input.groupKey' }]);
    expect((await acknowledge('k'.repeat(301), 'known issue')).status).toBe(422);

    const past = await snooze(key, inHours(-1));
    expect([past.status, past.code, past.details]).toEqual([
      422,
      'INVALID_INPUT',
      { field: 'input.until', reason: 'must be in the future' },
    ]);
    const far = await snooze(key, inHours(24 * 8));
    expect([far.status, far.details]).toEqual([422, { field: 'input.until', reason: 'must be at most 7 days ahead' }]);
    expect((await snooze(key, 'tomorrow')).status).toBe(422);
    expect((await snooze(key, inHours(1), 'x')).status).toBe(422);

    const missing = await acknowledge('RUN_FAILED:JOB:NO_SUCH_JOB', 'known issue');
    expect([missing.status, missing.code, missing.details]).toEqual([
      404,
      'ALERT_GROUP_NOT_FOUND',
      { groupKey: 'RUN_FAILED:JOB:NO_SUCH_JOB' },
    ]);
    expect(missing.headers.get('x-error-code')).toBe('ALERT_GROUP_NOT_FOUND');
    expect((await snooze('RUN_FAILED:JOB:NO_SUCH_JOB', inHours(1))).code).toBe('ALERT_GROUP_NOT_FOUND');

    expect(await ackRows(key)).toEqual([]);
    const { rows } = await api.sql.query(
      `SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE event_name LIKE 'ALERT_GROUP_%'
                                            AND details->>'groupKey' = ANY($1)`,
      [[key, 'RUN_FAILED:JOB:NO_SUCH_JOB']],
    );
    expect(rows[0].n).toBe(0);
  });
});
