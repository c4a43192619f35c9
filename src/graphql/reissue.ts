import { z } from 'zod';
import { perform } from '../db/operation.js';
import * as f from '../domain/fields.js';
import { reissuePartitionOperation } from '../domain/partitions/reissue-partition.js';
import type { PartitionStatus } from '../domain/states.js';
import { builder } from './builder.js';
import { PartitionStatusEnum } from './enums.js';
import { uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { OPERATOR } from './roles.js';

const ReissuePartitionPayload = builder
  .objectRef<{ partitionStatus: PartitionStatus; dispatchId: string }>('ReissuePartitionPayload')
  .implement({
    fields: (t) => ({
      partitionStatus: t.field({ type: PartitionStatusEnum, resolve: (p) => p.partitionStatus }),
      dispatchId: t.field({ type: 'UUID', resolve: (p) => p.dispatchId }),
    }),
  });

defineMutation('reissuePartition', {
  roles: OPERATOR,
  description:
    "The sweeper's REISSUE on demand: a RUNNING or PENDING partition of an EXTRACTING run goes back to RETRY " +
    'without owner, its written chunks are invalidated and NiFi is asked to extract it again with the same SCN.',
  input: z.object({
    runId: uuid,
    partitionId: f.partitionId,
    reason: f.reason.describe('Why the partition is taken from its owner (5 to 2000 characters); kept in the event log.'),
  }),
  payload: ReissuePartitionPayload,
  run: (input, ctx) => perform(ctx.services.db, reissuePartitionOperation, { ...input, errorCode: 'OPERATOR_REISSUE' }, ctx.actor),
});
