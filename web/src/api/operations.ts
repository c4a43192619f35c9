// The GraphQL operations of the console (names as in the API contract).

const RUN_ROW = `fragment RunRow on Run {
  runId jobKey businessKey status expectedPartitionCount successPartitionCount failedPartitionCount
  sourceCount extractedCount stagingCount targetCount startedAt heartbeatAt completedAt errorCode
}`;

const RUN_DETAIL = `fragment RunDetail on Run {
  ...RunRow
  snapshotScn hdfsRunPath stageTable errorStage errorMessage extractCompletedAt publishStartedAt publishedAt cleanedAt purgedAt
  partitionCounts { status count }
  partitions { partitionId status expectedRowCount actualRowCount receivedChunks receivedRows reportedChunkCount
    attemptCount workerNode heartbeatAt errorCode errorMessage }
  dispatches { dispatchId dispatchType partitionId status attemptCount createdAt sentAt ackedAt deadAt lastHttpStatus lastError }
  metrics { stage metricName queryVersion expectedValue actualValue tolerance result measuredAt }
  events(last: 300) { eventId eventTime level name partitionId processGroup errorCode message actor }
}
${RUN_ROW}`;

const SUMMARY = `fragment Summary on MonitorSummary {
  serverTime recentWindowHours cleanupDue
  activeRuns { status count } recentRuns { status count } dispatches { status count }
  alerts { kind severity runId jobKey businessKey status at message dispatchId partitionId }
}`;

export const PROCESSES = `query Processes { processes { instanceId role host pid version dispatcher sweeper state startedAt lastSeenAt lastSweepAt } }`;

export const ALERT_WEBHOOK_CALLS = `query AlertWebhookCalls($last: Int) { alertWebhookCalls(last: $last) {
  dispatchId receiver status attemptCount lastHttpStatus lastError createdAt ackedAt deadAt
  occurrence { dedupKey kind severity runId jobKey businessKey } } }`;

export const SIGN_IN_CHECK = `query SignInCheck { runs(first: 1) { nodes { runId } } }`;

export const RUNS = `query Runs($filter: RunFilter, $first: Int, $after: String) {
  runs(filter: $filter, first: $first, after: $after) { nodes { ...RunRow } pageInfo { hasNextPage endCursor } }
}
${RUN_ROW}`;

export const RUNS_CHANGED = `subscription RunsChanged($jobKey: String) { runChanged(jobKey: $jobKey) { ...RunRow } }
${RUN_ROW}`;

export const RUN = `query Run($runId: UUID!) { run(runId: $runId) { ...RunDetail } }
${RUN_DETAIL}`;

export const RUN_CHANGED = `subscription RunChanged($runId: UUID!) { runChanged(runId: $runId) { ...RunDetail } }
${RUN_DETAIL}`;

export const MONITOR_SUMMARY = `query MonitorSummary { monitorSummary(alertLimit: 100) { ...Summary } }
${SUMMARY}`;

export const MONITOR_SUMMARY_CHANGED = `subscription MonitorSummaryChanged { monitorSummaryChanged(alertLimit: 100) { ...Summary } }
${SUMMARY}`;

export const ALERT_RAISED = `subscription AlertRaised { alertRaised { kind severity runId jobKey businessKey status at message dispatchId partitionId } }`;

export const RESOLVE_UNKNOWN = `mutation ResolveUnknown($input: ResolveUnknownInput!) { resolveUnknown(input: $input) { runStatus changed } }`;

export const RESEND_DISPATCH = `mutation ResendDispatch($input: ResendDispatchInput!) { resendDispatch(input: $input) { dispatchId status } }`;

export const CANCEL_RUN = `mutation CancelRun($input: CancelRunInput!) {
  cancelRun(input: $input) { runStatus changed abandonedPartitions cancelledDispatches }
}`;

export const REISSUE_PARTITION = `mutation ReissuePartition($input: ReissuePartitionInput!) {
  reissuePartition(input: $input) { partitionStatus dispatchId }
}`;

export const GATES = `query Gates { gates { consumer requiredJobs boundJobKey } }`;

const READINESS_FIELDS = `fragment ReadinessFields on Readiness {
  consumer businessDate gateDefined ready
  jobs { jobId ready reason attempt state runId latest { source startedAt } expectedBy { text } deadline deadlineOutcome }
  decision { version ready decidedAt evidence { jobId attempt runId } }
}`;

export const READINESS = `query Readiness($consumer: String!, $businessDate: Date!) {
  readiness(consumer: $consumer, businessDate: $businessDate) { ...ReadinessFields }
}
${READINESS_FIELDS}`;

export const READINESS_CHANGED = `subscription ReadinessChanged($consumer: String!, $businessDate: Date!) {
  readinessChanged(consumer: $consumer, businessDate: $businessDate) { ...ReadinessFields }
}
${READINESS_FIELDS}`;

export const GATE = `query Gate($consumer: String!) {
  gate(consumer: $consumer) {
    consumer requiredJobs boundJobKey notifyUrl definedAt definedBy expectedBy { jobId text }
    dispatches(last: 50) { dispatchId businessDate version status attemptCount lastHttpStatus lastError createdAt ackedAt deadAt }
  }
}`;

export const PUBLICATIONS = `query Publications($consumer: String!, $from: Date, $to: Date, $after: Date) {
  publications(consumer: $consumer, from: $from, to: $to, first: 20, after: $after) {
    nodes {
      businessDate publishedAt publishedBy outputHash
      evidence { jobId attempt runId attempts { attempt runId state source startedAt } }
    }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const PUBLICATION = `query Publication($consumer: String!, $businessDate: Date!) {
  publication(consumer: $consumer, businessDate: $businessDate) {
    publishedAt publishedBy outputHash evidence { jobId attempt runId }
  }
}`;
