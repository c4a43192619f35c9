// The console's queries and subscriptions (names as in the API contract), typed from schema/schema.graphql by gql.tada
// (schema/documents/graphql.ts); its actions are the operator's mutations of schema/documents/operator.ts.
import type { ResultOf } from 'gql.tada';
import { graphql } from '../../../schema/documents/graphql.js';

const RUN_ROW = graphql(`
  fragment RunRow on Run {
    runId jobKey businessKey status expectedPartitionCount successPartitionCount failedPartitionCount
    sourceCount extractedCount stagingCount targetCount startedAt heartbeatAt completedAt errorCode tags { key value }
  }
`);

const PARTITION_FIELDS = graphql(`
  fragment PartitionFields on Partition {
    partitionId status expectedRowCount actualRowCount receivedChunks receivedRows reportedChunkCount
    attemptCount workerNode heartbeatAt startedAt completedAt errorCode errorMessage
  }
`);

const RUN_DETAIL = graphql(
  `
  fragment RunDetail on Run {
    ...RunRow
    allowedActions
    createdBy snapshotScn hdfsRunPath stageTable errorStage errorMessage extractCompletedAt publishStartedAt publishedAt
    publishToken publishQueryId cleanedAt purgedAt receivedRows
    flowRegistry flowBucket flowId flowVersion resumedFromRunId resumedAsRunId carriedPartitions { fromRunId partitionIds }
    partitionCounts { status count }
    stall { stallAfterSeconds lastProgressAt quietestPartitions { ...PartitionFields } }
    partitions @include(if: $withPartitions) { ...PartitionFields }
    dispatches { dispatchId dispatchType partitionId status attemptCount createdAt sentAt nextAttemptAt ackedAt deadAt cancelledAt
      lastHttpStatus lastError }
    metrics { stage metricName queryVersion expectedValue actualValue tolerance result measuredAt }
    events(last: 300) { eventId eventTime level name partitionId processGroup errorCode message actor }
    publishUnknown {
      raisedBy raisedAt actor errorCode message reportedDetails queryId publishStartedAt expectedRows checkJob target checkQuery
    }
  }
`,
  [RUN_ROW, PARTITION_FIELDS],
);

const ALERT_FIELDS = graphql(`
  fragment AlertFields on Alert { kind severity runId jobKey businessKey consumer status at message dispatchId partitionId groupKey }
`);

const ALERT_GROUP_FIELDS = graphql(
  `
  fragment AlertGroupFields on AlertGroup {
    groupKey kind severity causeType cause count firstAt lastAt acknowledged unacknowledgedCount
    latest { ...AlertFields }
    acknowledgement { at by note }
    snooze { until at by note }
  }
`,
  [ALERT_FIELDS],
);

const SUMMARY = graphql(
  `
  fragment Summary on MonitorSummary {
    serverTime recentWindowHours cleanupDue
    activeRuns { status count } recentRuns { status count } dispatches { status count }
    alerts { ...AlertFields }
    alertGroups(includeSnoozed: true) { ...AlertGroupFields }
  }
`,
  [ALERT_FIELDS, ALERT_GROUP_FIELDS],
);

export const ME = graphql(`query Me { me { name roles } }`);

export const PROCESSES = graphql(
  `query Processes { processes { instanceId role host pid version dispatcher sweeper state startedAt lastSeenAt lastSweepAt } }`,
);

export const ALERT_WEBHOOK_CALLS = graphql(`
  query AlertWebhookCalls($last: Int) {
    alertWebhookCalls(last: $last) {
      dispatchId receiver status attemptCount lastHttpStatus lastError createdAt ackedAt deadAt
      occurrence { dedupKey kind severity runId jobKey businessKey }
    }
  }
`);

export const RUNS = graphql(
  `
  query Runs($filter: RunFilter, $order: RunOrder, $first: Int, $after: String) {
    runs(filter: $filter, order: $order, first: $first, after: $after) { nodes { ...RunRow } pageInfo { hasNextPage endCursor } }
  }
`,
  [RUN_ROW],
);

export const RUNS_CHANGED = graphql(`subscription RunsChanged($jobKey: String) { runChanged(jobKey: $jobKey) { ...RunRow } }`, [RUN_ROW]);

