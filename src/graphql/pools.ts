import { z } from 'zod';
import { maxRunning, poolName, retryAfterSeconds } from '../config/source-pools.js';
import * as f from '../domain/fields.js';
import { assignJobToPoolOperation, type AssignJobToPoolResult } from '../domain/pools/assign-job-to-pool.js';
import { definePoolOperation, type DefinePoolResult } from '../domain/pools/define-pool.js';
import { listSourcePools, type SourcePool } from '../domain/pools/source-pools.js';
import { builder } from './builder.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, OPERATOR } from './roles.js';

const SourcePoolRef = builder.objectRef<SourcePool>('SourcePool').implement({
  description: 'A named limit of RUNNING partitions shared by the jobs assigned to it (README "Source pools").',
  fields: (t) => ({
    name: t.exposeString('name'),
    maxRunning: t.exposeInt('maxRunning', { description: 'At most this many partitions of its jobs RUNNING at once; 0 closes it.' }),
    retryAfterSeconds: t.exposeInt('retryAfterSeconds', { description: 'What a claim refused with POOL_FULL is told to wait.' }),
    running: t.exposeInt('running', { description: 'Partitions of its jobs RUNNING now.' }),
    jobs: t.exposeStringList('jobs'),
    updatedAt: t.field({ type: 'DateTime', resolve: (p) => p.updatedAt }),
    updatedBy: t.exposeString('updatedBy'),
  }),
});

builder.queryField('sourcePools', (t) =>
  t.field({
    type: [SourcePoolRef],
    nullable: true,
    extensions: ANY_ROLE,
    description: 'Every source pool with its use, by name.',
    resolve: (_root, _args, ctx) => listSourcePools(ctx.services.db.prisma),
  }),
);

const DefinePoolPayload = builder.objectRef<DefinePoolResult>('DefinePoolPayload').implement({
  fields: (t) => ({
    pool: t.field({ type: SourcePoolRef, resolve: (p) => p.pool }),
    changed: t.exposeBoolean('changed'),
  }),
});

defineMutation('definePool', {
  roles: OPERATOR,
  description:
    'Creates a source pool or changes its limit (and the wait it tells refused claims). A lower limit takes no slot ' +
    'from a RUNNING partition: new claims wait until the use is under it. Recorded as SOURCE_POOL_DEFINED.',
  input: z.object({
    name: poolName,
    maxRunning,
    retryAfterSeconds: f.optional(retryAfterSeconds).describe("Seconds, 1 to 3600; left out: the pool's, or 30 for a new one."),
    reason: f.optional(f.reason).describe('Optional, 5 to 2000 characters; recorded in the event log.'),
  }),
  payload: DefinePoolPayload,
  operation: definePoolOperation,
});

const AssignJobToPoolPayload = builder.objectRef<AssignJobToPoolResult>('AssignJobToPoolPayload').implement({
  fields: (t) => ({
    jobKey: t.exposeString('jobKey'),
    pool: t.exposeString('pool', { nullable: true }),
    previousPool: t.exposeString('previousPool', { nullable: true }),
    changed: t.exposeBoolean('changed'),
  }),
});

defineMutation('assignJobToPool', {
  roles: OPERATOR,
  description:
    'Puts a job into a source pool (out of the one it was in), or with pool null out of any. 404 POOL_NOT_FOUND for ' +
    'a pool not defined. Recorded as SOURCE_POOL_JOB_ASSIGNED.',
  input: z.object({
    jobKey: f.jobKey,
    pool: f.optional(poolName).describe('The pool; null or left out: no pool.'),
    reason: f.optional(f.reason).describe('Optional, 5 to 2000 characters; recorded in the event log.'),
  }),
  payload: AssignJobToPoolPayload,
  operation: assignJobToPoolOperation,
});
