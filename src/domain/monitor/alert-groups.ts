// Acknowledging and snoozing a group of alerts (issue 32, point 3). A group is the alerts present now of one kind
// and one cause (monitor-summary.ts, groupedAlertsCte); what an operator said of it is nifi_ops.alert_group_ack,
// and the event log (run-less events) says who said it and why.
//
// An acknowledgement covers the group's alerts present when it was made: an alert of the group not among them (a
// new failure, a webhook dead again) re-raises the group, and acknowledging it again covers that one too. A snooze
// hides the group from the console and its toasts until its time, whatever is raised meanwhile; then it is shown
// again, acknowledged or not as above.
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { DomainError, invalidInput } from '../../contract/errors.js';
import { recordApiEvent } from '../events/events.js';
import { groupedAlertsCte, type AlertThresholds } from './monitor-summary.js';

/** The longest snooze: a week, so that nothing is forgotten for good. */
export const MAX_SNOOZE_DAYS = 7;

interface GroupCommand {
  groupKey: string;
  note: string;
  actor: string;
  thresholds: AlertThresholds;
}

export interface AcknowledgeAlertGroupResult {
  groupKey: string;
  /** false: it was already acknowledged and nothing new was raised since. */
  changed: boolean;
  /** How many alerts the acknowledgement covers. */
  count: number;
}

export interface SnoozeAlertGroupResult {
  groupKey: string;
  /** false: it was already snoozed until that time. */
  changed: boolean;
  until: Date;
}

/** The digests of the group's alerts present now; ALERT_GROUP_NOT_FOUND when there are none. */
async function presentMembers(tx: Tx, thresholds: AlertThresholds, groupKey: string): Promise<string[]> {
  const rows = await tx.$queryRaw<Array<{ member: string }>>`
    ${groupedAlertsCte(thresholds, '24 hours')}
    SELECT member FROM grouped WHERE group_key = ${groupKey} ORDER BY member`;
  if (rows.length === 0) throw new DomainError('ALERT_GROUP_NOT_FOUND', { groupKey });
  return rows.map((r) => r.member);
}

async function acknowledgeAlertGroup(tx: Tx, cmd: GroupCommand): Promise<AcknowledgeAlertGroupResult> {
  const members = await presentMembers(tx, cmd.thresholds, cmd.groupKey);
  // the race window: two operators acknowledging the same group at once (test/domain/monitor/alert-groups.test.ts)
  await tx.$executeRaw`SELECT nifi_ops.fault_point('acknowledge_alert_group')`;
  // the WHERE decides who changed it: the second of two at once waits for the first's row and finds it covered
  const rows = await tx.$queryRaw<Array<{ acknowledged_at: Date }>>`
    INSERT INTO nifi_ops.alert_group_ack AS ack (group_key, acknowledged_at, acknowledged_by, acknowledged_note, acknowledged_members)
    VALUES (${cmd.groupKey}, clock_timestamp(), ${cmd.actor}, ${cmd.note}, ${members}::text[])
    ON CONFLICT (group_key) DO UPDATE
       SET acknowledged_at = EXCLUDED.acknowledged_at, acknowledged_by = EXCLUDED.acknowledged_by,
           acknowledged_note = EXCLUDED.acknowledged_note, acknowledged_members = EXCLUDED.acknowledged_members
     WHERE ack.acknowledged_at IS NULL OR NOT EXCLUDED.acknowledged_members <@ ack.acknowledged_members
    RETURNING acknowledged_at`;
  if (rows.length === 0) return { groupKey: cmd.groupKey, changed: false, count: members.length };
  await recordApiEvent(tx, {
    level: 'WARN',
    name: 'ALERT_GROUP_ACKNOWLEDGED',
    runId: null,
    actor: cmd.actor,
    message: cmd.note,
    details: { groupKey: cmd.groupKey, count: members.length, note: cmd.note },
  });
  return { groupKey: cmd.groupKey, changed: true, count: members.length };
}

async function snoozeAlertGroup(tx: Tx, cmd: GroupCommand & { until: Date }): Promise<SnoozeAlertGroupResult> {
  const [window] = await tx.$queryRaw<[{ past: boolean; too_far: boolean }]>`
    SELECT ${cmd.until}::timestamptz <= clock_timestamp() AS past,
           ${cmd.until}::timestamptz > clock_timestamp() + make_interval(days => ${MAX_SNOOZE_DAYS}) AS too_far`;
  if (window.past) throw invalidInput('input.until', 'must be in the future');
  if (window.too_far) throw invalidInput('input.until', `must be at most ${MAX_SNOOZE_DAYS} days ahead`);
  await presentMembers(tx, cmd.thresholds, cmd.groupKey);
  const rows = await tx.$queryRaw<Array<{ snoozed_until: Date }>>`
    INSERT INTO nifi_ops.alert_group_ack AS ack (group_key, snoozed_until, snoozed_at, snoozed_by, snoozed_note)
    VALUES (${cmd.groupKey}, ${cmd.until}::timestamptz, clock_timestamp(), ${cmd.actor}, ${cmd.note})
    ON CONFLICT (group_key) DO UPDATE
       SET snoozed_until = EXCLUDED.snoozed_until, snoozed_at = EXCLUDED.snoozed_at, snoozed_by = EXCLUDED.snoozed_by,
           snoozed_note = EXCLUDED.snoozed_note
     WHERE ack.snoozed_until IS DISTINCT FROM EXCLUDED.snoozed_until
    RETURNING snoozed_until`;
  if (rows.length === 0) return { groupKey: cmd.groupKey, changed: false, until: cmd.until };
  await recordApiEvent(tx, {
    level: 'WARN',
    name: 'ALERT_GROUP_SNOOZED',
    runId: null,
    actor: cmd.actor,
    message: cmd.note,
    details: { groupKey: cmd.groupKey, until: cmd.until.toISOString(), note: cmd.note },
  });
  return { groupKey: cmd.groupKey, changed: true, until: cmd.until };
}

export const acknowledgeAlertGroupOperation = inOneTransaction(acknowledgeAlertGroup);
export const snoozeAlertGroupOperation = inOneTransaction(snoozeAlertGroup);
