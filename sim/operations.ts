// The GraphQL documents the simulated NiFi flows, operator, upstream jobs and publishers send.

export const CREATE_RUN = `mutation($input: CreateRunInput!) { createRun(input: $input) { runId status hdfsRunPath stageTable created } }`;
export const REGISTER_MANIFEST = `mutation($input: RegisterManifestInput!) { registerManifest(input: $input) {
  runId status emptyPartitionCount validationScheduled
  dispatchPartitions { partitionId lowerBound upperBound upperInclusive isNullPartition expectedRowCount } } }`;
export const CLAIM_PARTITION = `mutation($input: ClaimPartitionInput!) { claimPartition(input: $input) { claimed runStatus partitionStatus attempt } }`;
export const REPORT_CHUNK = `mutation($input: ReportChunkInput!) { reportChunk(input: $input) {
  recorded partitionStatus runStatus receivedChunks chunkCount validationScheduled } }`;
export const RECORD_EVENT = `mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`;
export const START_VALIDATION = `mutation($input: StartValidationInput!) { startValidation(input: $input) {
  started runStatus jobKey businessKey hdfsRunPath stageTable sourceCount extractedCount } }`;
export const RECORD_METRICS = `mutation($input: RecordMetricsInput!) { recordMetrics(input: $input) { recorded failCount runStatus } }`;
export const MARK_STAGE_VALIDATED = `mutation($input: MarkStageValidatedInput!) { markStageValidated(input: $input) { stageValidated runStatus reasons } }`;
export const CLAIM_PUBLISH = `mutation($input: ClaimPublishInput!) { claimPublish(input: $input) { claimed runStatus } }`;
export const REPORT_PUBLISH_RESULT = `mutation($input: ReportPublishResultInput!) { reportPublishResult(input: $input) { runStatus changed } }`;
export const MARK_SUCCESS = `mutation($input: MarkSuccessInput!) { markSuccess(input: $input) { success runStatus reasons } }`;
export const RESOLVE_UNKNOWN = `mutation($input: ResolveUnknownInput!) { resolveUnknown(input: $input) { runStatus changed } }`;
export const RESEND_DISPATCH = `mutation($input: ResendDispatchInput!) { resendDispatch(input: $input) { dispatchId status } }`;
export const CANCEL_RUN = `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus changed } }`;
export const DEFINE_GATE = `mutation($input: DefineGateInput!) { defineGate(input: $input) { changed } }`;
export const RECORD_OBSERVATION = `mutation($input: RecordObservationInput!) { recordObservation(input: $input) { changed } }`;
export const PUBLISH = `mutation($input: PublishInput!) { publish(input: $input) { published publication { outputHash evidence { jobId attempt runId } } } }`;
export const RUN_STATUS = `query($runId: UUID!) { run(runId: $runId) { status } }`;
export const MONITOR_ALERTS = `query { monitorSummary(alertLimit: 500) { alerts { kind runId status dispatchId partitionId } } }`;
export const FAIL_RUN = `mutation($input: FailRunInput!) { failRun(input: $input) { runStatus changed } }`;
