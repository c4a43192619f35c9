import { z } from 'zod';
import { perform } from '../db/operation.js';
import { cleanupCandidates, type CleanupCandidate } from '../domain/cleanup/cleanup-candidates.js';
import { recordCleanupOperation, type RecordCleanupResult } from '../domain/cleanup/record-cleanup.js';
import * as f from '../domain/fields.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { pagedCost } from './cost.js';
import { argsOf, uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, NIFI_OR_OPERATOR } from './roles.js';

// ---- cleanupCandidates ----

const CleanupCandidateRef = builder.objectRef<CleanupCandidate>('CleanupCandidate').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (c) => c.runId }),
    jobKey: t.exposeString('jobKey'),
    businessKey: t.exposeString('businessKey'),
    status: t.field({ type: RunStatusEnum, resolve: (c) => c.status }),
    hdfsRunPath: t.exposeString('hdfsRunPath', { nullable: true }),
    stageTable: t.exposeString('stageTable', { nullable: true }),
    completedAt: t.field({
      type: 'DateTime',
      description: 'When the run ended (its last heartbeat if it has no completion time).',
      resolve: (c) => c.completedAt,
    }),
  }),
});

const MAX_CANDIDATES = 500;

const candidatesArgs = z.object({
  jobKey: f.optional(f.jobKey),
  limit: z.number().int().min(1, 'must be >= 1').max(MAX_CANDIDATES, `must be <= ${MAX_CANDIDATES}`).default(50),
});

builder.queryField('cleanupCandidates', (t) =>
  t.field({
    type: [CleanupCandidateRef],
    nullable: true,
    extensions: ANY_ROLE,
    complexity: pagedCost('limit', 50, MAX_CANDIDATES),
    description: 'Ended runs past retention whose staging table and HDFS run path may be removed, oldest first (at most cleanup.maxBatch).',
    args: argsOf(t, candidatesArgs),
    resolve: (_root, args, ctx) => {
      const parsed = f.parseCommand(candidatesArgs, args, 'args');
      const { cleanup } = ctx.services.config;
      return cleanupCandidates(ctx.services.db.prisma, { ...parsed, retention: cleanup, maxBatch: cleanup.maxBatch });
    },
  }),
);

// ---- recordCleanup ----

const RecordCleanupPayload = builder.objectRef<RecordCleanupResult>('RecordCleanupPayload').implement({
  fields: (t) => ({
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    changed: t.exposeBoolean('changed'),
  }),
});

defineMutation('recordCleanup', {
  roles: NIFI_OR_OPERATOR,
  description: 'Records that the staging table was dropped and the run path deleted; the API deletes nothing itself.',
  input: z.object({
    runId: uuid,
    droppedTable: f.optional(f.text(300)),
    deletedPath: f.optional(f.hdfsPath(1500).refine((p) => !f.climbsOut(p), 'must not contain a .. segment')),
  }),
  payload: RecordCleanupPayload,
  run: (cmd, ctx) => perform(ctx.services.db, recordCleanupOperation, { ...cmd, retention: ctx.services.config.cleanup }, ctx.actor),
});
