import { RUN_ID_PREFIX } from '../domain/runs/run-id-prefix.js';
import { z } from 'zod';
import type { AuthMethod } from '../auth/principal.js';
import type { Tx } from '../db/client.js';
import { DomainError } from '../contract/errors.js';
import { createRunOperation } from '../domain/runs/create-run.js';
import {
  countPartitions,
  decodePartitionCursor,
  encodePartitionCursor,
  partitionPage,
  type PartitionPage,
  type PartitionPageFilter,
} from '../domain/runs/partition-page.js';
import { failRunOperation } from '../domain/runs/fail-run.js';
import {
  decodeEventCursor,
  encodeEventCursor,
  EVENT_LEVELS,
  listRunsEvents,
  runEventPage,
  type EventPage,
  type EventPageFilter,
  type EventRow,
} from '../domain/events/events.js';
import {
  decodeRunCursor,
  encodeRunCursor,
  getRun,
  listDispatches,
  listMetrics,
  listPartitions,
  listRuns,
  RUN_ORDERS,
  partitionCounts,
  receivedRows,
  resumedAs,
  newerAttempt,
  carriedPartitions,
  type CarriedPartitions,
  type DispatchRecord,
  type MetricRecord,
  type PartitionRecord,
  type RunRecord,
} from '../domain/runs/queries.js';
import * as f from '../domain/fields.js';
import { runStall, STALL_PARTITIONS_SHOWN, type RunStall } from '../domain/monitor/stalls.js';
import { allowedRunActions, PARTITION_STATUSES, RESUMABLE_RUN_STATUSES, RUN_STATUSES, type RunStatus } from '../domain/states.js';
import { builder, type GraphQLContext } from './builder.js';
import { LIST_ESTIMATES, MAX_EVENTS_PAGE, MAX_PARTITIONS_PAGE, MAX_PARTITIONS_PER_RUN, MAX_RUNS_PAGE, pagedCost } from './cost.js';
import { deliveryFields } from './dispatch-fields.js';
import { AuthMethodEnum, DispatchTypeEnum, EventLevelEnum, PartitionStatusEnum, RunActionEnum, RunStatusEnum } from './enums.js';
import { argsOf, dateTime, inputEnum, inputObject, uuid } from './inputs.js';
import { inSlices } from './list-slices.js';
import { defineMutation } from './mutation.js';
import { ANY_ROLE, NIFI } from './roles.js';

const MAX_RUN_EVENTS = 1000;
// a run in a page may start reads of its own (events, counts): fewer per turn than plain rows
const RUN_SLICE = 50;

const runStatus = inputEnum(RunStatusEnum, RUN_STATUSES);
const RunOrderEnum = builder.enumType('RunOrder', { values: RUN_ORDERS });
const reader = (ctx: GraphQLContext): Tx => ctx.services.db.prisma;

export const PartitionRef = builder.objectRef<PartitionRecord>('Partition').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (p) => p.runId }),
    partitionId: t.exposeString('partitionId'),
    status: t.field({ type: PartitionStatusEnum, resolve: (p) => p.status }),
    lowerBound: t.field({ type: 'Decimal', nullable: true, resolve: (p) => p.lowerBound?.toFixed() ?? null }),
    upperBound: t.field({ type: 'Decimal', nullable: true, resolve: (p) => p.upperBound?.toFixed() ?? null }),
    upperInclusive: t.exposeBoolean('upperInclusive'),
    isNullPartition: t.exposeBoolean('isNullPartition'),
    expectedRowCount: t.field({ type: 'Long', resolve: (p) => p.expectedRowCount }),
    actualRowCount: t.field({ type: 'Long', nullable: true, resolve: (p) => p.actualRowCount }),
    fileCount: t.exposeInt('fileCount', { nullable: true }),
    byteCount: t.field({ type: 'Long', nullable: true, resolve: (p) => p.byteCount }),
    receivedChunks: t.exposeInt('receivedChunks'),
    receivedRows: t.field({ type: 'Long', resolve: (p) => p.receivedRows }),
    reportedChunkCount: t.exposeInt('reportedChunkCount', { nullable: true }),
    attemptCount: t.exposeInt('attemptCount'),
    workerNode: t.exposeString('workerNode', { nullable: true }),
    claimedBy: t.exposeString('claimedBy', { nullable: true }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.startedAt }),
    heartbeatAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.heartbeatAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.completedAt }),
    errorCode: t.exposeString('errorCode', { nullable: true }),
    errorMessage: t.exposeString('errorMessage', { nullable: true }),
    carriedFromRunId: t.field({
      type: 'UUID',
      nullable: true,
      description:
        'For a partition of a resumed run that succeeded in an earlier attempt and was carried over (resumeRun): the run ' +
        'whose extraction wrote its files, where they are recorded. Null for a partition extracted by its own run.',
      resolve: (p) => p.carriedFromRunId,
    }),
  }),
});

