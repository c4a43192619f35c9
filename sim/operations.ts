// The simulator's own observations. The simulated operator's mutations are schema/documents/operator.ts's; what the NiFi
// flows send is the kit's (nifi/requests), rendered by SimClient.nifi.
import { graphql } from '../schema/documents/graphql.js';

export const RUN_STATUS = graphql(`query RunStatus($runId: UUID!) { run(runId: $runId) { status } }`);
export const MONITOR_ALERTS = graphql(
  `query MonitorAlerts { monitorSummary(alertLimit: 500) { alerts { kind runId status dispatchId partitionId } } }`,
);
export const BACKFILL_DATES = graphql(
  `query BackfillDates($backfillId: UUID!) { backfill(backfillId: $backfillId) { status dates { businessDate status reason } } }`,
);
