// The business-date gate: observations of upstream attempts, gates, readiness, its decisions and publications.
import { z } from 'zod';
import * as f from '../domain/fields.js';
import {
  currentDecisions,
  DECIDED_AT_DEFINITION,
  listDecisions,
  MAX_DECISIONS_PAGE,
  type ReadinessDecision,
} from '../domain/gate/decisions.js';
import {
  defineGateOperation,
  getGate,
  listGates,
  type DefineGateResult,
  type GateRecord,
  type JobExpectedBy,
} from '../domain/gate/define-gate.js';
import { canonicalTimeZone, DEADLINE_OUTCOMES, describeExpectedBy, MAX_DAYS_AFTER, TIME_OF_DAY } from '../domain/gate/expected-by.js';
import { listGateDispatches, MAX_GATE_DISPATCHES_PAGE, type GateDispatchRecord } from '../domain/gate/gate-dispatches.js';
import {
  ATTEMPT_SOURCES,
  listAttempts,
  listAttemptsOf,
  MAX_ATTEMPTS_PER_KEY,
  readiness,
  type Evidence,
  type JobReadiness,
  type LedgerAttempt,
  type Readiness,
} from '../domain/gate/ledger.js';
import { BLOCKING_REASONS, OBSERVATION_STATES } from '../domain/gate/observation-states.js';
import { listPublishClaimEvidence, type PublishClaimEvidence } from '../domain/gate/publish-claim.js';
import {
  getPublication,
  listPublications,
  MAX_PUBLICATIONS_PAGE,
  publishOperation,
  type PublicationRecord,
} from '../domain/gate/publish.js';
import { GATE_RECEIVER_FORMATS, ORCHESTRATOR_ASSET, type GateReceiverFormat } from '../domain/gate/receiver-formats.js';
import { recordObservationOperation, type ObservationRecord } from '../domain/gate/record-observation.js';
import { builder } from './builder.js';
import { pagedCost } from './cost.js';
import { deliveryFields } from './dispatch-fields.js';
import { argsOf, date, inputEnum, inputObject } from './inputs.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, NIFI, OPERATOR } from './roles.js';
import { PageInfo, RunRef } from './runs.js';
import { realtimeFor } from './subscriptions.js';

export const ObservationStateEnum = builder.enumType('ObservationState', { values: OBSERVATION_STATES });
const BlockingReasonEnum = builder.enumType('BlockingReason', {
  description: 'Why a required job blocks: no attempt for the date, or its latest attempt is RUNNING or FAILED.',
  values: BLOCKING_REASONS,
});
export const AttemptSourceEnum = builder.enumType('AttemptSource', {
  description: 'EXTERNAL: reported with recordObservation. LOAD_CONTROL: a Load Control run.',
  values: ATTEMPT_SOURCES,
});

const GateReceiverFormatEnum = builder.enumType('GateReceiverFormat', {
  description:
    'What a gate’s receiver takes: GENERIC, Load Control’s own body (every decision, withdrawals too); AIRFLOW, an ' +
    'Airflow 3 asset event (POST {notifyUrl}/api/v2/assets/events, partition_key = the business date); DAGSTER, a ' +
    'Dagster asset materialization (POST {notifyUrl}/report_asset_materialization/{notifyAsset}, partition = the ' +
    'business date, metadata = the evidence run ids). AIRFLOW and DAGSTER get ready decisions only.',
  values: GATE_RECEIVER_FORMATS,
});

const DeadlineOutcomeEnum = builder.enumType('DeadlineOutcome', {
  description:
    'What the sweeper found when the first expected-by deadline for a job and business date passed: a successful ' +
    'latest attempt (MET), none (OBSERVATION_MISSING) or one not SUCCEEDED yet (OBSERVATION_LATE).',
  values: DEADLINE_OUTCOMES,
});

/** Job ids, consumers and external run ids. */
export const identifier = z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'must match ^[A-Za-z0-9_.:-]{1,200}$');

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

