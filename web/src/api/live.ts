// The console's subscriptions of the realtime layer: the server's status, and a run's progress as deltas.
import { graphql } from '../../../schema/documents/graphql.js';

export const REALTIME_STATUS = graphql(`subscription RealtimeStatus { realtimeStatus { live since } }`);

export const RUN_PROGRESS = graphql(`subscription RunProgress($runId: UUID!) { runProgress(runId: $runId) {
  version sinceVersion snapshot
  run { runId jobKey businessKey status expectedPartitionCount successPartitionCount failedPartitionCount
    sourceCount extractedCount stagingCount targetCount startedAt heartbeatAt completedAt errorCode }
  partitionCounts { status count }
  partitions { partitionId status expectedRowCount actualRowCount receivedChunks receivedRows reportedChunkCount
    attemptCount workerNode heartbeatAt startedAt completedAt errorCode errorMessage }
} }`);
