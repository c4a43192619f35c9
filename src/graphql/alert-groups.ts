// acknowledgeAlertGroup and snoozeAlertGroup: an operator's word on a group of alerts (MonitorSummary.alertGroups).
import { z } from 'zod';
import * as f from '../domain/fields.js';
import {
  acknowledgeAlertGroupOperation,
  MAX_SNOOZE_DAYS,
  snoozeAlertGroupOperation,
  type AcknowledgeAlertGroupResult,
  type SnoozeAlertGroupResult,
} from '../domain/monitor/alert-groups.js';
import { alertThresholds } from '../domain/monitor/monitor-summary.js';
import { perform } from '../db/operation.js';
import { builder } from './builder.js';
import { dateTime } from './inputs.js';
import { defineMutation } from './mutation.js';
import { OPERATOR } from './roles.js';

const groupKey = z.string().min(1, 'must not be empty').max(300, 'at most 300 characters').describe('An AlertGroup’s groupKey.');
const note = f.reason.describe('5 to 2000 characters; recorded with the token’s name in the event log.');

const AcknowledgeAlertGroupPayload = builder.objectRef<AcknowledgeAlertGroupResult>('AcknowledgeAlertGroupPayload').implement({
  fields: (t) => ({
    groupKey: t.exposeString('groupKey'),
    changed: t.exposeBoolean('changed', { description: 'false: already acknowledged, and nothing new raised since.' }),
    count: t.exposeInt('count', { description: 'The alerts the acknowledgement covers.' }),
  }),
});

defineMutation('acknowledgeAlertGroup', {
  roles: OPERATOR,
  description:
    'Acknowledges the alerts of a group present now, with a note. An alert of the group raised later is not covered: the group is ' +
    'raised again. 404 ALERT_GROUP_NOT_FOUND when the group has no alert now.',
  input: z.object({ groupKey, note }),
  payload: AcknowledgeAlertGroupPayload,
  run: (command, ctx) =>
    perform(ctx.services.db, acknowledgeAlertGroupOperation, { ...command, thresholds: alertThresholds(ctx.services.config) }, ctx.actor),
});

const SnoozeAlertGroupPayload = builder.objectRef<SnoozeAlertGroupResult>('SnoozeAlertGroupPayload').implement({
  fields: (t) => ({
    groupKey: t.exposeString('groupKey'),
    changed: t.exposeBoolean('changed', { description: 'false: already snoozed until that time.' }),
    until: t.field({ type: 'DateTime', resolve: (p) => p.until }),
  }),
});

defineMutation('snoozeAlertGroup', {
  roles: OPERATOR,
  description:
    'Hides a group (alertGroups without includeSnoozed, the console and its toasts) until a time, whatever is raised meanwhile. ' +
    `until: in the future, at most ${MAX_SNOOZE_DAYS} days ahead (else 422); snoozing again replaces it. 404 ALERT_GROUP_NOT_FOUND ` +
    'when the group has no alert now.',
  input: z.object({ groupKey, until: dateTime.describe(`At most ${MAX_SNOOZE_DAYS} days ahead.`), note }),
  payload: SnoozeAlertGroupPayload,
  run: (command, ctx) =>
    perform(ctx.services.db, snoozeAlertGroupOperation, { ...command, thresholds: alertThresholds(ctx.services.config) }, ctx.actor),
});
