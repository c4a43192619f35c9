import { z } from 'zod';
import * as f from '../domain/fields.js';
import type { DispatchStatus, RunStatus } from '../domain/states.js';
import { ALERT_KINDS, ALERT_SEVERITIES } from '../config/alert-kinds.js';
import { alertThresholds, monitorSummary, type Alert, type MonitorSummary, type StatusCount } from '../domain/monitor/monitor-summary.js';
import { builder } from './builder.js';
import { DispatchStatusEnum, RunStatusEnum } from './enums.js';
import { argsOf } from './inputs.js';
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
  }),
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
