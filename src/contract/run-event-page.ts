// A page of a run's events, as the console (schema/documents/operator.ts types it) and `load-control run --events`
// read it: one text, since the CLI is built from src/ alone.
export const RUN_EVENT_PAGE_TEXT = `
  query RunEventPage($runId: UUID!, $first: Int, $after: String, $minLevel: EventLevel, $name: String, $partitionId: String,
                     $operatorActions: Boolean) {
    run(runId: $runId) {
      runId
      eventPage(first: $first, after: $after, minLevel: $minLevel, name: $name, partitionId: $partitionId,
                operatorActions: $operatorActions) {
        nodes { eventId eventTime level name partitionId processGroup errorCode message actor }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
` as const;
