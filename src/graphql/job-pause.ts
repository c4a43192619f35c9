import { z } from 'zod';
import * as f from '../domain/fields.js';
import {
  jobPause,
  pausedJobs,
  pauseJobOperation,
  resumeJobOperation,
  type JobPause,
  type JobPauseResult,
} from '../domain/jobs/job-pause.js';
import { builder } from './builder.js';
import { argsOf } from './inputs.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, OPERATOR } from './roles.js';

const JobPauseRef = builder.objectRef<JobPause>('JobPause').implement({
  description: 'Whether a job is paused, and by whom, why and since when. While paused createRun answers 409 JOB_PAUSED.',
  fields: (t) => ({
    jobKey: t.exposeString('jobKey'),
    paused: t.exposeBoolean('paused'),
    pausedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.pausedAt }),
    pausedBy: t.exposeString('pausedBy', { nullable: true, description: 'The name of the token that paused it.' }),
    pauseReason: t.exposeString('pauseReason', { nullable: true }),
  }),
});

const JobPausePayload = builder.objectRef<JobPauseResult>('JobPausePayload').implement({
  fields: (t) => ({
    job: t.field({ type: JobPauseRef, resolve: (p) => p.job }),
    changed: t.exposeBoolean('changed'),
  }),
});

const jobPauseInput = z.object({ jobKey: f.jobKey, reason: f.reason.describe('5 to 2000 characters.') });

defineMutation('pauseJob', {
  roles: OPERATOR,
  description:
    'Pauses a job: createRun refuses its new runs with 409 JOB_PAUSED (NiFi waits and asks again), its backfills start ' +
    'no date; loads under way finish. A createRun in flight when the pause commits is let through first. Pausing a ' +
    'paused job changes nothing (changed: false).',
  input: jobPauseInput,
  payload: JobPausePayload,
  operation: pauseJobOperation,
});

defineMutation('resumeJob', {
  roles: OPERATOR,
  description: 'Ends a pause: createRun takes the job’s runs again, its backfills go on. A job not paused: changed: false.',
  input: jobPauseInput,
  payload: JobPausePayload,
  operation: resumeJobOperation,
});

const byJob = z.object({ jobKey: f.jobKey });

builder.queryField('jobPause', (t) =>
  t.field({
    type: JobPauseRef,
    extensions: ANY_ROLE,
    description: 'Whether the job is paused (a job never paused is not).',
    args: argsOf(t, byJob),
    resolve: (_root, args, ctx) => jobPause(ctx.services.db.prisma, f.parseCommand(byJob, args, 'args').jobKey),
  }),
);

builder.queryField('pausedJobs', (t) =>
  t.field({
    type: [JobPauseRef],
    extensions: ANY_ROLE,
    description: 'Every paused job, the longest paused first.',
    resolve: (_root, _args, ctx) => pausedJobs(ctx.services.db.prisma),
  }),
);
