import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import * as f from '../domain/fields.js';
import type { ManifestPartition } from '../domain/manifest/invariants.js';
import { registerManifest } from '../domain/manifest/register-manifest.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { NIFI } from './roles.js';
import { actorName } from './runs.js';

const ManifestPartitionInput = builder.inputType('ManifestPartitionInput', {
  fields: (t) => ({
    partitionId: t.string({ required: true }),
    lowerBound: t.field({ type: 'Decimal' }),
    upperBound: t.field({ type: 'Decimal' }),
    upperInclusive: t.boolean({ defaultValue: false }),
    isNullPartition: t.boolean({ defaultValue: false }),
    expectedRowCount: t.field({ type: 'Long', required: true }),
  }),
});

const RegisterManifestInput = builder.inputType('RegisterManifestInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    snapshotScn: t.field({ type: 'Decimal' }),
    sourceCount: t.field({ type: 'Long', required: true }),
    sourceNullSplitCount: t.field({ type: 'Long', defaultValue: 0n }),
    sourceMinSplit: t.field({ type: 'Decimal' }),
    sourceMaxSplit: t.field({ type: 'Decimal' }),
    plannedPartitionCount: t.field({ type: 'Long', required: true }),
    sourceMetrics: t.field({ type: 'JSON', description: 'Metric name → value (string).' }),
    sourceMetricsVersion: t.string({ defaultValue: 'v1' }),
    partitions: t.field({ type: [ManifestPartitionInput], required: true }),
  }),
});

const metricName = z.string().regex(/^[A-Za-z0-9_.:-]{1,150}$/, 'metric names must match ^[A-Za-z0-9_.:-]{1,150}$');

const registerManifestSchema = z.object({
  runId: z.string(),
  snapshotScn: z.string().nullish().transform((v) => v ?? null),
  sourceCount: f.count,
  sourceNullSplitCount: f.count.nullish().transform((v) => v ?? 0n),
  sourceMinSplit: z.string().nullish().transform((v) => v ?? null),
  sourceMaxSplit: z.string().nullish().transform((v) => v ?? null),
  plannedPartitionCount: f.int32(1, 10_000),
  sourceMetrics: z
    .record(metricName, z.union([z.string(), z.number(), z.boolean()]).transform(String).pipe(f.text(2000)))
    .nullish()
    .transform((v) => v ?? {})
    .refine((v) => Object.keys(v).length <= 200, 'at most 200 entries'),
  sourceMetricsVersion: f.requiredText(50).nullish().transform((v) => v ?? 'v1'),
  partitions: z
    .array(
      z.object({
        partitionId: f.partitionId,
        lowerBound: z.string().nullish().transform((v) => v ?? null),
        upperBound: z.string().nullish().transform((v) => v ?? null),
        upperInclusive: z.boolean().nullish().transform((v) => v ?? false),
        isNullPartition: z.boolean().nullish().transform((v) => v ?? false),
        expectedRowCount: f.count,
      }),
    )
    .min(1, 'at least one partition')
    .max(10_000, 'at most 10000 partitions'),
});

const DispatchPartition = builder.objectRef<ManifestPartition>('DispatchPartition').implement({
  fields: (t) => ({
    partitionId: t.exposeString('partitionId'),
    lowerBound: t.field({ type: 'Decimal', nullable: true, resolve: (p) => p.lowerBound }),
    upperBound: t.field({ type: 'Decimal', nullable: true, resolve: (p) => p.upperBound }),
    upperInclusive: t.exposeBoolean('upperInclusive'),
    isNullPartition: t.exposeBoolean('isNullPartition'),
    expectedRowCount: t.field({ type: 'Long', resolve: (p) => p.expectedRowCount }),
  }),
});

interface RegisterManifestPayloadShape {
  runId: string;
  status: string;
  dispatchPartitions: ManifestPartition[];
  emptyPartitionCount: number;
  validationScheduled: boolean;
}

const RegisterManifestPayload = builder.objectRef<RegisterManifestPayloadShape>('RegisterManifestPayload').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (p) => p.runId }),
    status: t.field({ type: RunStatusEnum, resolve: (p) => p.status as never }),
    dispatchPartitions: t.field({ type: [DispatchPartition], resolve: (p) => p.dispatchPartitions }),
    emptyPartitionCount: t.exposeInt('emptyPartitionCount'),
    validationScheduled: t.exposeBoolean('validationScheduled'),
  }),
});

builder.mutationField('registerManifest', (t) =>
  t.field({
    type: RegisterManifestPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: RegisterManifestInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(registerManifestSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx, afterCommit) => registerManifest(tx, cmd, afterCommit));
    },
  }),
);