const DispatchRef = builder.objectRef<DispatchRecord>('Dispatch').implement({
  fields: (t) => ({
    ...deliveryFields(t),
    runId: t.field({ type: 'UUID', resolve: (d) => d.runId }),
    dispatchType: t.field({ type: DispatchTypeEnum, resolve: (d) => d.dispatchType }),
    partitionId: t.exposeString('partitionId', { nullable: true }),
    sentAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.sentAt }),
  }),
});

const RunTagRef = builder.objectRef<{ key: string; value: string }>('RunTag').implement({
  description: 'One of a run’s tags (createRun’s `tags`, written key=value).',
  fields: (t) => ({ key: t.exposeString('key'), value: t.exposeString('value') }),
});

// by key: jsonb keeps an object's keys shortest first
const tagList = (tags: unknown): Array<{ key: string; value: string }> =>
  tags !== null && typeof tags === 'object'
    ? Object.entries(tags as Record<string, string>)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, value]) => ({ key, value }))
    : [];

const CarriedPartitionsRef = builder.objectRef<CarriedPartitions>('CarriedPartitions').implement({
  description: 'Partitions a resumed run carried over SUCCESS, and the earlier attempt whose extraction wrote their files.',
  fields: (t) => ({
    fromRunId: t.field({ type: 'UUID', resolve: (c) => c.fromRunId }),
    partitionIds: t.exposeStringList('partitionIds'),
  }),
});

const MetricRef = builder.objectRef<MetricRecord>('Metric').implement({
  fields: (t) => ({
    stage: t.exposeString('stage'),
    metricName: t.exposeString('metricName'),
    queryVersion: t.exposeString('queryVersion'),
    expectedValue: t.exposeString('expectedValue', { nullable: true }),
    actualValue: t.exposeString('actualValue', { nullable: true }),
    tolerance: t.exposeString('tolerance', { nullable: true }),
    result: t.exposeString('result'),
    details: t.field({ type: 'JSON', resolve: (m) => m.details }),
    measuredAt: t.field({ type: 'DateTime', resolve: (m) => m.measuredAt }),
  }),
});

const EventRef = builder.objectRef<EventRow>('Event').implement({
  fields: (t) => ({
    eventId: t.field({ type: 'UUID', resolve: (e) => e.eventId }),
    eventTime: t.field({ type: 'DateTime', resolve: (e) => e.eventTime }),
    level: t.exposeString('level'),
    name: t.exposeString('name'),
    partitionId: t.exposeString('partitionId', { nullable: true }),
    chunkIndex: t.exposeInt('chunkIndex', { nullable: true }),
    processGroup: t.exposeString('processGroup', { nullable: true }),
    processorName: t.exposeString('processorName', { nullable: true }),
    nodeId: t.exposeString('nodeId', { nullable: true }),
    errorClass: t.exposeString('errorClass', { nullable: true }),
    errorCode: t.exposeString('errorCode', { nullable: true }),
    message: t.exposeString('message', { nullable: true }),
    details: t.field({ type: 'JSON', resolve: (e) => e.details }),
    actor: t.exposeString('actor', { nullable: true }),
    authenticatedBy: t.field({
      type: AuthMethodEnum,
      nullable: true,
      description: "How the actor proved who it is; null for the worker's own events and events from before it was recorded.",
      resolve: (e) => (e.actorAuth as AuthMethod | null) ?? null,
    }),
    actorIssuer: t.exposeString('actorIssuer', {
      nullable: true,
      description: "The OpenID provider's issuer, for a JWT or a console session.",
    }),
    actorSubject: t.exposeString('actorSubject', { nullable: true, description: "The actor's `sub` at that provider." }),
  }),
});

