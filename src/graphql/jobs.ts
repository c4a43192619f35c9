import { z } from 'zod';
import { DomainError, invalidInput } from '../contract/errors.js';
import * as f from '../domain/fields.js';
import { gateJobs, jobMatrix, type MatrixCell, type MatrixRow } from '../domain/jobs/job-matrix.js';
import { decodeJobCursor, encodeJobCursor, jobPage, successRate, type JobPage, type JobSummary } from '../domain/jobs/job-summaries.js';
import { builder, type GraphQLContext } from './builder.js';
import { MAX_JOBS_PAGE, MAX_MATRIX_DAYS, MAX_MATRIX_JOBS, MAX_RECENT_RUNS, pagedCost } from './cost.js';
import { RunStatusEnum } from './enums.js';
import { AttemptSourceEnum, identifier, ObservationStateEnum } from './gate.js';
import { argsOf, date } from './inputs.js';
import { ANY_ROLE } from './roles.js';
import { PageInfo, RunRef } from './runs.js';

const reader = (ctx: GraphQLContext) => ctx.services.db.prisma;

const JobSummaryRef = builder.objectRef<JobSummary>('JobSummary').implement({
  description: 'A Load Control job (a job key with runs) at a glance: the Jobs page’s row.',
  fields: (t) => ({
    jobKey: t.exposeString('jobKey'),
    lastRun: t.field({ type: RunRef, resolve: (j) => j.recentRuns[0]! }),
    lastSuccess: t.field({
      type: RunRef,
      nullable: true,
      description: 'The latest run that reached SUCCESS.',
      resolve: (j) => j.lastSuccess,
    }),
    recentRuns: t.field({
      type: [RunRef],
      description: 'The job’s latest runs, newest first, as many as jobs(recentRuns) asks for: the duration trend.',
      complexity: { field: 1, multiplier: MAX_RECENT_RUNS },
      resolve: (j) => j.recentRuns,
    }),
    successRate: t.float({
      nullable: true,
      description: 'SUCCESS among the recent runs that ended (0 to 1; active runs do not count); null when none ended.',
      resolve: (j) => successRate(j.recentRuns),
    }),
    gatedBy: t.exposeString('gatedBy', { nullable: true, description: 'The consumer whose gate guards this job (its boundJobKey).' }),
  }),
});

const JobConnection = builder.objectRef<JobPage>('JobConnection').implement({
  fields: (t) => ({
    // the page's size is counted once, by jobs(first)
    nodes: t.field({ type: [JobSummaryRef], complexity: { field: 1, multiplier: 1 }, resolve: (c) => c.jobs }),
    pageInfo: t.field({
      type: PageInfo,
      resolve: (c) => ({
        hasNextPage: c.hasNextPage,
        endCursor: c.jobs.length ? encodeJobCursor(c.jobs[c.jobs.length - 1]!.jobKey) : null,
      }),
    }),
  }),
});

const jobsArgs = z.object({
  first: z.number().int().min(1).max(MAX_JOBS_PAGE).default(50),
  after: z.string().max(300).nullish().describe('The endCursor of the page before.'),
  jobKeyContains: f.text(200).nullish().describe('Jobs whose key contains this text, in any case.'),
  recentRuns: z
    .number()
    .int()
    .min(1)
    .max(MAX_RECENT_RUNS)
    .default(20)
    .describe('How many of each job’s latest runs recentRuns and successRate cover.'),
});

builder.queryField('jobs', (t) =>
  t.field({
    type: JobConnection,
    extensions: ANY_ROLE,
    description: 'Every Load Control job in job key order, a page at a time.',
    complexity: pagedCost('first', 50, MAX_JOBS_PAGE),
    args: argsOf(t, jobsArgs),
    resolve: (_root, args, ctx) => {
      const parsed = f.parseCommand(jobsArgs, args, null);
      const after = parsed.after ? decodeJobCursor(parsed.after) : null;
      if (parsed.after && after === null) throw new DomainError('INVALID_INPUT', { field: 'after', reason: 'not a cursor from this API' });
      return jobPage(reader(ctx), { jobKeyContains: parsed.jobKeyContains || null }, parsed.first, parsed.recentRuns, after);
    },
  }),
);

