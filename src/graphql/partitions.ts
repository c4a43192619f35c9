import { z } from 'zod';
import { inStatement, inTransaction } from '../db/transaction.js';
import * as f from '../domain/fields.js';
import { claimPartition } from '../domain/partitions/claim-partition.js';
import { failPartition } from '../domain/partitions/fail-partition.js';
import { builder } from './builder.js';
import { PartitionStatusEnum, RunStatusEnum } from './enums.js';
import { NIFI } from './roles.js';
import { actorName } from './runs.js';

// ---- claimPartition ----

const ClaimPartitionInput = builder.inputType('ClaimPartitionInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    partitionId: t.string({ required: true }),
    claimToken: t.field({ type: 'UUID', required: true }),
    workerNode: t.string({ required: true }),
  }),
});

const claimSchema = z.object({
  runId: z.string(),
  partitionId: f.partitionId,
  claimToken: z.string(),
  workerNode: f.requiredText(200),
});

const ClaimPartitionPayload = builder
  .objectRef<{ claimed: boolean; runStatus: string; partitionStatus: string; attempt: number }>('ClaimPartitionPayload')
  .implement({
    fields: (t) => ({
      claimed: t.exposeBoolean('claimed'),
      runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus as never }),
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus as never }),
      attempt: t.exposeInt('attempt'),
    }),
  });

builder.mutationField('claimPartition', (t) =>
  t.field({
    type: ClaimPartitionPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: ClaimPartitionInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(claimSchema, args.input), actor: actorName(ctx) };
      return inStatement(ctx.services.db, (sql, afterCommit) => claimPartition(sql, cmd, afterCommit));
    },
  }),
);

// ---- reportChunk ----

const ReportChunkInput = builder.inputType('ReportChunkInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    partitionId: t.string({ required: true }),
    claimToken: t.field({ type: 'UUID', required: true }),
    chunkIndex: t.field({ type: 'Long', required: true }),
    chunkCount: t.field({ type: 'Long', required: true }),
    fragmentIdentifier: t.string(),
    hdfsPath: t.string({ required: true }),
    recordCount: t.field({ type: 'Long', required: true }),
    byteCount: t.field({ type: 'Long' }),
  }),
});

const reportChunkSchema = z.object({
  runId: z.string(),
  partitionId: f.partitionId,
  claimToken: z.string(),
  chunkIndex: f.int32(0),
  chunkCount: f.int32(1, 1_000_000),
  fragmentIdentifier: f.text(100).nullish().transform((v) => v ?? null),
  hdfsPath: z.string().min(1, 'must not be empty').max(1500, 'at most 1500 characters').regex(/^\/\S*$/, 'must be an absolute path without spaces'),
  recordCount: f.count,
  byteCount: f.count.nullish().transform((v) => v ?? null),
});

const ReportChunkPayload = builder
  .objectRef<{ recorded: boolean; partitionStatus: string; runStatus: string; receivedChunks: number; chunkCount: number; validationScheduled: boolean }>(
    'ReportChunkPayload',
  )
  .implement({
    fields: (t) => ({
      recorded: t.exposeBoolean('recorded'),
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus as never }),
      runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus as never }),
      receivedChunks: t.exposeInt('receivedChunks'),
      chunkCount: t.exposeInt('chunkCount'),
      validationScheduled: t.exposeBoolean('validationScheduled'),
    }),
  });

builder.mutationField('reportChunk', (t) =>
  t.field({
    type: ReportChunkPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: ReportChunkInput, required: true }) },
    resolve: async (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(reportChunkSchema, args.input), actor: actorName(ctx) };
      const result = await ctx.services.chunkReporter.report(cmd);
      ctx.services.metrics.chunkReports.inc({ result: result.effect.toLowerCase() });
      return result;
    },
  }),
);

// ---- failPartition ----

const FailPartitionInput = builder.inputType('FailPartitionInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    partitionId: t.string({ required: true }),
    claimToken: t.field({ type: 'UUID', required: true }),
    errorStage: t.string({ required: true }),
    errorClass: t.string({ required: true }),
    errorCode: t.string({ required: true }),
    message: t.string(),
    attempt: t.field({ type: 'Long' }),
  }),
});

const failPartitionSchema = z.object({
  runId: z.string(),
  partitionId: f.partitionId,
  claimToken: z.string(),
  errorStage: f.requiredText(80),
  errorClass: f.requiredText(40),
  errorCode: f.requiredText(100),
  message: f.text(2000).nullish().transform((v) => v ?? ''),
  attempt: f.int32(0).nullish().transform((v) => v ?? null),
});

const FailPartitionPayload = builder
  .objectRef<{ partitionStatus: string; runStatus: string; changed: boolean }>('FailPartitionPayload')
  .implement({
    fields: (t) => ({
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus as never }),
      runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus as never }),
      changed: t.exposeBoolean('changed'),
    }),
  });

builder.mutationField('failPartition', (t) =>
  t.field({
    type: FailPartitionPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: FailPartitionInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(failPartitionSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => failPartition(tx, cmd));
    },
  }),
);