export const PageInfo = builder.objectRef<{ hasNextPage: boolean; endCursor: string | null }>('PageInfo').implement({
  fields: (t) => ({ hasNextPage: t.exposeBoolean('hasNextPage'), endCursor: t.exposeString('endCursor', { nullable: true }) }),
});

const PartitionConnection = builder
  .objectRef<PartitionPage & { runId: string; filter: PartitionPageFilter }>('PartitionConnection')
  .implement({
    fields: (t) => ({
      // the page's size is counted once, by partitionPage(first)
      nodes: t.field({ type: [PartitionRef], complexity: { field: 1, multiplier: 1 }, resolve: (c) => inSlices(c.partitions) }),
      pageInfo: t.field({
        type: PageInfo,
        resolve: (c) => ({
          hasNextPage: c.hasNextPage,
          endCursor: c.partitions.length ? encodePartitionCursor(c.partitions[c.partitions.length - 1]!.partitionId) : null,
        }),
      }),
      totalCount: t.int({
        description: 'The partitions the status and search match, on every page alike (counted only when asked for).',
        resolve: (c, _a, ctx) => countPartitions(reader(ctx), c.runId, c.filter),
      }),
    }),
  });

const partitionPageArgs = z.object({
  first: z.number().int().min(1).max(MAX_PARTITIONS_PAGE).default(100),
  after: z.string().max(200).nullish().describe('The endCursor of the page before.'),
  status: inputEnum(PartitionStatusEnum, PARTITION_STATUSES).nullish(),
  search: f.text(40).nullish().describe('Partitions whose id contains this text, in any case (% and _ are plain characters).'),
});

const EventConnection = builder.objectRef<EventPage>('EventConnection').implement({
  fields: (t) => ({
    // the page's size is counted once, by eventPage(first)
    nodes: t.field({ type: [EventRef], complexity: { field: 1, multiplier: 1 }, resolve: (c) => c.events }),
    pageInfo: t.field({
      type: PageInfo,
      resolve: (c) => ({ hasNextPage: c.hasNextPage, endCursor: c.events.length ? encodeEventCursor(c.events.at(-1)!.eventId) : null }),
    }),
  }),
});

const eventPageArgs = z.object({
  first: z.number().int().min(1).max(MAX_EVENTS_PAGE).default(50),
  after: z.string().max(200).nullish().describe('The endCursor of the page before: the next page holds older events.'),
  minLevel: inputEnum(EventLevelEnum, EVENT_LEVELS).nullish().describe('This level and the ones above it (WARN: WARN and ERROR).'),
  name: f.text(80).nullish().describe('One kind of event, by its name (RUN_FAILED, RECOVERY_REISSUED, …).'),
  partitionId: f.text(40).nullish(),
  operatorActions: z.boolean().nullish().describe('Only the events an operator’s action wrote (cancel, resolve, resend, reissue).'),
});

const runEventsArgs = z.object({ last: z.number().int().min(1).max(MAX_RUN_EVENTS).default(200) });

export const StatusCount = builder.objectRef<{ status: string; count: number }>('StatusCount').implement({
  fields: (t) => ({ status: t.exposeString('status'), count: t.exposeInt('count') }),
});

const RunStallRef = builder.objectRef<RunStall>('RunStall').implement({
  description:
    'What it takes to tell whether an extracting run stalled, as time passes without a report: monitor.stallAfter, when the ' +
    'run last moved, and its quietest RUNNING partitions. A partition is stalled once its heartbeat is older than ' +
    'stallAfterSeconds; the run, once one is or it has not moved for that long (the STALLED_RUN alert).',
  fields: (t) => ({
    stallAfterSeconds: t.int({ resolve: (s) => Math.round(s.stallAfterMs / 1000) }),
    lastProgressAt: t.field({ type: 'DateTime', resolve: (s) => s.lastProgressAt }),
    quietestPartitions: t.field({
      type: [PartitionRef],
      description: `The run's RUNNING partitions, the oldest heartbeat first, at most ${STALL_PARTITIONS_SHOWN}.`,
      complexity: { field: 1, multiplier: STALL_PARTITIONS_SHOWN },
      resolve: (s) => s.quietest,
    }),
  }),
});

