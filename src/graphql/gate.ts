// The business-date gate: observations of upstream attempts, gates, readiness and publications.
import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import * as f from '../domain/fields.js';
import { defineGate, listGates, type GateRecord } from '../domain/gate/define-gate.js';
import {
  ATTEMPT_SOURCES,
  listAttempts,
  readiness,
  type Evidence,
  type JobReadiness,
  type LedgerAttempt,
  type Readiness,
} from '../domain/gate/ledger.js';
import { BLOCKING_REASONS, OBSERVATION_STATES } from '../domain/gate/observation-states.js';
import { listPublishClaimEvidence, type PublishClaimEvidence } from '../domain/gate/publish-claim.js';
import { getPublication, publish, type PublicationRecord } from '../domain/gate/publish.js';
import { recordObservation, type ObservationRecord } from '../domain/gate/record-observation.js';
import { builder } from './builder.js';
import { argsOf, date, inputEnum } from './inputs.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, NIFI, OPERATOR } from './roles.js';
import { RunRef } from './runs.js';

const ObservationStateEnum = builder.enumType('ObservationState', { values: OBSERVATION_STATES });
const BlockingReasonEnum = builder.enumType('BlockingReason', {
  description: 'Why a required job blocks: no attempt for the date, or its latest attempt is RUNNING or FAILED.',
  values: BLOCKING_REASONS,
});
const AttemptSourceEnum = builder.enumType('AttemptSource', {
  description: 'EXTERNAL: reported with recordObservation. LOAD_CONTROL: a Load Control run.',
  values: ATTEMPT_SOURCES,
});

/** Job ids, consumers and external run ids. */
const identifier = z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'must match ^[A-Za-z0-9_.:-]{1,200}$');

// ---- types ----

const ObservationRef = builder.objectRef<ObservationRecord>('Observation').implement({
  description: 'One attempt of an external upstream job for a business date, as reported.',
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    businessDate: t.field({ type: 'Date', resolve: (o) => o.businessDate }),
    attempt: t.exposeInt('attempt'),
    runId: t.exposeString('runId'),
    state: t.field({ type: ObservationStateEnum, resolve: (o) => o.state }),
    startedAt: t.field({ type: 'DateTime', resolve: (o) => o.startedAt }),
    firstObservedAt: t.field({ type: 'DateTime', resolve: (o) => o.firstObservedAt }),
    observedAt: t.field({ type: 'DateTime', description: 'When the current state was reported.', resolve: (o) => o.observedAt }),
    observedBy: t.exposeString('observedBy', { description: 'The token name that reported the current state.' }),
  }),
});

const AttemptRef = builder.objectRef<LedgerAttempt>('Attempt').implement({
  description: 'An attempt in the ledger: an external observation or a Load Control run.',
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    attempt: t.exposeInt('attempt'),
    runId: t.exposeString('runId'),
    state: t.field({ type: ObservationStateEnum, resolve: (a) => a.state }),
    source: t.field({ type: AttemptSourceEnum, resolve: (a) => a.source }),
    startedAt: t.field({ type: 'DateTime', resolve: (a) => a.startedAt }),
  }),
});

const RequiredJobReadinessRef = builder.objectRef<JobReadiness>('RequiredJobReadiness').implement({
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    ready: t.boolean({ resolve: (j) => j.reason === null }),
    reason: t.field({ type: BlockingReasonEnum, nullable: true, resolve: (j) => j.reason }),
    latest: t.field({
      type: AttemptRef,
      nullable: true,
      description: 'The greatest attempt for the date; it alone decides (a newer attempt hides an older success).',
      resolve: (j) => j.latest,
    }),
    attempt: t.int({ nullable: true, resolve: (j) => j.latest?.attempt ?? null }),
    state: t.field({ type: ObservationStateEnum, nullable: true, resolve: (j) => j.latest?.state ?? null }),
    runId: t.string({ nullable: true, resolve: (j) => j.latest?.runId ?? null }),
  }),
});

const ReadinessRef = builder.objectRef<Readiness>('Readiness').implement({
  fields: (t) => ({
    consumer: t.exposeString('consumer'),
    businessDate: t.field({ type: 'Date', resolve: (r) => r.businessDate }),
    gateDefined: t.exposeBoolean('gateDefined'),
    ready: t.exposeBoolean('ready', { description: 'Every required job’s latest attempt for the date succeeded.' }),
    jobs: t.field({ type: [RequiredJobReadinessRef], resolve: (r) => r.jobs }),
  }),
});

