import { z } from 'zod';
import {
  cancelBackfillOperation,
  pauseBackfillOperation,
  releaseBackfillReadinessOperation,
  resumeBackfillOperation,
  type BackfillControlResult,
} from '../domain/backfills/backfill-controls.js';
import {
  BACKFILL_ORDERS,
  BACKFILL_REPROCESS,
  MAX_BACKFILL_CONCURRENCY,
  MAX_BACKFILL_DATES,
  PLAN_REASONS,
  PLANNED_ACTIONS,
  planBackfill,
  type PlannedDate,
} from '../domain/backfills/plan-backfill.js';
import {
  getBackfill,
  listBackfillDates,
  listBackfills,
  MAX_BACKFILLS_PAGE,
  type BackfillDateRecord,
  type BackfillRecord,
} from '../domain/backfills/queries.js';
import { startBackfillOperation, type StartBackfillResult } from '../domain/backfills/start-backfill.js';
import * as f from '../domain/fields.js';
import { allowedBackfillActions, BACKFILL_ACTIONS, BACKFILL_DATE_STATUSES, BACKFILL_STATUSES } from '../domain/states.js';
import { builder, type GraphQLContext } from './builder.js';
import { DispatchStatusEnum, RunStatusEnum } from './enums.js';
import { argsOf, date, inputEnum, uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, OPERATOR } from './roles.js';

const BackfillStatusEnum = builder.enumType('BackfillStatus', { values: BACKFILL_STATUSES });
const BackfillDateStatusEnum = builder.enumType('BackfillDateStatus', { values: BACKFILL_DATE_STATUSES });
const BackfillActionEnum = builder.enumType('BackfillAction', { values: BACKFILL_ACTIONS });
const BackfillReprocessEnum = builder.enumType('BackfillReprocess', { values: BACKFILL_REPROCESS });
const BackfillOrderEnum = builder.enumType('BackfillOrder', { values: BACKFILL_ORDERS });
const PlannedActionEnum = builder.enumType('PlannedAction', { values: PLANNED_ACTIONS });
const PlanReasonEnum = builder.enumType('PlanReason', { values: PLAN_REASONS });

const reader = (ctx: GraphQLContext) => ctx.services.db.prisma;
const DAY_MS = 86_400_000;

/** The range a plan and a start share: declared once. */
const backfillRange = z
  .object({
    jobKey: f.jobKey,
    from: date.describe('The first business date, YYYY-MM-DD.'),
    to: date.describe(`The last business date, at most ${MAX_BACKFILL_DATES} dates after from, counting both.`),
    reprocess: inputEnum(BackfillReprocessEnum, BACKFILL_REPROCESS).describe(
      'MISSING: dates never loaded; FAILED: those and dates whose latest run failed; ALL: every date without an active run.',
    ),
    order: f.withDefault(inputEnum(BackfillOrderEnum, BACKFILL_ORDERS), 'OLDEST_FIRST'),
  })
  .superRefine((range, ctx) => {
    const days = (Date.parse(range.to) - Date.parse(range.from)) / DAY_MS + 1;
    if (days < 1) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
    else if (days > MAX_BACKFILL_DATES)
      ctx.addIssue({ code: 'custom', path: ['to'], message: `at most ${MAX_BACKFILL_DATES} dates from from` });
  });

const PlannedDateRef = builder.objectRef<PlannedDate>('PlannedDate').implement({
  description: 'What a backfill would do with one business date, and why.',
  fields: (t) => ({
    businessDate: t.field({ type: 'Date', resolve: (p) => p.businessDate }),
    position: t.exposeInt('position'),
    action: t.field({ type: PlannedActionEnum, resolve: (p) => p.action }),
    reason: t.field({ type: PlanReasonEnum, resolve: (p) => p.reason }),
    latestRunId: t.field({ type: 'UUID', nullable: true, resolve: (p) => p.latestRunId }),
    latestRunStatus: t.field({ type: RunStatusEnum, nullable: true, resolve: (p) => p.latestRunStatus }),
    otherBackfillId: t.field({ type: 'UUID', nullable: true, resolve: (p) => p.otherBackfillId }),
  }),
});