export const RunRef = builder.objectRef<RunRecord>('Run').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (r) => r.runId }),
    jobKey: t.exposeString('jobKey'),
    businessKey: t.exposeString('businessKey'),
    status: t.field({ type: RunStatusEnum, resolve: (r) => r.status }),
    allowedActions: t.field({
      type: [RunActionEnum],
      description:
        'What an operator may do to the run in its status, by the state machine: CANCEL, RESOLVE_UNKNOWN, ' +
        'REISSUE_PARTITION (of its PENDING or RUNNING partitions), RESEND_DISPATCH (of its DEAD or SENT dispatches), ' +
        'RESUME (a failed run with a manifest and an SCN, its extraction unfinished, no newer attempt of its key)',
      resolve: async (r, _a, ctx) =>
        allowedRunActions(
          r.status,
          RESUMABLE_RUN_STATUSES.includes(r.status) &&
            r.snapshotScn !== null &&
            r.extractCompletedAt === null &&
            (await newerAttempt(reader(ctx), r.runId)) === null,
        ),
    }),
    snapshotScn: t.field({ type: 'Decimal', nullable: true, resolve: (r) => r.snapshotScn?.toFixed() ?? null }),
    sourceCount: t.field({ type: 'Long', nullable: true, resolve: (r) => r.sourceCount }),
    sourceNullSplitCount: t.field({ type: 'Long', nullable: true, resolve: (r) => r.sourceNullSplitCount }),
    sourceMinSplit: t.field({ type: 'Decimal', nullable: true, resolve: (r) => r.sourceMinSplit?.toFixed() ?? null }),
    sourceMaxSplit: t.field({ type: 'Decimal', nullable: true, resolve: (r) => r.sourceMaxSplit?.toFixed() ?? null }),
    expectedPartitionCount: t.exposeInt('expectedPartitionCount', { nullable: true }),
    successPartitionCount: t.exposeInt('successPartitionCount'),
    failedPartitionCount: t.exposeInt('failedPartitionCount'),
    extractedCount: t.field({ type: 'Long', resolve: (r) => r.extractedCount }),
    stagingCount: t.field({ type: 'Long', nullable: true, resolve: (r) => r.stagingCount }),
    targetCount: t.field({ type: 'Long', nullable: true, resolve: (r) => r.targetCount }),
    hdfsRunPath: t.exposeString('hdfsRunPath', { nullable: true }),
    stageTable: t.exposeString('stageTableName', { nullable: true }),
    parameters: t.field({ type: 'JSON', resolve: (r) => r.parameters }),
    idempotencyKey: t.exposeString('idempotencyKey', { nullable: true }),
    createdBy: t.exposeString('createdBy', { nullable: true }),
    backfillId: t.field({
      type: 'UUID',
      nullable: true,
      description: 'The backfill whose START_LOAD call started the run (createRun carried its id); null for other runs.',
      resolve: (r) => r.backfillId,
    }),
    tags: t.field({
      type: [RunTagRef],
      description: 'The run’s tags, by key (none for runs from before tags existed).',
      resolve: (r) => tagList(r.tags),
    }),
    flowRegistry: t.exposeString('flowRegistry', {
      nullable: true,
      description: 'The NiFi registry client of the flow that created the run.',
    }),
    flowBucket: t.exposeString('flowBucket', { nullable: true, description: 'The flow’s bucket in that registry.' }),
    flowId: t.exposeString('flowId', { nullable: true, description: 'The flow’s id in that bucket.' }),
    flowVersion: t.exposeString('flowVersion', { nullable: true, description: 'The flow’s version that created the run.' }),
    resumedFromRunId: t.field({
      type: 'UUID',
      nullable: true,
      description: 'The failed run this one resumes (resumeRun): its manifest, SCN, HDFS run path and SUCCESS partitions.',
      resolve: (r) => r.retryOfRunId,
    }),
    carriedPartitions: t.field({
      type: [CarriedPartitionsRef],
      description: 'For a resumed run, its partitions carried over SUCCESS, by the run they come from; empty otherwise.',
      complexity: { field: 1, multiplier: 2 },
      resolve: (r, _a, ctx) => (r.retryOfRunId === null ? [] : carriedPartitions(reader(ctx), r.runId)),
    }),
    resumedAsRunId: t.field({
      type: 'UUID',
      nullable: true,
      description: 'The attempt that resumed this run, when one did.',
      resolve: (r, _a, ctx) => resumedAs(reader(ctx), r.runId),
    }),
    startedAt: t.field({ type: 'DateTime', resolve: (r) => r.startedAt }),
    heartbeatAt: t.field({ type: 'DateTime', resolve: (r) => r.heartbeatAt }),
    extractCompletedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.extractCompletedAt }),
    publishStartedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.publishStartedAt }),
    publishToken: t.field({
      type: 'UUID',
      nullable: true,
      description: 'The token of the flow that claimed the publish step (claimPublish).',
      resolve: (r) => r.publishToken,
    }),
    publishQueryId: t.exposeString('publishQueryId', {
      nullable: true,
      description: 'The Hive query id PG-50 reported with its publish result, when it knew one.',
    }),
    publishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.publishedAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.completedAt }),
    cleanedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.cleanedAt }),
    purgedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        'When ledger retention (retention.ledger) deleted the run’s partitions, files, metrics, dispatches and ' +
        'events; those lists are empty from then on. This row is the run’s summary and stays.',
      resolve: (r) => r.purgedAt,
    }),
    errorStage: t.exposeString('errorStage', { nullable: true }),
    errorCode: t.exposeString('errorCode', { nullable: true }),
    errorMessage: t.exposeString('errorMessage', { nullable: true }),
    // the lists below that are loaded (loadableList) are read for all the runs of a page at once, not one
    // statement per run; never cached, since a subscription keeps its context from one event to the next
    partitionCounts: t.loadableList({
      type: StatusCount,
      loaderOptions: { cache: false },
      load: (runIds: string[], ctx) => partitionCounts(reader(ctx), runIds),
      resolve: (r) => r.runId,
    }),
    receivedRows: t.loadable({
      type: 'Long',
      description:
        'Rows received in chunks so far across the run’s partitions, a partition’s rows counting before it finishes ' +
        '(extractedCount counts finished partitions only); 0 once the run is purged.',
      loaderOptions: { cache: false },
      load: (runIds: string[], ctx) => receivedRows(reader(ctx), runIds),
      resolve: (r) => r.runId,
    }),
    partitionPage: t.field({
      type: PartitionConnection,
      description: 'A page of the run’s partitions in partition order: what the console shows. Empty once the run is purged.',
      complexity: pagedCost('first', 100, MAX_PARTITIONS_PAGE),
      args: argsOf(t, partitionPageArgs),
      resolve: async (r, args, ctx) => {
        const parsed = f.parseCommand(partitionPageArgs, args, null);
        const after = parsed.after ? decodePartitionCursor(parsed.after) : null;
        if (parsed.after && after === null)
          throw new DomainError('INVALID_INPUT', { field: 'after', reason: 'not a cursor from this API' });
        const filter = { status: parsed.status ?? null, search: parsed.search || null };
        return { runId: r.runId, filter, ...(await partitionPage(reader(ctx), r.runId, filter, parsed.first, after)) };
      },
    }),
    eventPage: t.field({
      type: EventConnection,
      description:
        'A page of the run’s events, newest first, filtered by level, kind, partition or operator actions; the next page ' +
        '(after: endCursor) holds older ones. Empty once the run is purged.',
      complexity: pagedCost('first', 50, MAX_EVENTS_PAGE),
      args: argsOf(t, eventPageArgs),
      resolve: (r, args, ctx) => {
        const parsed = f.parseCommand(eventPageArgs, args, null);
        const after = parsed.after ? decodeEventCursor(parsed.after) : null;
        if (parsed.after && after === null)
          throw new DomainError('INVALID_INPUT', { field: 'after', reason: 'not a cursor from this API' });
        const filter: EventPageFilter = {
          minLevel: parsed.minLevel ?? null,
          name: parsed.name || null,
          partitionId: parsed.partitionId || null,
          operatorActions: parsed.operatorActions ?? false,
        };
        return runEventPage(reader(ctx), r.runId, filter, parsed.first, after);
      },
    }),
    stall: t.field({
      type: RunStallRef,
      nullable: true,
      description: 'For an EXTRACTING run, what tells whether it stalled (RunStall); null in every other status.',
      resolve: (r, _a, ctx) => (r.status === 'EXTRACTING' ? runStall(reader(ctx), r.runId, ctx.services.config.monitor.stallAfter) : null),
    }),
    partitions: t.field({
      type: [PartitionRef],
      description: 'Every partition of the run at once (up to 10,000); kept for existing clients, the console reads partitionPage.',
      complexity: { field: 1, multiplier: MAX_PARTITIONS_PER_RUN },
      args: { status: t.arg({ type: PartitionStatusEnum }) },
      resolve: async (r, args, ctx) => inSlices(await listPartitions(reader(ctx), r.runId, args.status ?? null)),
    }),
    dispatches: t.field({
      type: [DispatchRef],
      complexity: { field: 1, multiplier: LIST_ESTIMATES.dispatchesPerRun },
      resolve: async (r, _a, ctx) => inSlices(await listDispatches(reader(ctx), r.runId)),
    }),
    metrics: t.field({
      type: [MetricRef],
      complexity: { field: 1, multiplier: LIST_ESTIMATES.metricsPerRun },
      resolve: async (r, _a, ctx) => inSlices(await listMetrics(reader(ctx), r.runId)),
    }),
    // byPath: each selection of events, with its own `last`, is its own batch
    events: t.loadableList({
      type: EventRef,
      byPath: true,
      loaderOptions: { cache: false },
      complexity: pagedCost('last', 200, MAX_RUN_EVENTS),
      args: argsOf(t, runEventsArgs),
      load: (runIds: string[], ctx, args) => listRunsEvents(reader(ctx), runIds, f.parseCommand(runEventsArgs, args, null).last),
      resolve: (r, args) => {
        f.parseCommand(runEventsArgs, args, null);
        return r.runId;
      },
    }),
  }),
});

