// The console's subscriptions of the realtime layer: the server's status, and a run's progress as deltas.

export const REALTIME_STATUS = `subscription RealtimeStatus { realtimeStatus { live since } }`;

export const RUN_PROGRESS = `subscription RunProgress($runId: UUID!) { runProgress(runId: $runId) {
  version sinceVersion snapshot
  run { runId jobKey businessKey status expectedPartitionCount successPartitionCount failedPartitionCount
    sourceCount extractedCount stagingCount targetCount startedAt heartbeatAt completedAt errorCode errorStage errorMessage
    extractCompletedAt publishStartedAt publishedAt cleanedAt purgedAt }
  partitionCounts { status count }
  partitions { partitionId status expectedRowCount actualRowCount receivedChunks receivedRows reportedChunkCount
    attemptCount workerNode heartbeatAt errorCode errorMessage }
} }`;