const BackfillProgressRef = builder.objectRef<BackfillRecord['counts']>('BackfillProgress').implement({
  description: 'How many dates of the backfill are in each state; running counts the STARTING ones too.',
  fields: (t) => ({
    queued: t.int({ resolve: (c) => c.QUEUED }),
    running: t.int({ resolve: (c) => c.STARTING + c.RUNNING }),
    succeeded: t.int({ resolve: (c) => c.SUCCEEDED }),
    failed: t.int({ resolve: (c) => c.FAILED }),
    skipped: t.int({ resolve: (c) => c.SKIPPED }),
    cancelled: t.int({ resolve: (c) => c.CANCELLED }),
    total: t.int({ resolve: (c) => Object.values(c).reduce((a, b) => a + b, 0) }),
  }),
});

const BackfillDateRef = builder.objectRef<BackfillDateRecord>('BackfillDate').implement({
  fields: (t) => ({
    businessDate: t.field({ type: 'Date', resolve: (d) => d.businessDate }),
    position: t.exposeInt('position'),
    status: t.field({ type: BackfillDateStatusEnum, resolve: (d) => d.status }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it was skipped, failed or cancelled.' }),
    runId: t.field({ type: 'UUID', nullable: true, resolve: (d) => d.runId }),
    updatedAt: t.field({ type: 'DateTime', resolve: (d) => d.updatedAt }),
    startDispatchId: t.field({ type: 'UUID', nullable: true, resolve: (d) => d.startDispatchId }),
    startDispatchStatus: t.field({ type: DispatchStatusEnum, nullable: true, resolve: (d) => d.startDispatchStatus }),
  }),
});

const readinessHeld = (b: BackfillRecord) => !b.pushReadiness && b.readinessReleasedAt === null;

const BackfillRef = builder.objectRef<BackfillRecord>('Backfill').implement({
  fields: (t) => ({
    backfillId: t.field({ type: 'UUID', resolve: (b) => b.backfillId }),
    jobKey: t.exposeString('jobKey'),
    from: t.field({ type: 'Date', resolve: (b) => b.from }),
    to: t.field({ type: 'Date', resolve: (b) => b.to }),
    reprocess: t.field({ type: BackfillReprocessEnum, resolve: (b) => b.reprocess }),
    maxConcurrent: t.exposeInt('maxConcurrent'),
    order: t.field({ type: BackfillOrderEnum, resolve: (b) => b.order }),
    pushReadiness: t.exposeBoolean('pushReadiness'),
    status: t.field({ type: BackfillStatusEnum, resolve: (b) => b.status }),
    createdBy: t.exposeString('createdBy'),
    createdAt: t.field({ type: 'DateTime', resolve: (b) => b.createdAt }),
    pausedAt: t.field({ type: 'DateTime', nullable: true, resolve: (b) => b.pausedAt }),
    endedAt: t.field({ type: 'DateTime', nullable: true, resolve: (b) => b.endedAt }),
    readinessHeld: t.boolean({
      description: 'Started with pushReadiness false and not released yet: its readiness decisions are recorded, not pushed.',
      resolve: readinessHeld,
    }),
    readinessReleasedAt: t.field({ type: 'DateTime', nullable: true, resolve: (b) => b.readinessReleasedAt }),
    readinessReleasedBy: t.exposeString('readinessReleasedBy', { nullable: true }),
    progress: t.field({ type: BackfillProgressRef, resolve: (b) => b.counts }),
    allowedActions: t.field({
      type: [BackfillActionEnum],
      description: 'What an operator may do to it now, by its state machine.',
      resolve: (b) => allowedBackfillActions(b.status, readinessHeld(b)),
    }),
    dates: t.field({
      type: [BackfillDateRef],
      description: `Its dates in start order (at most ${MAX_BACKFILL_DATES}).`,
      complexity: { field: 1, multiplier: MAX_BACKFILL_DATES },
      resolve: (b, _a, ctx) => listBackfillDates(reader(ctx), b.backfillId),
    }),
  }),
});

builder.queryField('planBackfill', (t) =>
  t.field({
    type: [PlannedDateRef],
    // a read, open to every role as every query is; starting it is the operator's
    extensions: ANY_ROLE,
    description: 'The dry run of startBackfill: each date of the range, in start order, and what would happen to it. Changes nothing.',
    args: argsOf(t, backfillRange),
    resolve: (_root, args, ctx) => planBackfill(reader(ctx), f.parseCommand(backfillRange, args, 'args')),
  }),
);

const byBackfill = z.object({ backfillId: uuid });

builder.queryField('backfill', (t) =>
  t.field({
    type: BackfillRef,
    nullable: true,
    extensions: ANY_ROLE,
    args: argsOf(t, byBackfill),
    resolve: (_root, args, ctx) => getBackfill(reader(ctx), f.parseCommand(byBackfill, args, 'args').backfillId),
  }),
);

const listArgs = z.object({
  jobKey: f.optional(f.jobKey),
  openOnly: f.withDefault(z.boolean(), false),
  first: z.number().int().min(1).max(MAX_BACKFILLS_PAGE).default(50),
});

builder.queryField('backfills', (t) =>
  t.field({
    type: [BackfillRef],
    extensions: ANY_ROLE,
    description: 'Backfills, newest first: of one job, or only the RUNNING and PAUSED ones, when asked.',
    complexity: { field: 1, multiplier: MAX_BACKFILLS_PAGE },
    args: argsOf(t, listArgs),
    resolve: (_root, args, ctx) => {
      const q = f.parseCommand(listArgs, args, 'args');
      return listBackfills(reader(ctx), { jobKey: q.jobKey, openOnly: q.openOnly }, q.first);
    },
  }),
);

const StartBackfillPayload = builder.objectRef<StartBackfillResult>('StartBackfillPayload').implement({
  fields: (t) => ({
    backfill: t.field({ type: BackfillRef, resolve: (p) => p.backfill }),
    plan: t.field({ type: [PlannedDateRef], resolve: (p) => p.plan }),
  }),
});

defineMutation('startBackfill', {
  roles: OPERATOR,
  description:
    'Starts a backfill of the range: the plan (planBackfill) is recorded, its START dates queued and the others skipped ' +
    'with their reason. Load Control asks NiFi to start each date (START_LOAD to PG-05), never more than maxConcurrent ' +
    'at once; a paused job holds them. pushReadiness false: the readiness decisions its runs make are recorded, not ' +
    'pushed, until releaseBackfillReadiness.',
  input: backfillRange.safeExtend({
    maxConcurrent: f.int32(1, MAX_BACKFILL_CONCURRENCY),
    pushReadiness: f.withDefault(z.boolean(), true),
  }),
  payload: StartBackfillPayload,
  operation: startBackfillOperation,
});

const BackfillControlPayload = builder.objectRef<BackfillControlResult>('BackfillControlPayload').implement({
  fields: (t) => ({
    backfill: t.field({ type: BackfillRef, resolve: (p) => p.backfill }),
    changed: t.exposeBoolean('changed'),
  }),
});

const controlInput = z.object({ backfillId: uuid, reason: f.reason.describe('5 to 2000 characters.') });

defineMutation('pauseBackfill', {
  roles: OPERATOR,
  description: 'RUNNING → PAUSED: no new date starts; the loads under way finish. Replayed: changed: false.',
  input: controlInput,
  payload: BackfillControlPayload,
  operation: pauseBackfillOperation,
});

defineMutation('resumeBackfill', {
  roles: OPERATOR,
  description: 'PAUSED → RUNNING, and its next dates start at once. Replayed: changed: false.',
  input: controlInput,
  payload: BackfillControlPayload,
  operation: resumeBackfillOperation,
});

defineMutation('cancelBackfill', {
  roles: OPERATOR,
  description:
    'Ends a RUNNING or PAUSED backfill: dates not started are CANCELLED with their undelivered START_LOAD calls; loads ' +
    'under way finish and are still recorded. Replayed: changed: false.',
  input: controlInput,
  payload: BackfillControlPayload,
  operation: cancelBackfillOperation,
});

defineMutation('releaseBackfillReadiness', {
  roles: OPERATOR,
  description:
    'For a backfill started with pushReadiness false: pushes, once, the current readiness decision of each consumer and ' +
    'date it held (GATE_READY call and readinessChanged); its later decisions are pushed as they are made. Replayed: ' +
    'changed: false; a backfill that pushes its readiness: 409 BACKFILL_STATUS_MISMATCH.',
  input: controlInput,
  payload: BackfillControlPayload,
  operation: releaseBackfillReadinessOperation,
});
