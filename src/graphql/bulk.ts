import { z } from 'zod';
import * as f from '../domain/fields.js';
import { BULK_ACTIONS, BULK_OUTCOMES, bulkAction, type BulkActionResult, type BulkTarget } from '../domain/operator/bulk-action.js';
import { RUN_STATUSES } from '../domain/states.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { date, inputEnum, inputObject } from './inputs.js';
import { defineMutation } from './mutation.js';
import { OPERATOR } from './roles.js';

const BulkActionKindEnum = builder.enumType('BulkActionKind', {
  description:
    'CANCEL_RUNS: the active runs; RESEND_DISPATCHES: their DEAD dispatches; REISSUE_PARTITIONS: the RUNNING partitions of ' +
    'EXTRACTING runs whose owner has not reported for monitor.stallAfter (timed out).',
  values: BULK_ACTIONS,
});
const BulkOutcomeEnum = builder.enumType('BulkOutcome', { values: BULK_OUTCOMES });

const BulkTargetRef = builder.objectRef<BulkTarget>('BulkTarget').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (p) => p.runId }),
    jobKey: t.exposeString('jobKey'),
    businessKey: t.exposeString('businessKey'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    dispatchId: t.field({ type: 'UUID', nullable: true, resolve: (p) => p.dispatchId }),
    dispatchType: t.exposeString('dispatchType', { nullable: true }),
    partitionId: t.exposeString('partitionId', { nullable: true }),
    outcome: t.field({
      type: BulkOutcomeEnum,
      description: 'What became of it, or in a dry run what would, as things stand.',
      resolve: (p) => p.outcome,
    }),
    code: t.exposeString('code', { nullable: true, description: "REFUSED: the rule's code." }),
  }),
});

const BulkRefusalRef = builder.objectRef<{ code: string; count: number }>('BulkRefusal').implement({
  fields: (t) => ({ code: t.exposeString('code'), count: t.exposeInt('count') }),
});

const BulkActionPayload = builder.objectRef<BulkActionResult>('BulkActionPayload').implement({
  fields: (t) => ({
    bulkActionId: t.field({
      type: 'UUID',
      nullable: true,
      description: "The id every changed row's event names; null for a dry run.",
      resolve: (p) => p.bulkActionId,
    }),
    action: t.field({ type: BulkActionKindEnum, resolve: (p) => p.action }),
    dryRun: t.exposeBoolean('dryRun'),
    limit: t.exposeInt('limit', { description: 'The most targets one bulk action may have.' }),
    targets: t.field({ type: [BulkTargetRef], resolve: (p) => p.targets }),
    changed: t.exposeInt('changed'),
    alreadySo: t.exposeInt('alreadySo'),
    refused: t.exposeInt('refused'),
    refusals: t.field({ type: [BulkRefusalRef], description: 'Refused targets by code.', resolve: (p) => p.refusals }),
  }),
});

const bulkFilter = z
  .object({
    jobKey: f.optional(f.jobKey),
    status: f.optional(inputEnum(RunStatusEnum, RUN_STATUSES)).describe("The run's status."),
    businessDateFrom: f.optional(date).describe('Runs whose business key is a date on or after this one.'),
    businessDateTo: f.optional(date).describe('Runs whose business key is a date on or before this one.'),
    errorCode: f.optional(f.requiredText(100)).describe("The run's error code."),
  })
  .refine((filter) => !filter.businessDateFrom || !filter.businessDateTo || filter.businessDateFrom <= filter.businessDateTo, {
    message: 'businessDateFrom must not be after businessDateTo',
    path: ['businessDateTo'],
  });

defineMutation('bulkAction', {
  roles: OPERATOR,
  description:
    'One action over the rows a filter selects, at most bulk.maxTargets (else 422 BULK_LIMIT_EXCEEDED, nothing changed). ' +
    'dryRun: true lists the targets and what would become of each; false selects them again and changes each in its ' +
    'own transaction through cancelRun, resendDispatch or reissuePartition (each event names the bulk action), then ' +
    'answers the summary: changed, already so, refused by code.',
  input: z
    .object({
      action: inputEnum(BulkActionKindEnum, BULK_ACTIONS),
      filter: inputObject('BulkFilterInput', bulkFilter),
      dryRun: z.boolean(),
      reason: f.optional(f.reason).describe('5 to 2000 characters, recorded in every event; required unless dryRun.'),
    })
    .refine((input) => input.dryRun || input.reason !== null, { message: 'is required unless dryRun', path: ['reason'] }),
  payload: BulkActionPayload,
  run: (cmd, ctx) =>
    bulkAction(ctx.services.db, cmd, {
      maxTargets: ctx.services.config.bulk.maxTargets,
      stallAfterMs: ctx.services.config.monitor.stallAfter,
    }),
});
