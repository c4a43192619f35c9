import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import { cleanupCandidates, type CleanupCandidate } from '../domain/cleanup/cleanup-candidates.js';
import { recordCleanup, type RecordCleanupResult } from '../domain/cleanup/record-cleanup.js';
import * as f from '../domain/fields.js';
import { builder } from './builder.js';
import { RunStatusEnum } from './enums.js';
import { pagedCost } from './cost.js';
import { ANY_ROLE, NIFI_OR_OPERATOR } from './roles.js';
import { actorName } from './runs.js';

// ---- cleanupCandidates ----

const CleanupCandidateRef = builder.objectRef<CleanupCandidate>('CleanupCandidate').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (c) => c.runId }),
    jobKey: t.exposeString('jobKey'),
    businessKey: t.exposeString('businessKey'),
    status: t.field({ type: RunStatusEnum, resolve: (c) => c.status }),
    hdfsRunPath: t.exposeString('hdfsRunPath', { nullable: true }),
    stageTable: t.exposeString('stageTable', { nullable: true }),
    completedAt: t.field({ type: 'DateTime', description: 'When the run ended (its last heartbeat if it has no completion time).', resolve: (c) => c.completedAt }),
  }),
});

const MAX_CANDIDATES = 500;

const candidatesArgs = z.object({
  jobKey: f.jobKey.nullish().transform((v) => v ?? null),
  limit: z.number().int().min(1, 'must be >= 1').max(MAX_CANDIDATES, `must be <= ${MAX_CANDIDATES}`),
});

builder.queryField('cleanupCandidates', (t) =>
  t.field({
    type: [CleanupCandidateRef],
    nullable: true,
    extensions: ANY_ROLE,
    complexity: pagedCost('limit', 50, MAX_CANDIDATES),
    description: 'Ended runs past retention whose staging table and HDFS run path may be removed, oldest first (at most cleanup.maxBatch).',
    args: { jobKey: t.arg.string(), limit: t.arg({ type: 'Int', defaultValue: 50 }) },
    resolve: (_root, args, ctx) => {
      const parsed = f.parseCommand(candidatesArgs, args, 'args');
      const { cleanup } = ctx.services.config;
      return cleanupCandidates(ctx.services.db.prisma, { ...parsed, retention: cleanup, maxBatch: cleanup.maxBatch });
    },
  }),
);

// ---- recordCleanup ----

const RecordCleanupInput = builder.inputType('RecordCleanupInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID', required: true }),
    droppedTable: t.string(),
    deletedPath: t.string(),
  }),
});

const recordCleanupSchema = z.object({
  runId: z.string(),
  droppedTable: f.text(300).nullish().transform((v) => v ?? null),
  deletedPath: f.hdfsPath.nullish().transform((v) => v ?? null),
});

const RecordCleanupPayload = builder.objectRef<RecordCleanupResult>('RecordCleanupPayload').implement({
  fields: (t) => ({
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    changed: t.exposeBoolean('changed'),
  }),
});

builder.mutationField('recordCleanup', (t) =>
  t.field({
    type: RecordCleanupPayload,
    nullable: true,
    extensions: NIFI_OR_OPERATOR,
    description: 'Records that the staging table was dropped and the run path deleted; the API deletes nothing itself.',
    args: { input: t.arg({ type: RecordCleanupInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const cmd = { ...f.parseCommand(recordCleanupSchema, args.input), retention: ctx.services.config.cleanup, actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => recordCleanup(tx, cmd));
    },
  }),
);