const RunEdge = builder.objectRef<RunRecord>('RunEdge').implement({
  fields: (t) => ({
    cursor: t.string({ resolve: (r) => encodeRunCursor(r) }),
    node: t.field({ type: RunRef, resolve: (r) => r }),
  }),
});

const RunConnection = builder.objectRef<{ runs: RunRecord[]; hasNextPage: boolean }>('RunConnection').implement({
  fields: (t) => ({
    // the page's size is counted once, by runs(first)
    edges: t.field({ type: [RunEdge], complexity: { field: 1, multiplier: 1 }, resolve: (c) => inSlices(c.runs, RUN_SLICE) }),
    nodes: t.field({ type: [RunRef], complexity: { field: 1, multiplier: 1 }, resolve: (c) => inSlices(c.runs, RUN_SLICE) }),
    pageInfo: t.field({
      type: PageInfo,
      resolve: (c) => ({ hasNextPage: c.hasNextPage, endCursor: c.runs.length ? encodeRunCursor(c.runs[c.runs.length - 1]!) : null }),
    }),
  }),
});

builder.queryField('run', (t) =>
  t.field({
    type: RunRef,
    nullable: true,
    extensions: ANY_ROLE,
    args: { runId: t.arg({ type: 'UUID', required: true }) },
    resolve: (_root, args, ctx) => getRun(reader(ctx), args.runId),
  }),
);