const ExpectedByRef = builder.objectRef<JobExpectedBy>('ExpectedBy').implement({
  description:
    'A required job’s expected-by deadline: its attempt for business date D is expected to have succeeded by `time` ' +
    'on the day D + daysAfter, wall-clock time in `timeZone`.',
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    daysAfter: t.exposeInt('daysAfter'),
    time: t.exposeString('time', { description: 'HH:MM, 24-hour.' }),
    timeZone: t.exposeString('timeZone', { description: 'IANA time zone name.' }),
    text: t.string({ description: 'D+1 06:00 Asia/Seoul', resolve: (e) => describeExpectedBy(e) }),
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
    expectedBy: t.field({
      type: ExpectedByRef,
      nullable: true,
      resolve: (j) => j.expectedBy && { jobId: j.jobId, ...j.expectedBy },
    }),
    deadline: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'The instant expectedBy falls on for this business date.',
      resolve: (j) => j.deadline,
    }),
    deadlineOutcome: t.field({
      type: DeadlineOutcomeEnum,
      nullable: true,
      description: 'Null until the deadline passed and the sweeper looked (or without expectedBy).',
      resolve: (j) => j.deadlineOutcome,
    }),
  }),
});

/** Evidence with the business date it is evidence for, which its attempts are looked up by. */
type DatedEvidence = Evidence & { businessDate: string };
const dated = (evidence: Evidence[], businessDate: string): DatedEvidence[] => evidence.map((e) => ({ ...e, businessDate }));
const attemptsKey = (e: DatedEvidence) => `${e.jobId} ${e.businessDate}`;
/** A loader key "name date" (names never hold a space: identifier) back into its two parts. */
const splitKey = (key: string): [string, string] => [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];

const EvidenceRef = builder.objectRef<DatedEvidence>('Evidence').implement({
  description: 'An upstream attempt that authorised an output.',
  fields: (t) => ({
    jobId: t.exposeString('jobId'),
    attempt: t.exposeInt('attempt'),
    runId: t.exposeString('runId'),
    // the attempts of every evidence of a page are read in one statement; never cached (subscriptions keep their context)
    attempts: t.loadableList({
      type: AttemptRef,
      description:
        `Every attempt of the job for the business date, oldest first (the newest ${MAX_ATTEMPTS_PER_KEY}): those before ` +
        'this one it superseded; one after it supersedes this evidence.',
      complexity: { field: 1, multiplier: MAX_ATTEMPTS_PER_KEY },
      loaderOptions: { cache: false },
      load: (keys: string[], ctx) =>
        listAttemptsOf(
          ctx.services.db.prisma,
          keys.map((key) => {
            const [jobId, businessDate] = splitKey(key);
            return { jobId, businessDate };
          }),
        ),
      resolve: attemptsKey,
    }),
  }),
});

const ReadinessDecisionRef = builder.objectRef<ReadinessDecision>('ReadinessDecision').implement({
  description:
    'A change of a consumer’s readiness for a business date, recorded once in the transaction that caused it: version 1 ' +
    'the first time it was ready, then one more per change of `ready` or of the evidence.',
  fields: (t) => ({
    consumer: t.exposeString('consumer'),
    businessDate: t.field({ type: 'Date', resolve: (d) => d.businessDate }),
    version: t.exposeInt('version'),
    ready: t.exposeBoolean('ready'),
    evidence: t.field({
      type: [EvidenceRef],
      description: 'The latest attempt of each required job when ready; empty when not.',
      resolve: (d) => dated(d.evidence, d.businessDate),
    }),
    cause: t.field({
      type: 'JSON',
      description: 'The attempt whose change made the decision ({source, jobId, runId, …}), or {source: DEFINITION}.',
      resolve: (d) => d.cause,
    }),
    decidedAt: t.field({ type: 'DateTime', resolve: (d) => d.decidedAt }),
  }),
});

