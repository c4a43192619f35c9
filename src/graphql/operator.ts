import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import * as f from '../domain/fields.js';
import { cancelRun, type CancelRunResult } from '../domain/operator/cancel-run.js';
import { resendDispatch, type ResendDispatchResult } from '../domain/operator/resend-dispatch.js';
import { resolveUnknown, UNKNOWN_RESOLUTIONS, type ResolveUnknownResult } from '../domain/operator/resolve-unknown.js';
import { builder } from './builder.js';
import { DispatchStatusEnum, RunStatusEnum } from './enums.js';
import { OPERATOR } from './roles.js';
import { actorName } from './runs.js';

/** Why an operator acted: recorded with the token's name in the event log. */
const reason = z.string().trim().min(5, 'at least 5 characters').max(2000, 'at most 2000 characters');

export const UnknownResolutionEnum = builder.enumType('UnknownResolution', { values: UNKNOWN_RESOLUTIONS });

// ---- resolveUnknown ----

const ResolveUnknownInput = builder.inputType('ResolveUnknownInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    resolution: t.field({ type: UnknownResolutionEnum, required: true }),
    reason: t.string({ required: true, description: '5 to 2000 characters.' }),
  }),
});

const resolveUnknownSchema = z.object({ runId: z.string(), resolution: z.enum(UNKNOWN_RESOLUTIONS), reason });

const ResolveUnknownPayload = builder.objectRef<ResolveUnknownResult>('ResolveUnknownPayload').implement({
  fields: (t) => ({
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus as never }),
    changed: t.exposeBoolean('changed'),
  }),
});

builder.mutationField('resolveUnknown', (t) =>
  t.field({
    type: ResolveUnknownPayload,
    nullable: true,
    extensions: OPERATOR,
    description: 'PUBLISH_UNKNOWN → PUBLISHED (target validation still follows) or FAILED_PUBLISH, after checking the target.',
    args: { input: t.arg({ type: ResolveUnknownInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(resolveUnknownSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => resolveUnknown(tx, cmd));
    },
  }),
);

// ---- resendDispatch ----

const ResendDispatchInput = builder.inputType('ResendDispatchInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    dispatchId: t.field({ type: 'UUID', required: true }),
    reason: t.string({ description: 'Optional, 5 to 2000 characters; recorded in the event log.' }),
  }),
});

const resendDispatchSchema = z.object({
  runId: z.string(),
  dispatchId: z.string(),
  reason: reason.nullish().transform((v) => v ?? null),
});

const ResendDispatchPayload = builder.objectRef<ResendDispatchResult>('ResendDispatchPayload').implement({
  fields: (t) => ({
    dispatchId: t.field({ type: 'UUID', resolve: (p) => p.dispatchId }),
    status: t.field({ type: DispatchStatusEnum, resolve: (p) => p.status as never }),
  }),
});

builder.mutationField('resendDispatch', (t) =>
  t.field({
    type: ResendDispatchPayload,
    nullable: true,
    extensions: OPERATOR,
    description: 'A DEAD dispatch, or a SENT one never acknowledged, goes back to PENDING with a fresh attempt budget.',
    args: { input: t.arg({ type: ResendDispatchInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(resendDispatchSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx, afterCommit) => resendDispatch(tx, cmd, afterCommit));
    },
  }),
);

// ---- cancelRun ----

const CancelRunInput = builder.inputType('CancelRunInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    reason: t.string({ required: true, description: '5 to 2000 characters.' }),
  }),
});

const cancelRunSchema = z.object({ runId: z.string(), reason });

const CancelRunPayload = builder.objectRef<CancelRunResult>('CancelRunPayload').implement({
  fields: (t) => ({
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus as never }),
    changed: t.exposeBoolean('changed'),
    abandonedPartitions: t.exposeInt('abandonedPartitions'),
    cancelledDispatches: t.exposeInt('cancelledDispatches'),
  }),
});

builder.mutationField('cancelRun', (t) =>
  t.field({
    type: CancelRunPayload,
    nullable: true,
    extensions: OPERATOR,
    description:
      'Ends an active run that has not started publishing (CANCELLED); PUBLISHING and PUBLISH_UNKNOWN are refused. ' +
      'A PUBLISHED run may be cancelled: the events record it as published, then cancelled. Unfinished ' +
      'partitions become ABANDONED and undelivered dispatches CANCELLED.',
    args: { input: t.arg({ type: CancelRunInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(cancelRunSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => cancelRun(tx, cmd));
    },
  }),
);