const GateRef = builder.objectRef<GateRecord>('Gate').implement({
  fields: (t) => ({
    consumer: t.exposeString('consumer'),
    requiredJobs: t.exposeStringList('requiredJobs'),
    boundJobKey: t.exposeString('boundJobKey', { nullable: true }),
    definedAt: t.field({ type: 'DateTime', resolve: (g) => g.definedAt }),
    definedBy: t.exposeString('definedBy'),
  }),
});

const EvidenceRef = builder.objectRef<Evidence>('Evidence').implement({
  description: 'An upstream attempt that authorised an output.',
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    attempt: t.exposeInt('attempt'),
    runId: t.exposeString('runId'),
  }),
});

const PublicationRef = builder.objectRef<PublicationRecord>('Publication').implement({
  fields: (t) => ({
    consumer: t.exposeString('consumer'),
    businessDate: t.field({ type: 'Date', resolve: (p) => p.businessDate }),
    output: t.field({ type: 'JSON', resolve: (p) => p.output }),
    outputHash: t.exposeString('outputHash', { description: 'SHA-256 (hex) of the output’s canonical JSON.' }),
    publishedBy: t.exposeString('publishedBy'),
    publishedAt: t.field({ type: 'DateTime', resolve: (p) => p.publishedAt }),
    evidence: t.field({ type: [EvidenceRef], resolve: (p) => p.evidence }),
  }),
});

const PublishClaimEvidenceRef = builder.objectRef<PublishClaimEvidence>('PublishClaimEvidence').implement({
  description: 'An upstream attempt that authorised a gated run’s publish claim.',
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    attempt: t.exposeInt('attempt'),
    runId: t.exposeString('runId', { description: 'The upstream run.' }),
    consumer: t.exposeString('consumer', { description: 'The gate that was checked.' }),
    businessDate: t.field({ type: 'Date', resolve: (e) => e.businessDate }),
    publishToken: t.field({ type: 'UUID', resolve: (e) => e.publishToken }),
    recordedAt: t.field({ type: 'DateTime', resolve: (e) => e.recordedAt }),
  }),
});

builder.objectField(RunRef, 'evidence', (t) =>
  t.loadableList({
    type: PublishClaimEvidenceRef,
    description: 'For a run of a gated job: the upstream attempts its publish claim was authorised by.',
    // read for all the runs of a page at once; never cached, since a subscription keeps its context
    loaderOptions: { cache: false },
    load: (runIds: string[], ctx) => listPublishClaimEvidence(ctx.services.db.prisma, runIds),
    resolve: (run) => run.runId,
  }),
);

// ---- recordObservation ----

const RecordObservationPayload = builder
  .objectRef<{ observation: ObservationRecord; changed: boolean }>('RecordObservationPayload')
  .implement({
    fields: (t) => ({
      observation: t.field({ type: ObservationRef, resolve: (p) => p.observation }),
      changed: t.exposeBoolean('changed'),
    }),
  });

defineMutation('recordObservation', {
  roles: NIFI,
  description:
    'One attempt of an upstream job for a business date. RUNNING may become SUCCEEDED or FAILED once; the same state ' +
    'again, or RUNNING after the attempt ended, is a no-op (changed: false); changing a final state, or the run id or ' +
    'start time of an attempt, is 409 OBSERVATION_CONFLICT: a repair is a new attempt. Load Control jobs are observed ' +
    'from their runs and cannot be reported here (409 OBSERVATION_CONFLICT).',
  input: z.object({
    jobId: identifier.describe('Upstream job id, ^[A-Za-z0-9_.:-]{1,200}$; not a Load Control job key.'),
    businessDate: date.describe('The business date the attempt processed, never derived from its start time.'),
    attempt: f.int32(1).describe('The producer’s attempt ordinal for this job and date, 1 or more.'),
    runId: identifier.describe('The producer’s run id, ^[A-Za-z0-9_.:-]{1,200}$.'),
    state: inputEnum(ObservationStateEnum, OBSERVATION_STATES),
    // the DateTime scalar has already checked the offset
    startedAt: z.date().describe('With an offset.'),
  }),
  payload: RecordObservationPayload,
  run: (cmd, ctx) => inTransaction(ctx.services.db, (tx) => recordObservation(tx, cmd)),
});

// ---- defineGate ----

const DefineGatePayload = builder.objectRef<{ gate: GateRecord; changed: boolean }>('DefineGatePayload').implement({
  fields: (t) => ({
    gate: t.field({ type: GateRef, resolve: (p) => p.gate }),
    changed: t.exposeBoolean('changed'),
  }),
});

