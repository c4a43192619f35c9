import { z } from 'zod';
import * as f from '../domain/fields.js';
import { cancelRunOperation, type CancelRunResult } from '../domain/operator/cancel-run.js';
import { resendDispatchOperation, type ResendDispatchResult } from '../domain/operator/resend-dispatch.js';
import { resolveUnknownOperation, UNKNOWN_RESOLUTIONS, type ResolveUnknownResult } from '../domain/operator/resolve-unknown.js';
import { resumeRunOperation, type ResumeRunResult } from '../domain/runs/resume-run.js';
import { perform } from '../db/operation.js';
import { builder } from './builder.js';
import { DispatchStatusEnum, RunStatusEnum } from './enums.js';
import { inputEnum, uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { OPERATOR } from './roles.js';

const UnknownResolutionEnum = builder.enumType('UnknownResolution', { values: UNKNOWN_RESOLUTIONS });

// ---- resolveUnknown ----

const ResolveUnknownPayload = builder.objectRef<ResolveUnknownResult>('ResolveUnknownPayload').implement({
  fields: (t) => ({
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    changed: t.exposeBoolean('changed'),
  }),
});

defineMutation('resolveUnknown', {
  roles: OPERATOR,
  description: 'PUBLISH_UNKNOWN → PUBLISHED (target validation still follows) or FAILED_PUBLISH, after checking the target.',
  input: z.object({
    runId: uuid,
    resolution: inputEnum(UnknownResolutionEnum, UNKNOWN_RESOLUTIONS),
    reason: f.reason.describe('5 to 2000 characters.'),
  }),
  payload: ResolveUnknownPayload,
  operation: resolveUnknownOperation,
});

// ---- resendDispatch ----

const ResendDispatchPayload = builder.objectRef<ResendDispatchResult>('ResendDispatchPayload').implement({
  fields: (t) => ({
    dispatchId: t.field({ type: 'UUID', resolve: (p) => p.dispatchId }),
    status: t.field({ type: DispatchStatusEnum, resolve: (p) => p.status }),
  }),
});

defineMutation('resendDispatch', {
  roles: OPERATOR,
  description:
    'A DEAD dispatch, or a SENT one never acknowledged, goes back to PENDING with a fresh attempt budget. runId may be ' +
    'left out (a GATE_READY call has no run); given, the dispatch must be that run’s.',
  input: z.object({
    runId: f.optional(uuid),
    dispatchId: uuid,
    reason: f.optional(f.reason).describe('Optional, 5 to 2000 characters; recorded in the event log.'),
  }),
  payload: ResendDispatchPayload,
  operation: resendDispatchOperation,
});

// ---- cancelRun ----

const CancelRunPayload = builder.objectRef<CancelRunResult>('CancelRunPayload').implement({
  fields: (t) => ({
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    changed: t.exposeBoolean('changed'),
    abandonedPartitions: t.exposeInt('abandonedPartitions'),
    cancelledDispatches: t.exposeInt('cancelledDispatches'),
  }),
});

defineMutation('cancelRun', {
  roles: OPERATOR,
  description:
    'Ends an active run that has not started publishing (CANCELLED); PUBLISHING and PUBLISH_UNKNOWN are refused. ' +
    'A PUBLISHED run may be cancelled: the events record it as published, then cancelled. Unfinished ' +
    'partitions become ABANDONED and undelivered dispatches CANCELLED.',
  input: z.object({ runId: uuid, reason: f.reason.describe('5 to 2000 characters.') }),
  payload: CancelRunPayload,
  operation: cancelRunOperation,
});

// ---- resumeRun ----

const ResumeRunPayload = builder.objectRef<ResumeRunResult>('ResumeRunPayload').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', description: 'The new attempt.', resolve: (p) => p.runId }),
    status: t.field({ type: RunStatusEnum, resolve: (p) => p.status }),
    resumedFromRunId: t.field({ type: 'UUID', resolve: (p) => p.resumedFromRunId }),
    hdfsRunPath: t.exposeString('hdfsRunPath', { description: 'The failed run’s: the carried files are there.' }),
    stageTable: t.exposeString('stageTable'),
    carriedPartitions: t.exposeInt('carriedPartitions', { description: 'SUCCESS partitions carried over, not extracted again.' }),
    reissuedPartitions: t.exposeInt('reissuedPartitions', { description: 'Partitions to extract again: one REISSUE_PARTITION call each.' }),
  }),
});

defineMutation('resumeRun', {
  roles: OPERATOR,
  description:
    'A new attempt of a failed run’s job and business key with its manifest, snapshot SCN, HDFS run path and SUCCESS ' +
    'partitions; only the others are extracted again (a REISSUE_PARTITION call each). Resumable: FAILED_EXTRACT, and ' +
    'TIMED_OUT or CANCELLED before extraction completed. 409 RUN_NOT_RESUMABLE (details reason), NEWER_ATTEMPT_EXISTS, ' +
    'SNAPSHOT_BEYOND_HORIZON (resume.snapshotHorizon), DUPLICATE_ACTIVE_RUN, DEPENDENCIES_NOT_READY as createRun.',
  input: z.object({ runId: uuid, reason: f.reason.describe('5 to 2000 characters.') }),
  payload: ResumeRunPayload,
  run: (cmd, ctx) => perform(ctx.services.db, resumeRunOperation, { ...cmd, horizon: ctx.services.config.resume }, ctx.actor),
});