export const RUN = graphql(`query Run($runId: UUID!, $withPartitions: Boolean!) { run(runId: $runId) { ...RunDetail } }`, [RUN_DETAIL]);

export const RUN_CHANGED = graphql(
  `subscription RunChanged($runId: UUID!, $withPartitions: Boolean!) { runChanged(runId: $runId) { ...RunDetail } }`,
  [RUN_DETAIL],
);

export const PARTITION_PAGE = graphql(
  `
  query PartitionPage($runId: UUID!, $first: Int, $after: String, $status: PartitionStatus, $search: String) {
    run(runId: $runId) {
      runId
      partitionPage(first: $first, after: $after, status: $status, search: $search) {
        nodes { ...PartitionFields }
        pageInfo { hasNextPage endCursor }
        totalCount
      }
    }
  }
`,
  [PARTITION_FIELDS],
);

export const MONITOR_SUMMARY = graphql(`query MonitorSummary { monitorSummary(alertLimit: 100) { ...Summary } }`, [SUMMARY]);

export const MONITOR_SUMMARY_CHANGED = graphql(
  `subscription MonitorSummaryChanged { monitorSummaryChanged(alertLimit: 100) { ...Summary } }`,
  [SUMMARY],
);

export const ALERT_RAISED = graphql(`subscription AlertRaised { alertRaised { ...AlertFields } }`, [ALERT_FIELDS]);

export const GATES = graphql(`query Gates { gates { consumer requiredJobs boundJobKey notifyUrl expectedBy { jobId text } } }`);

const READINESS_FIELDS = graphql(`
  fragment ReadinessFields on Readiness {
    consumer businessDate gateDefined ready
    jobs { jobId ready reason attempt state runId latest { source startedAt } expectedBy { text } deadline deadlineOutcome }
    decision { version ready decidedAt evidence { jobId attempt runId } }
  }
`);

export const READINESS = graphql(
  `
  query Readiness($consumer: String!, $businessDate: Date!) {
    readiness(consumer: $consumer, businessDate: $businessDate) { ...ReadinessFields }
  }
`,
  [READINESS_FIELDS],
);

export const READINESS_CHANGED = graphql(
  `
  subscription ReadinessChanged($consumer: String!, $businessDate: Date!) {
    readinessChanged(consumer: $consumer, businessDate: $businessDate) { ...ReadinessFields }
  }
`,
  [READINESS_FIELDS],
);

export const OBSERVATIONS = graphql(`
  query Observations($jobId: String!, $businessDate: Date!) {
    observations(jobId: $jobId, businessDate: $businessDate) { attempt runId state source startedAt }
  }
`);

export const GATE = graphql(`
  query Gate($consumer: String!) {
    gate(consumer: $consumer) {
      consumer requiredJobs boundJobKey notifyUrl definedAt definedBy expectedBy { jobId text }
      dispatches(last: 50) { dispatchId businessDate version status attemptCount lastHttpStatus lastError createdAt ackedAt deadAt }
    }
  }
`);

export const PUBLICATIONS = graphql(`
  query Publications($consumer: String!, $from: Date, $to: Date, $after: Date) {
    publications(consumer: $consumer, from: $from, to: $to, first: 20, after: $after) {
      nodes {
        businessDate publishedAt publishedBy outputHash
        evidence { jobId attempt runId attempts { attempt runId state source startedAt } }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
`);

export const PUBLICATION = graphql(`
  query Publication($consumer: String!, $businessDate: Date!) {
    publication(consumer: $consumer, businessDate: $businessDate) {
      publishedAt publishedBy outputHash evidence { jobId attempt runId }
    }
  }
`);

export const JOB_PAUSE = graphql(`
  query JobPause($jobKey: String!) { jobPause(jobKey: $jobKey) { jobKey paused pausedAt pausedBy pauseReason } }
`);

const BACKFILL_ROW = graphql(`
  fragment BackfillRow on Backfill {
    backfillId jobKey from to reprocess maxConcurrent order pushReadiness status createdBy createdAt pausedAt endedAt
    readinessHeld allowedActions progress { queued running succeeded failed skipped cancelled total }
  }
`);

