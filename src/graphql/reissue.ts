import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import * as f from '../domain/fields.js';
import { reissuePartition } from '../domain/partitions/reissue-partition.js';
import { builder } from './builder.js';
import { PartitionStatusEnum } from './enums.js';
import { OPERATOR } from './roles.js';
import { actorName } from './runs.js';

const ReissuePartitionInput = builder.inputType('ReissuePartitionInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    partitionId: t.string({ required: true }),
    reason: t.string({ required: true, description: 'Why the partition is taken from its owner (5 to 2000 characters); kept in the event log.' }),
  }),
});

const reissueSchema = z.object({
  runId: z.string(),
  partitionId: f.partitionId,
  reason: z.string().trim().min(5, 'at least 5 characters').max(2000, 'at most 2000 characters'),
});

const ReissuePartitionPayload = builder
  .objectRef<{ partitionStatus: string; dispatchId: string }>('ReissuePartitionPayload')
  .implement({
    fields: (t) => ({
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus as never }),
      dispatchId: t.field({ type: 'UUID', resolve: (p) => p.dispatchId }),
    }),
  });

builder.mutationField('reissuePartition', (t) =>
  t.field({
    type: ReissuePartitionPayload,
    nullable: true,
    extensions: OPERATOR,
    description:
      "The sweeper's REISSUE on demand: a RUNNING or PENDING partition of an EXTRACTING run goes back to RETRY " +
      'without owner, its written chunks are invalidated and NiFi is asked to extract it again with the same SCN.',
    args: { input: t.arg({ type: ReissuePartitionInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const input = f.parseCommand(reissueSchema, args.input);
      const cmd = { ...input, errorCode: 'OPERATOR_REISSUE', actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx, afterCommit) => reissuePartition(tx, cmd, afterCommit));
    },
  }),
);
