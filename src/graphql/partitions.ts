import { z } from 'zod';
import * as f from '../domain/fields.js';
import { CLAIM_REFUSAL_REASONS, claimPartitionOperation, type ClaimPartitionResult } from '../domain/partitions/claim-partition.js';
import { failPartitionOperation } from '../domain/partitions/fail-partition.js';
import type { PartitionStatus, RunStatus } from '../domain/states.js';
import { builder } from './builder.js';
import { PartitionStatusEnum, RunStatusEnum } from './enums.js';
import { uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { NIFI } from './roles.js';

// ---- claimPartition ----

const ClaimRefusalReasonEnum = builder.enumType('ClaimRefusalReason', {
  description: "Why a claim waits: POOL_FULL, the job's source pool has no free slot (try again after retryAfter).",
  values: CLAIM_REFUSAL_REASONS,
});

const ClaimPartitionPayload = builder.objectRef<ClaimPartitionResult>('ClaimPartitionPayload').implement({
  fields: (t) => ({
    claimed: t.exposeBoolean('claimed'),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus }),
    attempt: t.exposeInt('attempt'),
    reason: t.field({
      type: ClaimRefusalReasonEnum,
      nullable: true,
      description: 'Set when claimed is false only because the claim must wait; a wait, not a failure.',
      resolve: (p) => p.reason,
    }),
    retryAfter: t.exposeInt('retryAfter', { nullable: true, description: 'Seconds to wait before claiming again (with reason).' }),
    pool: t.exposeString('pool', { nullable: true, description: "The job's source pool, when it is in one." }),
  }),
});

defineMutation('claimPartition', {
  roles: NIFI,
  input: z.object({ runId: uuid, partitionId: f.partitionId, claimToken: uuid, workerNode: f.requiredText(200) }),
  payload: ClaimPartitionPayload,
  operation: claimPartitionOperation,
});

// ---- reportChunk ----

const ReportChunkPayload = builder
  .objectRef<{
    recorded: boolean;
    partitionStatus: PartitionStatus;
    runStatus: RunStatus;
    receivedChunks: number;
    chunkCount: number;
    validationScheduled: boolean;
  }>('ReportChunkPayload')
  .implement({
    fields: (t) => ({
      recorded: t.exposeBoolean('recorded'),
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus }),
      runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
      receivedChunks: t.exposeInt('receivedChunks'),
      chunkCount: t.exposeInt('chunkCount'),
      validationScheduled: t.exposeBoolean('validationScheduled'),
    }),
  });

defineMutation('reportChunk', {
  roles: NIFI,
  input: z.object({
    runId: uuid,
    partitionId: f.partitionId,
    claimToken: uuid,
    chunkIndex: f.int32(0),
    chunkCount: f.int32(1, 1_000_000),
    fragmentIdentifier: f.optional(f.text(100)),
    hdfsPath: f.hdfsPath(1500),
    recordCount: f.count,
    byteCount: f.optional(f.count),
  }),
  payload: ReportChunkPayload,
  run: async (cmd, ctx) => {
    const result = await ctx.services.chunkReporter.report(cmd);
    ctx.services.metrics.chunkReports.inc({ result: result.effect.toLowerCase() });
    return result;
  },
});

// ---- failPartition ----

const FailPartitionPayload = builder
  .objectRef<{ partitionStatus: PartitionStatus; runStatus: RunStatus; changed: boolean }>('FailPartitionPayload')
  .implement({
    fields: (t) => ({
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus }),
      runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
      changed: t.exposeBoolean('changed'),
    }),
  });

defineMutation('failPartition', {
  roles: NIFI,
  input: z.object({
    runId: uuid,
    partitionId: f.partitionId,
    claimToken: uuid,
    errorStage: f.requiredText(80),
    errorClass: f.requiredText(40),
    errorCode: f.requiredText(100),
    message: f.optional(f.text(2000), ''),
    attempt: f.optional(f.int32(0)),
  }),
  payload: FailPartitionPayload,
  operation: failPartitionOperation,
});