const listRunsArgs = z.object({
  filter: inputObject(
    'RunFilter',
    z.object({
      jobKey: f.text(200).nullish(),
      businessKey: f.text(200).nullish(),
      jobKeyContains: f.text(200).nullish().describe('Runs whose job key contains this text, in any case.'),
      businessKeyContains: f.text(200).nullish().describe('Runs whose business key contains this text, in any case.'),
      status: runStatus.nullish(),
      activeOnly: z.boolean().nullish(),
      startedFrom: dateTime.nullish().describe('Runs started at or after this instant.'),
      startedBefore: dateTime.nullish().describe('Runs started before this instant.'),
      runIdPrefix: z
        .string()
        .regex(RUN_ID_PREFIX, 'hexadecimal digits of a run id (at least 4; hyphens allowed)')
        .nullish()
        .describe('Runs whose id begins with these hexadecimal digits (at least 4; hyphens ignored): the short ids the console shows.'),
      tags: f.tags.nullish().describe('Runs carrying every one of these tags, written key=value[,key=value…].'),
    }),
  ).nullish(),
  first: z.number().int().min(1).max(MAX_RUNS_PAGE).default(50),
  after: z.string().max(200).nullish(),
  order: inputEnum(RunOrderEnum, RUN_ORDERS).nullish().describe('By start: NEWEST_FIRST (the default) or OLDEST_FIRST.'),
});

