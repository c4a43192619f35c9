import { z } from 'zod';
import * as f from '../domain/fields.js';
import type { DispatchStatus, RunStatus } from '../domain/states.js';
import { ALERT_KINDS, ALERT_SEVERITIES } from '../config/alert-kinds.js';
import {
  ALERT_CAUSE_TYPES,
  alertThresholds,
  MAX_ALERT_GROUPS,
  monitorSummary,
  type Alert,
  type AlertGroup,
  type MonitorSummary,
  type StatusCount,
} from '../domain/monitor/monitor-summary.js';
import { builder } from './builder.js';
import { DispatchStatusEnum, RunStatusEnum } from './enums.js';
import { argsOf, inputEnum } from './inputs.js';
import { MAX_ALERT_LIMIT } from '../realtime/monitor-feed.js';
import { ANY_ROLE } from './roles.js';

export const AlertKindEnum = builder.enumType('AlertKind', { values: ALERT_KINDS });
export const AlertSeverityEnum = builder.enumType('AlertSeverity', { values: ALERT_SEVERITIES });

const RunStatusCount = builder.objectRef<StatusCount<RunStatus>>('RunStatusCount').implement({
  fields: (t) => ({
    status: t.field({ type: RunStatusEnum, resolve: (c) => c.status }),
    count: t.exposeInt('count'),
  }),
});

const DispatchStatusCount = builder.objectRef<StatusCount<DispatchStatus>>('DispatchStatusCount').implement({
  fields: (t) => ({
    status: t.field({ type: DispatchStatusEnum, resolve: (c) => c.status }),
    count: t.exposeInt('count'),
  }),
});

export const AlertRef = builder.objectRef<Alert>('Alert').implement({
  fields: (t) => ({
    kind: t.field({ type: AlertKindEnum, resolve: (a) => a.kind }),
    severity: t.field({ type: AlertSeverityEnum, resolve: (a) => a.severity }),
    runId: t.field({ type: 'UUID', nullable: true, resolve: (a) => a.runId }),
    jobKey: t.exposeString('jobKey', { nullable: true }),
    businessKey: t.exposeString('businessKey', { nullable: true }),
    status: t.field({ type: RunStatusEnum, nullable: true, resolve: (a) => a.status }),
    at: t.field({ type: 'DateTime', nullable: true, resolve: (a) => a.at }),
    message: t.exposeString('message', { nullable: true }),
    dispatchId: t.field({ type: 'UUID', nullable: true, description: 'DISPATCH_DEAD only.', resolve: (a) => a.dispatchId }),
    partitionId: t.exposeString('partitionId', { nullable: true }),
    consumer: t.exposeString('consumer', {
      nullable: true,
      description:
        'The gate: OBSERVATION_MISSING and OBSERVATION_LATE (jobKey: the job, businessKey: the date), and a GATE_READY DISPATCH_DEAD.',
    }),
    groupKey: t.exposeString('groupKey', { description: 'The AlertGroup it belongs to (MonitorSummary.alertGroups).' }),
  }),
});

const AlertCauseTypeEnum = builder.enumType('AlertCauseType', {
  values: ALERT_CAUSE_TYPES,
  description:
    'What a group’s alerts have in common: a webhook receiver (its DEAD ALERT_WEBHOOK calls), a gate’s consumer, a job, or the processes.',
});

const AlertAcknowledgementRef = builder.objectRef<NonNullable<AlertGroup['acknowledgement']>>('AlertAcknowledgement').implement({
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (a) => a.at }),
    by: t.exposeString('by', { description: 'The name of the token (or person) who acknowledged it.' }),
    note: t.exposeString('note'),
  }),
});

const AlertSnoozeRef = builder.objectRef<NonNullable<AlertGroup['snooze']>>('AlertSnooze').implement({
  fields: (t) => ({
    until: t.field({ type: 'DateTime', resolve: (s) => s.until }),
    at: t.field({ type: 'DateTime', description: 'When it was snoozed.', resolve: (s) => s.at }),
    by: t.exposeString('by'),
    note: t.exposeString('note'),
  }),
});

