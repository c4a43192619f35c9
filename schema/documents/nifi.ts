// Written by `npm run nifi:flow` from nifi/requests/<group>/<field>/request.graphql, the kit's one source (do not
// edit): what each NiFi call sends, typed for the clients that make the same calls (simulator, benchmarks, tests).
import { graphql } from './graphql.js';

/** The kit's calls by id (`PG-20/reportChunk`). */
export const NIFI_REQUESTS = {
  'GATE/publish': graphql(`mutation Publish($input: PublishInput!) { publish(input: $input) { published publication { outputHash } } }`),
  'GATE/readiness': graphql(`query Readiness($consumer: String!, $businessDate: Date!) { readiness(consumer: $consumer, businessDate: $businessDate) { ready } }`),
  'GATE/recordObservation': graphql(`mutation RecordObservation($input: RecordObservationInput!) { recordObservation(input: $input) { changed } }`),
  'PG-10/createRun': graphql(`mutation CreateRun($input: CreateRunInput!) { createRun(input: $input) { runId status hdfsRunPath stageTable created } }`),
  'PG-10/failRun': graphql(`mutation FailRun($input: FailRunInput!) { failRun(input: $input) { runId runStatus changed } }`),
  'PG-10/registerManifest': graphql(`mutation RegisterManifest($input: RegisterManifestInput!) { registerManifest(input: $input) { runId status emptyPartitionCount validationScheduled } }`),
  'PG-20/claimPartition': graphql(`mutation ClaimPartition($input: ClaimPartitionInput!) { claimPartition(input: $input) { claimed runStatus partitionStatus attempt } }`),
  'PG-20/failPartition': graphql(`mutation FailPartition($input: FailPartitionInput!) { failPartition(input: $input) { partitionStatus runStatus changed } }`),
  'PG-20/reportChunk': graphql(`mutation ReportChunk($input: ReportChunkInput!) { reportChunk(input: $input) { recorded partitionStatus runStatus receivedChunks chunkCount validationScheduled } }`),
  'PG-40/markStageValidated': graphql(`mutation MarkStageValidated($input: MarkStageValidatedInput!) { markStageValidated(input: $input) { stageValidated runStatus reasons stagingCount } }`),
  'PG-40/recordMetrics': graphql(`mutation RecordMetrics($input: RecordMetricsInput!) { recordMetrics(input: $input) { recorded failCount runStatus } }`),
  'PG-40/startValidation': graphql(`mutation StartValidation($input: StartValidationInput!) { startValidation(input: $input) { started runStatus jobKey businessKey snapshotScn hdfsRunPath stageTable sourceCount extractedCount sourceMetrics } }`),
  'PG-50/claimPublish': graphql(`mutation ClaimPublish($input: ClaimPublishInput!) { claimPublish(input: $input) { claimed runStatus } }`),
  'PG-50/reportPublishResult': graphql(`mutation ReportPublishResult($input: ReportPublishResultInput!) { reportPublishResult(input: $input) { runStatus changed } }`),
  'PG-60/markSuccess': graphql(`mutation MarkSuccess($input: MarkSuccessInput!) { markSuccess(input: $input) { success runStatus reasons targetCount } }`),
  'PG-60/recordMetrics': graphql(`mutation RecordMetrics($input: RecordMetricsInput!) { recordMetrics(input: $input) { recorded failCount runStatus } }`),
  'PG-70/cleanupCandidates': graphql(`query CleanupCandidates($jobKey: String, $limit: Int) { cleanupCandidates(jobKey: $jobKey, limit: $limit) { runId status hdfsRunPath stageTable } }`),
  'PG-70/recordCleanup': graphql(`mutation RecordCleanup($input: RecordCleanupInput!) { recordCleanup(input: $input) { runStatus changed } }`),
  'PG-90/failRun': graphql(`mutation FailRun($input: FailRunInput!) { failRun(input: $input) { runId runStatus changed } }`),
  'PG-90/recordEvent': graphql(`mutation RecordEvent($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`),
};