defineMutation('defineGate', {
  roles: OPERATOR,
  description:
    'Defines (or redefines) which upstream jobs a consumer needs for each business date. Existing publications keep their evidence.',
  input: z
    .object({
      consumer: identifier.describe('^[A-Za-z0-9_.:-]{1,200}$'),
      requiredJobs: z
        .array(identifier)
        .min(1, 'at least one job')
        .max(100, 'at most 100 jobs')
        .refine((jobs) => new Set(jobs).size === jobs.length, 'must not repeat a job')
        .describe('The exact set of upstream job ids (1 to 100, distinct).'),
      boundJobKey: f
        .optional(f.jobKey)
        .describe(
          'A Load Control job key to bind to this gate (or none): its createRun and claimPublish then wait until the gate ' +
            'is ready for the business date the run’s business key names, which must be a calendar date YYYY-MM-DD. A job ' +
            'is bound to at most one gate: binding it here unbinds it from any other.',
        ),
    })
    .refine((gate) => gate.boundJobKey === null || !gate.requiredJobs.includes(gate.boundJobKey), {
      path: ['boundJobKey'],
      message: 'a gate cannot require the job it holds back',
    }),
  payload: DefineGatePayload,
  run: (cmd, ctx) => inTransaction(ctx.services.db, (tx) => defineGate(tx, cmd)),
});

// ---- publish ----

const PublishPayload = builder.objectRef<{ published: boolean; publication: PublicationRecord }>('PublishPayload').implement({
  fields: (t) => ({
    published: t.exposeBoolean('published', { description: 'False when this exact publication already existed (nothing written).' }),
    publication: t.field({ type: PublicationRef, resolve: (p) => p.publication }),
  }),
});

defineMutation('publish', {
  roles: NIFI,
  description:
    'In one transaction: re-checks readiness and writes the publication with its evidence (the exact upstream runs). ' +
    'Same output again → published: false with the existing publication, also after a later upstream failure. Another ' +
    'output, or a newer successful upstream attempt → 409 PUBLICATION_CONFLICT. Not ready → 409 DEPENDENCIES_NOT_READY.',
  input: z.object({
    consumer: identifier,
    businessDate: date,
    output: f.jsonObject.describe('What is published for the date (at most 64 KiB of JSON).'),
  }),
  payload: PublishPayload,
  run: (cmd, ctx) => inTransaction(ctx.services.db, (tx) => publish(tx, cmd)),
});

// ---- queries ----

const byConsumerAndDate = z.object({ consumer: identifier, businessDate: date });
const byJobAndDate = z.object({ jobId: identifier, businessDate: date });

builder.queryField('readiness', (t) =>
  t.field({
    type: ReadinessRef,
    nullable: true,
    extensions: ANY_ROLE,
    description:
      'Whether a consumer may publish for a business date: every required job’s greatest attempt for that date ' +
      'succeeded. External observations and Load Control runs count alike (a run belongs to the date its business key ' +
      'names, when that is a calendar date YYYY-MM-DD; attempt n is the job’s n-th run for that key).',
    args: argsOf(t, byConsumerAndDate),
    resolve: (_root, args, ctx) => {
      const q = f.parseCommand(byConsumerAndDate, args, 'args');
      return readiness(ctx.services.db.prisma, q.consumer, q.businessDate);
    },
  }),
);

builder.queryField('publication', (t) =>
  t.field({
    type: PublicationRef,
    nullable: true,
    extensions: ANY_ROLE,
    description: 'The publication of a consumer for a business date and its evidence; 404 PUBLICATION_NOT_FOUND when none.',
    args: argsOf(t, byConsumerAndDate),
    resolve: (_root, args, ctx) => {
      const q = f.parseCommand(byConsumerAndDate, args, 'args');
      return getPublication(ctx.services.db.prisma, q.consumer, q.businessDate);
    },
  }),
);

builder.queryField('gates', (t) =>
  t.field({
    type: [GateRef],
    nullable: true,
    extensions: ANY_ROLE,
    resolve: (_root, _args, ctx) => listGates(ctx.services.db.prisma),
  }),
);

builder.queryField('observations', (t) =>
  t.field({
    type: [AttemptRef],
    nullable: true,
    extensions: ANY_ROLE,
    description: 'Every attempt of one job for one business date, from both sources, oldest first.',
    args: argsOf(t, byJobAndDate),
    resolve: (_root, args, ctx) => {
      const q = f.parseCommand(byJobAndDate, args, 'args');
      return listAttempts(ctx.services.db.prisma, q.jobId, q.businessDate);
    },
  }),
);