const ReadinessRef = builder.objectRef<Readiness>('Readiness').implement({
  fields: (t) => ({
    consumer: t.exposeString('consumer'),
    businessDate: t.field({ type: 'Date', resolve: (r) => r.businessDate }),
    gateDefined: t.exposeBoolean('gateDefined'),
    ready: t.exposeBoolean('ready', { description: 'Every required job’s latest attempt for the date succeeded.' }),
    jobs: t.field({ type: [RequiredJobReadinessRef], resolve: (r) => r.jobs }),
    decision: t.loadable({
      type: ReadinessDecisionRef,
      nullable: true,
      description: 'The current recorded decision (the latest version); null while the date was never ready.',
      loaderOptions: { cache: false },
      load: (keys: string[], ctx) =>
        currentDecisions(
          ctx.services.db.prisma,
          keys.map((key) => {
            const [consumer, businessDate] = splitKey(key);
            return { consumer, businessDate };
          }),
        ),
      resolve: (r) => `${r.consumer} ${r.businessDate}`,
    }),
  }),
});

const GateDispatchRef = builder.objectRef<GateDispatchRecord>('GateDispatch').implement({
  description: 'A GATE_READY call: one readiness decision delivered to the gate’s notifyUrl.',
  fields: (t) => ({
    ...deliveryFields(t),
    businessDate: t.field({ type: 'Date', resolve: (d) => d.businessDate }),
    version: t.exposeInt('version', { description: 'The readiness decision delivered.' }),
  }),
});

const gateDispatchesArgs = z.object({
  businessDate: f.optional(date).describe('Only the calls for this business date.'),
  last: z.number().int().min(1, 'must be >= 1').max(MAX_GATE_DISPATCHES_PAGE, `must be <= ${MAX_GATE_DISPATCHES_PAGE}`).default(20),
});

const GateRef = builder.objectRef<GateRecord>('Gate').implement({
  fields: (t) => ({
    consumer: t.exposeString('consumer'),
    requiredJobs: t.exposeStringList('requiredJobs'),
    boundJobKey: t.exposeString('boundJobKey', { nullable: true }),
    notifyUrl: t.exposeString('notifyUrl', { nullable: true, description: 'Where each readiness decision is delivered (GATE_READY).' }),
    notifyFormat: t.field({ type: GateReceiverFormatEnum, resolve: (g) => g.notifyFormat }),
    notifyAsset: t.exposeString('notifyAsset', {
      nullable: true,
      description: 'The orchestrator’s asset: an Airflow asset id, or a Dagster asset key; null for GENERIC.',
    }),
    expectedBy: t.field({
      type: [ExpectedByRef],
      description: 'The required jobs that have an expected-by deadline.',
      resolve: (g) => g.expectedBy,
    }),
    definedAt: t.field({ type: 'DateTime', resolve: (g) => g.definedAt }),
    definedBy: t.exposeString('definedBy'),
    dispatches: t.field({
      type: [GateDispatchRef],
      description: 'The gate’s GATE_READY calls, newest first.',
      complexity: pagedCost('last', 20, MAX_GATE_DISPATCHES_PAGE),
      args: argsOf(t, gateDispatchesArgs),
      resolve: (g, args, ctx) => {
        const q = f.parseCommand(gateDispatchesArgs, args, 'args');
        return listGateDispatches(ctx.services.db.prisma, g.consumer, q.businessDate, q.last);
      },
    }),
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
    evidence: t.field({ type: [EvidenceRef], resolve: (p) => dated(p.evidence, p.businessDate) }),
  }),
});

