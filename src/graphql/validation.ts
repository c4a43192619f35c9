import { z } from 'zod';
import * as f from '../domain/fields.js';
import { JUDGED_STAGES } from '../domain/validation/judge-metrics.js';
import { markStageValidatedOperation, type MarkStageValidatedResult } from '../domain/validation/mark-stage-validated.js';
import { METRIC_RESULTS, recordMetricsOperation, type RecordMetricsResult } from '../domain/validation/record-metrics.js';
import { startValidationOperation, type StartValidationResult } from '../domain/validation/start-validation.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { inputEnum, inputObject, uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { NIFI } from './roles.js';

const MetricResultEnum = builder.enumType('MetricResult', { values: METRIC_RESULTS });

// ---- startValidation ----

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

defineMutation('startValidation', {
  roles: NIFI,
  input: z.object({ runId: uuid, dispatchId: uuid.describe('The X-Dispatch-Id the receiver got.'), node: f.optional(f.text(200), '') }),
  payload: StartValidationPayload,
  operation: startValidationOperation,
});

// ---- recordMetrics ----

const metric = inputObject(
  'MetricInput',
  z.object({
    metricName: z.string().regex(/^[A-Za-z0-9_.:-]{1,150}$/, 'must match ^[A-Za-z0-9_.:-]{1,150}$'),
    expectedValue: f.optional(f.text(2000)),
    actualValue: f.optional(f.text(2000)),
    tolerance: f.optional(f.text(100)),
    result: inputEnum(MetricResultEnum, METRIC_RESULTS),
    details: f.optional(f.jsonObject, {}),
  }),
);

const RecordMetricsPayload = builder.objectRef<RecordMetricsResult>('RecordMetricsPayload').implement({
  fields: (t) => ({
    recorded: t.exposeInt('recorded'),
    failCount: t.exposeInt('failCount'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
  }),
});

defineMutation('recordMetrics', {
  roles: NIFI,
  input: z.object({
    runId: uuid,
    stage: z
      .enum(JUDGED_STAGES, { error: `must be ${JUDGED_STAGES.join(' or ')}` })
      .describe('STAGING (while STAGE_VALIDATING) or TARGET (while PUBLISHED).'),
    queryVersion: f.withDefault(f.requiredText(50), 'v1'),
    metrics: z
      .array(metric)
      .min(1, 'at least one metric')
      .max(500, 'at most 500 metrics')
      .superRefine((metrics, ctx) => {
        const seen = new Set<string>();
        metrics.forEach((m, i) => {
          if (seen.has(m.metricName)) ctx.addIssue({ code: 'custom', path: [i, 'metricName'], message: 'appears twice in one request' });
          seen.add(m.metricName);
        });
      }),
  }),
  payload: RecordMetricsPayload,
  operation: recordMetricsOperation,
});

// ---- markStageValidated ----

const MarkStageValidatedPayload = builder.objectRef<MarkStageValidatedResult>('MarkStageValidatedPayload').implement({
  description: 'stageValidated=false with reasons leaves the run as it is: NiFi then calls failRun.',
  fields: (t) => ({
    stageValidated: t.exposeBoolean('stageValidated'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    reasons: t.exposeStringList('reasons'),
    stagingCount: t.field({ type: 'Long', nullable: true, resolve: (p) => p.stagingCount }),
  }),
});

defineMutation('markStageValidated', {
  roles: NIFI,
  input: z.object({ runId: uuid }),
  payload: MarkStageValidatedPayload,
  operation: markStageValidatedOperation,
});