export const BACKFILLS = graphql(
  `query Backfills($jobKey: String, $openOnly: Boolean) { backfills(jobKey: $jobKey, openOnly: $openOnly) { ...BackfillRow } }`,
  [BACKFILL_ROW],
);

export const BACKFILL = graphql(
  `
  query Backfill($backfillId: UUID!) {
    backfill(backfillId: $backfillId) {
      ...BackfillRow readinessReleasedAt readinessReleasedBy
      dates { businessDate position status reason runId startDispatchStatus updatedAt }
    }
  }
`,
  [BACKFILL_ROW],
);

export const PLAN_BACKFILL = graphql(`
  query PlanBackfill($jobKey: String!, $from: Date!, $to: Date!, $reprocess: BackfillReprocess!, $order: BackfillOrder) {
    planBackfill(jobKey: $jobKey, from: $from, to: $to, reprocess: $reprocess, order: $order) {
      position businessDate action reason latestRunId latestRunStatus otherBackfillId
    }
  }
`);

export const JOBS = graphql(`
  query Jobs($first: Int, $after: String, $jobKeyContains: String, $recentRuns: Int) {
    jobs(first: $first, after: $after, jobKeyContains: $jobKeyContains, recentRuns: $recentRuns) {
      nodes {
        jobKey successRate gatedBy
        lastRun { runId businessKey status startedAt completedAt }
        lastSuccess { runId businessKey startedAt completedAt }
        recentRuns { runId businessKey status startedAt completedAt }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
`);

export const JOB_MATRIX = graphql(`
  query JobMatrix($jobKeys: [String!], $consumer: String, $days: Int, $endDate: Date) {
    jobMatrix(jobKeys: $jobKeys, consumer: $consumer, days: $days, endDate: $endDate) {
      businessDates consumerReadiness
      rows { jobId gatedBy cells { businessDate attempts gateReady latest { attempt runId state source startedAt runStatus } } }
    }
  }
`);

// the shapes pages pass around, as the operations above select them
export type RunRow = ResultOf<typeof RUN_ROW>;
export type RunDetail = ResultOf<typeof RUN_DETAIL>;
export type Partition = ResultOf<typeof PARTITION_FIELDS>;
export type Dispatch = RunDetail['dispatches'][number];
export type Alert = ResultOf<typeof ALERT_FIELDS>;
export type AlertGroup = ResultOf<typeof ALERT_GROUP_FIELDS>;
export type MonitorSummary = ResultOf<typeof SUMMARY>;
export type StatusCount = MonitorSummary['activeRuns'][number];
/** An alert posted to a receiver of alerts.webhooks (an ALERT_WEBHOOK call). */
export type AlertWebhookCall = ResultOf<typeof ALERT_WEBHOOK_CALLS>['alertWebhookCalls'][number];
export type ProcessInstance = ResultOf<typeof PROCESSES>['processes'][number];
export type Readiness = ResultOf<typeof READINESS_FIELDS>;
export type Gate = NonNullable<ResultOf<typeof GATES>['gates']>[number];
export type GateDetail = NonNullable<ResultOf<typeof GATE>['gate']>;
export type GateDispatch = GateDetail['dispatches'][number];
export type Attempt = NonNullable<ResultOf<typeof OBSERVATIONS>['observations']>[number];
export type AuditedPublication = NonNullable<ResultOf<typeof PUBLICATIONS>['publications']>['nodes'][number];
export type Publication = NonNullable<ResultOf<typeof PUBLICATION>['publication']>;
export type JobSummary = ResultOf<typeof JOBS>['jobs']['nodes'][number];
export type JobMatrix = ResultOf<typeof JOB_MATRIX>['jobMatrix'];
export type Role = ResultOf<typeof ME>['me']['roles'][number];
export type JobPause = ResultOf<typeof JOB_PAUSE>['jobPause'];
export type BackfillRow = ResultOf<typeof BACKFILL_ROW>;
export type BackfillDetail = NonNullable<ResultOf<typeof BACKFILL>['backfill']>;
export type PlannedDate = ResultOf<typeof PLAN_BACKFILL>['planBackfill'][number];