const PublicationConnection = builder
  .objectRef<{ publications: PublicationRecord[]; hasNextPage: boolean }>('PublicationConnection')
  .implement({
    fields: (t) => ({
      // the page's size is counted once, by publications(first)
      nodes: t.field({ type: [PublicationRef], complexity: { field: 1, multiplier: 1 }, resolve: (c) => c.publications }),
      pageInfo: t.field({
        type: PageInfo,
        resolve: (c) => ({ hasNextPage: c.hasNextPage, endCursor: c.publications.at(-1)?.businessDate ?? null }),
      }),
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
  operation: recordObservationOperation,
});

// ---- defineGate ----

const DefineGatePayload = builder.objectRef<DefineGateResult>('DefineGatePayload').implement({
  fields: (t) => ({
    gate: t.field({ type: GateRef, resolve: (p) => p.gate }),
    changed: t.exposeBoolean('changed'),
    decisions: t.field({
      type: [ReadinessDecisionRef],
      description:
        'The readiness decisions this definition recorded: the business dates it made ready, or no longer ready (of the ' +
        `latest ${DECIDED_AT_DEFINITION} dates with an attempt of a required job or a decision).`,
      resolve: (p) => p.decisions,
    }),
  }),
});

/** An http(s) URL a worker can POST to; no user:password (it would be shown to every viewer). */
const notifyUrl = z
  .string()
  .max(2000, 'at most 2000 characters')
  .refine((text) => {
    if (!URL.canParse(text)) return false;
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
  }, 'must be an http:// or https:// URL without credentials');

const expectedByInput = inputObject(
  'ExpectedByInput',
  z.object({
    jobId: identifier.describe('A job of requiredJobs.'),
    daysAfter: z
      .number()
      .int()
      .min(0, 'must be >= 0')
      .max(MAX_DAYS_AFTER, `must be <= ${MAX_DAYS_AFTER}`)
      .describe(`The deadline falls on the business date plus this many days (0 to ${MAX_DAYS_AFTER}).`),
    time: z.string().regex(TIME_OF_DAY, 'must be HH:MM, 00:00 to 23:59').describe('Wall-clock time HH:MM in timeZone.'),
    timeZone: z
      .string()
      .max(64, 'at most 64 characters')
      .transform((zone, ctx) => {
        const canonical = canonicalTimeZone(zone);
        if (canonical === null) ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone name such as Asia/Seoul' });
        return canonical ?? zone;
      })
      .describe('An IANA time zone name, e.g. Asia/Seoul or America/New_York.'),
  }),
);

defineMutation('defineGate', {
  roles: OPERATOR,
  description:
    'Defines (or redefines) which upstream jobs a consumer needs for each business date, optionally where its readiness ' +
    'decisions are delivered (notifyUrl) and by when each job is expected (expectedBy). Existing publications keep their ' +
    'evidence. A changed definition decides readiness at once for the latest business dates it may have changed.',
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
      notifyUrl: f
        .optional(notifyUrl)
        .describe(
          'Where each readiness decision is POSTed (a GATE_READY dispatch, with the same leases, backoff, DEAD and ' +
            'resendDispatch as the other calls): {dispatchId, consumer, businessDate, version, ready, evidence, decidedAt}, ' +
            'header X-Dispatch-Id. A 2xx is the receipt. None: no calls.',
        ),
      notifyFormat: f
        .withDefault(inputEnum(GateReceiverFormatEnum, GATE_RECEIVER_FORMATS), 'GENERIC' as GateReceiverFormat)
        .describe('What the receiver at notifyUrl takes (GateReceiverFormat); GENERIC when left out.'),
      notifyAsset: f
        .optional(z.string().max(1100, 'at most 1100 characters'))
        .describe(
          `AIRFLOW: ${ORCHESTRATOR_ASSET.AIRFLOW.description}. DAGSTER: ${ORCHESTRATOR_ASSET.DAGSTER.description}. None for GENERIC.`,
        ),
      expectedBy: f
        .optional(z.array(expectedByInput).max(100, 'at most 100 deadlines'), [])
        .describe('Per required job (at most once each), by when its attempt for a business date is expected to succeed.'),
    })
    .refine((gate) => gate.boundJobKey === null || !gate.requiredJobs.includes(gate.boundJobKey), {
      path: ['boundJobKey'],
      message: 'a gate cannot require the job it holds back',
    })
    .superRefine((gate, ctx) => {
      if (gate.notifyFormat === 'GENERIC') {
        if (gate.notifyAsset !== null) ctx.addIssue({ code: 'custom', path: ['notifyAsset'], message: 'only for AIRFLOW or DAGSTER' });
        return;
      }
      if (gate.notifyUrl === null)
        ctx.addIssue({
          code: 'custom',
          path: ['notifyUrl'],
          message: `required with notifyFormat ${gate.notifyFormat}: the API's base URL`,
        });
      const asset = ORCHESTRATOR_ASSET[gate.notifyFormat];
      if (gate.notifyAsset === null || !asset.pattern.test(gate.notifyAsset))
        ctx.addIssue({ code: 'custom', path: ['notifyAsset'], message: `must be ${asset.description}` });
    })
    .superRefine((gate, ctx) => {
      const seen = new Set<string>();
      for (const [i, e] of gate.expectedBy.entries()) {
        if (!gate.requiredJobs.includes(e.jobId)) {
          ctx.addIssue({ code: 'custom', path: ['expectedBy', i, 'jobId'], message: 'must be one of requiredJobs' });
        } else if (seen.has(e.jobId)) {
          ctx.addIssue({ code: 'custom', path: ['expectedBy', i, 'jobId'], message: 'must not repeat a job' });
        }
        seen.add(e.jobId);
      }
    }),
  payload: DefineGatePayload,
  operation: defineGateOperation,
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
  operation: publishOperation,
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

const byConsumer = z.object({ consumer: identifier });

builder.queryField('gate', (t) =>
  t.field({
    type: GateRef,
    nullable: true,
    extensions: ANY_ROLE,
    description: 'A consumer’s gate; null when none is defined.',
    args: argsOf(t, byConsumer),
    resolve: (_root, args, ctx) => getGate(ctx.services.db.prisma, f.parseCommand(byConsumer, args, 'args').consumer),
  }),
);

const publicationsArgs = z
  .object({
    consumer: identifier,
    from: f.optional(date).describe('The earliest business date, included.'),
    to: f.optional(date).describe('The latest business date, included.'),
    first: z.number().int().min(1, 'must be >= 1').max(MAX_PUBLICATIONS_PAGE, `must be <= ${MAX_PUBLICATIONS_PAGE}`).default(20),
    after: f.optional(date).describe('pageInfo.endCursor of the previous page: the page starts before that business date.'),
  })
  .refine((q) => q.from === null || q.to === null || q.from <= q.to, { path: ['to'], message: 'must not be before from' });

builder.queryField('publications', (t) =>
  t.field({
    type: PublicationConnection,
    nullable: true,
    extensions: ANY_ROLE,
    description: 'A consumer’s publications with their evidence, newest business date first, a page at a time.',
    complexity: pagedCost('first', 20, MAX_PUBLICATIONS_PAGE),
    args: argsOf(t, publicationsArgs),
    resolve: (_root, args, ctx) => listPublications(ctx.services.db.prisma, f.parseCommand(publicationsArgs, args, 'args')),
  }),
);

const decisionsArgs = z.object({
  consumer: identifier,
  businessDate: date,
  last: z.number().int().min(1, 'must be >= 1').max(MAX_DECISIONS_PAGE, `must be <= ${MAX_DECISIONS_PAGE}`).default(20),
});

builder.queryField('readinessDecisions', (t) =>
  t.field({
    type: [ReadinessDecisionRef],
    nullable: true,
    extensions: ANY_ROLE,
    description: 'The recorded readiness decisions of a consumer for a business date, newest first (the first is the current one).',
    complexity: pagedCost('last', 20, MAX_DECISIONS_PAGE),
    args: argsOf(t, decisionsArgs),
    resolve: (_root, args, ctx) => {
      const q = f.parseCommand(decisionsArgs, args, 'args');
      return listDecisions(ctx.services.db.prisma, q.consumer, q.businessDate, q.last);
    },
  }),
);

builder.subscriptionField('readinessChanged', (t) =>
  t.field({
    type: ReadinessRef,
    nullable: true,
    extensions: ANY_ROLE,
    description:
      'A consumer’s readiness for a business date: the current one first, then after every recorded decision (it became ' +
      'ready, stopped being ready, or its evidence changed; `decision.version` counts them). After a LISTEN reconnect: ' +
      'the current one again.',
    args: argsOf(t, byConsumerAndDate),
    subscribe: (_root, args, ctx) => {
      const q = f.parseCommand(byConsumerAndDate, args, null);
      return realtimeFor(ctx).readiness.subscribe(q.consumer, q.businessDate);
    },
    resolve: (current) => current,
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