const MatrixAttemptRef = builder.objectRef<NonNullable<MatrixCell['latest']>>('MatrixAttempt').implement({
  fields: (t) => ({
    attempt: t.exposeInt('attempt'),
    runId: t.exposeString('runId', { description: 'A Load Control run’s id, or the producer’s own run id for an observation.' }),
    state: t.field({ type: ObservationStateEnum, resolve: (a) => a.state }),
    source: t.field({ type: AttemptSourceEnum, resolve: (a) => a.source }),
    startedAt: t.field({ type: 'DateTime', resolve: (a) => a.startedAt }),
    runStatus: t.field({
      type: RunStatusEnum,
      nullable: true,
      description: 'For a Load Control run, its status.',
      resolve: (a) => a.runStatus,
    }),
  }),
});

const MatrixCellRef = builder.objectRef<MatrixCell>('JobMatrixCell').implement({
  fields: (t) => ({
    businessDate: t.field({ type: 'Date', resolve: (c) => c.businessDate }),
    attempts: t.exposeInt('attempts'),
    latest: t.field({
      type: MatrixAttemptRef,
      nullable: true,
      description: 'The greatest attempt, which alone decides.',
      resolve: (c) => c.latest,
    }),
    gateReady: t.exposeBoolean('gateReady', {
      nullable: true,
      description: 'Whether the gate bound to the job is ready for the date; null when no gate guards the job.',
    }),
  }),
});

const MatrixRowRef = builder.objectRef<MatrixRow>('JobMatrixRow').implement({
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    gatedBy: t.exposeString('gatedBy', { nullable: true }),
    cells: t.field({
      type: [MatrixCellRef],
      description: 'One per business date, oldest first.',
      complexity: { field: 1, multiplier: MAX_MATRIX_DAYS },
      resolve: (r) => r.cells,
    }),
  }),
});

const JobMatrixRef = builder.objectRef<Awaited<ReturnType<typeof jobMatrix>>>('JobMatrix').implement({
  fields: (t) => ({
    businessDates: t.field({ type: ['Date'], description: 'The columns, oldest first.', resolve: (m) => m.businessDates }),
    rows: t.field({ type: [MatrixRowRef], complexity: { field: 1, multiplier: MAX_MATRIX_JOBS }, resolve: (m) => m.rows }),
    consumerReadiness: t.field({
      type: ['Boolean'],
      description: 'For a consumer’s matrix, its gate’s readiness on each business date (the columns’ order); empty otherwise.',
      resolve: (m) => m.consumerReadiness,
    }),
  }),
});

const jobMatrixArgs = z.object({
  jobKeys: z
    .array(identifier)
    .min(1, 'at least one')
    .max(MAX_MATRIX_JOBS, `at most ${MAX_MATRIX_JOBS}`)
    .nullish()
    .describe('The jobs, one row each in this order.'),
  consumer: identifier.nullish().describe('Instead of jobKeys: the jobs a gate requires, in job order, then the job it holds back.'),
  days: z.number().int().min(1).max(MAX_MATRIX_DAYS).default(14).describe('How many business dates, ending at endDate.'),
  endDate: date.nullish().describe('The last business date shown; by default today (UTC).'),
});

builder.queryField('jobMatrix', (t) =>
  t.field({
    type: JobMatrixRef,
    extensions: ANY_ROLE,
    description:
      'Jobs over business dates: for each job and date the latest attempt (a Load Control run whose business key is the ' +
      'date, or an observation), the number of attempts and, for a gated job, its gate’s readiness. Give jobKeys or consumer.',
    args: argsOf(t, jobMatrixArgs),
    resolve: async (_root, args, ctx) => {
      const parsed = f.parseCommand(jobMatrixArgs, args, null);
      if (!parsed.jobKeys === !parsed.consumer) throw invalidInput('jobKeys', 'give either jobKeys or consumer');
      const jobIds = parsed.consumer ? await gateJobs(reader(ctx), parsed.consumer) : [...new Set(parsed.jobKeys!)];
      const endDate = parsed.endDate ?? new Date().toISOString().slice(0, 10);
      return jobMatrix(reader(ctx), jobIds, endDate, parsed.days, parsed.consumer ?? null);
    },
  }),
);