const AlertGroupRef = builder.objectRef<AlertGroup>('AlertGroup').implement({
  description: 'The alerts present now of one kind and one cause, however many: what an operator acknowledges or snoozes.',
  fields: (t) => ({
    groupKey: t.exposeString('groupKey', { description: '"KIND:CAUSE_TYPE:cause"; acknowledgeAlertGroup and snoozeAlertGroup take it.' }),
    kind: t.field({ type: AlertKindEnum, resolve: (g) => g.kind }),
    severity: t.field({ type: AlertSeverityEnum, description: 'ERROR when any of its alerts is.', resolve: (g) => g.severity }),
    causeType: t.field({ type: AlertCauseTypeEnum, resolve: (g) => g.causeType }),
    cause: t.exposeString('cause', { description: 'The receiver’s name, the consumer or the job key; empty for the processes.' }),
    count: t.exposeInt('count', { description: 'Its alerts present now.' }),
    firstAt: t.field({ type: 'DateTime', nullable: true, description: 'Its oldest alert’s time.', resolve: (g) => g.firstAt }),
    lastAt: t.field({ type: 'DateTime', nullable: true, description: 'Its newest alert’s time.', resolve: (g) => g.lastAt }),
    latest: t.field({ type: AlertRef, description: 'Its newest alert.', resolve: (g) => g.latest }),
    acknowledgement: t.field({
      type: AlertAcknowledgementRef,
      nullable: true,
      description: 'The latest acknowledgement; it covers the alerts present when it was made.',
      resolve: (g) => g.acknowledgement,
    }),
    unacknowledgedCount: t.exposeInt('unacknowledgedCount', {
      description:
        'Its alerts no acknowledgement covers (all of them when never acknowledged): above 0 after one, the group is raised again.',
    }),
    acknowledged: t.boolean({
      description: 'Acknowledged, and nothing new raised since.',
      resolve: (g) => g.acknowledgement !== null && g.unacknowledgedCount === 0,
    }),
    snooze: t.field({ type: AlertSnoozeRef, nullable: true, description: 'Present while the snooze lasts.', resolve: (g) => g.snooze }),
  }),
});

const alertGroupsArgs = z.object({
  kinds: f.optional(z.array(inputEnum(AlertKindEnum, ALERT_KINDS)).max(ALERT_KINDS.length)).describe('Only these kinds.'),
  severities: f
    .optional(z.array(inputEnum(AlertSeverityEnum, ALERT_SEVERITIES)).max(ALERT_SEVERITIES.length))
    .describe('Only these levels.'),
  includeSnoozed: f.withDefault(z.boolean(), false).describe('Snoozed groups too (left out by default).'),
});

export const MonitorSummaryRef = builder.objectRef<MonitorSummary>('MonitorSummary').implement({
  fields: (t) => ({
    serverTime: t.field({ type: 'DateTime', resolve: (s) => s.serverTime }),
    activeRuns: t.field({
      type: [RunStatusCount],
      description: 'Active runs by status (present statuses only).',
      resolve: (s) => s.activeRuns,
    }),
    recentRuns: t.field({
      type: [RunStatusCount],
      description: 'Runs that ended within the recent window, by status.',
      resolve: (s) => s.recentRuns,
    }),
    recentWindowHours: t.exposeInt('recentWindowHours'),
    dispatches: t.field({
      type: [DispatchStatusCount],
      description: 'The outbox backlog: PENDING, SENT and DEAD.',
      resolve: (s) => s.dispatches,
    }),
    cleanupDue: t.exposeInt('cleanupDue', { description: 'Runs due for cleanup, at most cleanup.maxBatch.' }),
    alerts: t.field({
      type: [AlertRef],
      description: 'ERROR before WARN, newest first.',
      // the summary's alertLimit bounds it; the cost counts the largest limit
      complexity: { field: 1, multiplier: MAX_ALERT_LIMIT },
      resolve: (s) => s.alerts,
    }),
    alertGroups: t.field({
      type: [AlertGroupRef],
      description: `The alerts present now grouped by kind and cause (at most ${MAX_ALERT_GROUPS}), ERROR before WARN, the latest first.`,
      complexity: { field: 1, multiplier: MAX_ALERT_GROUPS },
      args: argsOf(t, alertGroupsArgs),
      resolve: (s, args) => {
        const q = f.parseCommand(alertGroupsArgs, args, null);
        return s.alertGroups.filter(
          (g) =>
            (q.includeSnoozed || g.snooze === null) &&
            (q.kinds === null || q.kinds.includes(g.kind)) &&
            (q.severities === null || q.severities.includes(g.severity)),
        );
      },
    }),
  }),
});

/** The arguments of monitorSummary and monitorSummaryChanged. */
export const monitorSummaryArgs = z.object({
  alertLimit: z.number().int().min(1, 'must be >= 1').max(MAX_ALERT_LIMIT, `must be <= ${MAX_ALERT_LIMIT}`).default(100),
});

builder.queryField('monitorSummary', (t) =>
  t.field({
    type: MonitorSummaryRef,
    nullable: true,
    extensions: ANY_ROLE,
    args: argsOf(t, monitorSummaryArgs),
    resolve: (_root, args, ctx) => {
      const { config } = ctx.services;
      return monitorSummary(ctx.services.db.prisma, {
        alertLimit: f.parseCommand(monitorSummaryArgs, args, null).alertLimit,
        recovery: alertThresholds(config),
        retention: config.cleanup,
        maxBatch: config.cleanup.maxBatch,
      });
    },
  }),
);
