import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import * as f from '../domain/fields.js';
import { JUDGED_STAGES } from '../domain/validation/judge-metrics.js';
import { markStageValidated, type MarkStageValidatedResult } from '../domain/validation/mark-stage-validated.js';
import { METRIC_RESULTS, recordMetrics, type RecordMetricsResult } from '../domain/validation/record-metrics.js';
import { startValidation, type StartValidationResult } from '../domain/validation/start-validation.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { NIFI } from './roles.js';
import { actorName } from './runs.js';

export const MetricResultEnum = builder.enumType('MetricResult', { values: METRIC_RESULTS });

// ---- startValidation ----

const StartValidationInput = builder.inputType('StartValidationInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    dispatchId: t.field({ type: 'UUID', required: true, description: 'The X-Dispatch-Id the receiver got.' }),
    node: t.string(),
  }),
});

const startValidationSchema = z.object({
  runId: z.string(),
  dispatchId: z.string(),
  node: f.text(200).nullish().transform((v) => v ?? ''),
});

const StartValidationPayload = builder.objectRef<StartValidationResult>('StartValidationPayload').implement({
  description: 'Only the winner (started) gets the run context; every other caller gets nulls and drops its FlowFile.',
  fields: (t) => ({
    started: t.exposeBoolean('started'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    jobKey: t.exposeString('jobKey', { nullable: true }),
    businessKey: t.exposeString('businessKey', { nullable: true }),
    snapshotScn: t.field({ type: 'Decimal', nullable: true, resolve: (p) => p.snapshotScn }),
    hdfsRunPath: t.exposeString('hdfsRunPath', { nullable: true }),
    stageTable: t.exposeString('stageTable', { nullable: true }),
    sourceCount: t.field({ type: 'Long', nullable: true, resolve: (p) => p.sourceCount }),
    extractedCount: t.field({ type: 'Long', nullable: true, resolve: (p) => p.extractedCount }),
    sourceMetrics: t.field({ type: 'JSON', description: 'SOURCE metric name → value.', resolve: (p) => p.sourceMetrics }),
  }),
});

builder.mutationField('startValidation', (t) =>
  t.field({
    type: StartValidationPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: StartValidationInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(startValidationSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => startValidation(tx, cmd));
    },
  }),
);

// ---- recordMetrics ----

const MetricInput = builder.inputType('MetricInput', {
  fields: (t) => ({
    metricName: t.string({ required: true }),
    expectedValue: t.string(),
    actualValue: t.string(),
    tolerance: t.string(),
    result: t.field({ type: MetricResultEnum, required: true }),
    details: t.field({ type: 'JSON' }),
  }),
});

const RecordMetricsInput = builder.inputType('RecordMetricsInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    stage: t.string({ required: true, description: 'STAGING (while STAGE_VALIDATING) or TARGET (while PUBLISHED).' }),
    queryVersion: t.string({ defaultValue: 'v1' }),
    metrics: t.field({ type: [MetricInput], required: true }),
  }),
});

const optionalText = (max: number) => f.text(max).nullish().transform((v) => v ?? null);

const recordMetricsSchema = z.object({
  runId: z.string(),
  stage: z.enum(JUDGED_STAGES, { error: `must be ${JUDGED_STAGES.join(' or ')}` }),
  queryVersion: f.requiredText(50).nullish().transform((v) => v ?? 'v1'),
  metrics: z
    .array(
      z.object({
        metricName: z.string().regex(/^[A-Za-z0-9_.:-]{1,150}$/, 'must match ^[A-Za-z0-9_.:-]{1,150}$'),
        expectedValue: optionalText(2000),
        actualValue: optionalText(2000),
        tolerance: optionalText(100),
        result: z.enum(METRIC_RESULTS),
        details: f.jsonObject.nullish().transform((v) => v ?? {})
          .refine((v) => JSON.stringify(v).length <= 65_536, 'at most 64 KiB of JSON'),
      }),
    )
    .min(1, 'at least one metric')
    .max(500, 'at most 500 metrics')
    .superRefine((metrics, ctx) => {
      const seen = new Set<string>();
      metrics.forEach((m, i) => {
        if (seen.has(m.metricName)) ctx.addIssue({ code: 'custom', path: [i, 'metricName'], message: 'appears twice in one request' });
        seen.add(m.metricName);
      });
    }),
});

const RecordMetricsPayload = builder.objectRef<RecordMetricsResult>('RecordMetricsPayload').implement({
  fields: (t) => ({
    recorded: t.exposeInt('recorded'),
    failCount: t.exposeInt('failCount'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
  }),
});

builder.mutationField('recordMetrics', (t) =>
  t.field({
    type: RecordMetricsPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: RecordMetricsInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(recordMetricsSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => recordMetrics(tx, cmd));
    },
  }),
);

// ---- markStageValidated ----

const MarkStageValidatedInput = builder.inputType('MarkStageValidatedInput', {
  fields: (t) => ({ runId: t.field({ type: 'UUID', required: true }) }),
});

const MarkStageValidatedPayload = builder.objectRef<MarkStageValidatedResult>('MarkStageValidatedPayload').implement({
  description: 'stageValidated=false with reasons leaves the run as it is: NiFi then calls failRun.',
  fields: (t) => ({
    stageValidated: t.exposeBoolean('stageValidated'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    reasons: t.exposeStringList('reasons'),
    stagingCount: t.field({ type: 'Long', nullable: true, resolve: (p) => p.stagingCount }),
  }),
});

builder.mutationField('markStageValidated', (t) =>
  t.field({
    type: MarkStageValidatedPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: MarkStageValidatedInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { runId: args.input.runId, actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => markStageValidated(tx, cmd));
    },
  }),
);