builder.queryField('runs', (t) =>
  t.field({
    type: RunConnection,
    nullable: true,
    extensions: ANY_ROLE,
    complexity: pagedCost('first', 50, MAX_RUNS_PAGE),
    args: argsOf(t, listRunsArgs),
    resolve: (_root, args, ctx) => {
      const parsed = f.parseCommand(listRunsArgs, args, 'args');
      const after = parsed.after ? decodeRunCursor(parsed.after) : null;
      if (parsed.after && !after) throw new DomainError('INVALID_INPUT', { field: 'after', reason: 'not a cursor from this API' });
      return listRuns(reader(ctx), parsed.filter ?? {}, parsed.first, after, parsed.order ?? undefined);
    },
  }),
);

// ---- createRun ----

const CreateRunPayload = builder
  .objectRef<{ runId: string; status: RunStatus; hdfsRunPath: string; stageTable: string; created: boolean }>('CreateRunPayload')
  .implement({
    fields: (t) => ({
      runId: t.field({ type: 'UUID', resolve: (p) => p.runId }),
      status: t.field({ type: RunStatusEnum, resolve: (p) => p.status }),
      hdfsRunPath: t.exposeString('hdfsRunPath'),
      stageTable: t.exposeString('stageTable'),
      created: t.exposeBoolean('created'),
    }),
  });

defineMutation('createRun', {
  roles: NIFI,
  input: z.object({
    jobKey: f.jobKey,
    businessKey: f.businessKey,
    hdfsRoot: f.hdfsPath(1000),
    stageTablePrefix: f.tablePrefix,
    allowEmptySource: f.withDefault(z.boolean(), false),
    parameters: f.optional(f.jsonObject, {}),
    idempotencyKey: f.optional(f.requiredText(200)).describe('NiFi: the FlowFile uuid. Same key and fields → the existing run.'),
    backfillId: f
      .optional(uuid)
      .describe("A backfill's START_LOAD call started this load: its backfillId (the call's body). The run is the backfill's."),
    tags: f
      .optional(f.tags, {})
      .describe(`Up to ${f.MAX_TAGS} tags to find the run by, written key=value[,key=value…] (NiFi: the LOAD.TAGS parameter).`),
    flowRegistry: f.optional(f.requiredText(200)).describe('The NiFi registry client of the flow (NiFi: FLOW.REGISTRY).'),
    flowBucket: f.optional(f.requiredText(200)).describe('The flow’s bucket (NiFi: FLOW.BUCKET).'),
    flowId: f.optional(f.requiredText(200)).describe('The flow’s id (NiFi: FLOW.ID).'),
    flowVersion: f.optional(f.requiredText(100)).describe('The flow’s version (NiFi: FLOW.VERSION).'),
  }),
  payload: CreateRunPayload,
  operation: createRunOperation,
});

// ---- failRun ----

const FailRunPayload = builder.objectRef<{ runId: string; runStatus: RunStatus; changed: boolean }>('FailRunPayload').implement({
  fields: (t) => ({
    runId: t.field({ type: 'UUID', resolve: (p) => p.runId }),
    runStatus: t.field({ type: RunStatusEnum, resolve: (p) => p.runStatus }),
    changed: t.exposeBoolean('changed'),
  }),
});

defineMutation('failRun', {
  roles: NIFI,
  input: z.object({
    runId: uuid,
    expectedStatus: runStatus,
    failStatus: runStatus,
    errorStage: f.requiredText(80),
    errorCode: f.requiredText(100),
    message: f.optional(f.text(2000), ''),
  }),
  payload: FailRunPayload,
  operation: failRunOperation,
});
