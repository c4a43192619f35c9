import { z } from 'zod';
import * as f from '../domain/fields.js';
import type { ManifestPartition } from '../domain/manifest/invariants.js';
import { registerManifestOperation } from '../domain/manifest/register-manifest.js';
import type { RunStatus } from '../domain/states.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { decimal, inputObject, uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { NIFI } from './roles.js';

const metricName = z.string().regex(/^[A-Za-z0-9_.:-]{1,150}$/, 'metric names must match ^[A-Za-z0-9_.:-]{1,150}$');

const manifestPartition = inputObject(
  'ManifestPartitionInput',
  z.object({
    partitionId: f.partitionId,
    lowerBound: f.optional(decimal),
    upperBound: f.optional(decimal),
    upperInclusive: f.withDefault(z.boolean(), false),
    isNullPartition: f.withDefault(z.boolean(), false),
    expectedRowCount: f.count,
  }),
);

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
  status: RunStatus;
  dispatchPartitions: ManifestPartition[];
  emptyPartitionCount: number;
  validationScheduled: boolean;
}

const RegisterManifestPayload = builder.objectRef<RegisterManifestPayloadShape>('RegisterManifestPayload').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (p) => p.runId }),
    status: t.field({ type: RunStatusEnum, resolve: (p) => p.status }),
    dispatchPartitions: t.field({ type: [DispatchPartition], resolve: (p) => p.dispatchPartitions }),
    emptyPartitionCount: t.exposeInt('emptyPartitionCount'),
    validationScheduled: t.exposeBoolean('validationScheduled'),
  }),
});

defineMutation('registerManifest', {
  roles: NIFI,
  input: z.object({
    runId: uuid,
    snapshotScn: f.optional(decimal),
    sourceCount: f.count,
    sourceNullSplitCount: f.withDefault(f.count, 0n),
    sourceMinSplit: f.optional(decimal),
    sourceMaxSplit: f.optional(decimal),
    plannedPartitionCount: f.int32(1, 10_000),
    sourceMetrics: f
      .optional(z.record(metricName, z.union([z.string(), z.number(), z.boolean()]).transform(String).pipe(f.text(2000))), {})
      .refine((v) => Object.keys(v).length <= 200, 'at most 200 entries')
      .describe('Metric name → value (string).'),
    sourceMetricsVersion: f.withDefault(f.requiredText(50), 'v1'),
    partitions: z.array(manifestPartition).min(1, 'at least one partition').max(10_000, 'at most 10000 partitions'),
  }),
  payload: RegisterManifestPayload,
  operation: registerManifestOperation,
});
