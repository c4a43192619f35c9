// The operator's mutations: the console's actions, the simulated operator's and the tests'.
import { graphql } from './graphql.js';

export const RESOLVE_UNKNOWN = graphql(`
  mutation ResolveUnknown($input: ResolveUnknownInput!) { resolveUnknown(input: $input) { runStatus changed } }
`);

export const RESEND_DISPATCH = graphql(`
  mutation ResendDispatch($input: ResendDispatchInput!) { resendDispatch(input: $input) { dispatchId status } }
`);

export const CANCEL_RUN = graphql(`
  mutation CancelRun($input: CancelRunInput!) {
    cancelRun(input: $input) { runStatus changed abandonedPartitions cancelledDispatches }
  }
`);

export const REISSUE_PARTITION = graphql(`
  mutation ReissuePartition($input: ReissuePartitionInput!) {
    reissuePartition(input: $input) { partitionStatus dispatchId }
  }
`);

export const DEFINE_GATE = graphql(`
  mutation DefineGate($input: DefineGateInput!) {
    defineGate(input: $input) {
      changed
      gate { consumer requiredJobs boundJobKey notifyUrl expectedBy { jobId daysAfter time timeZone text } definedBy definedAt }
      decisions { businessDate version ready evidence { jobId attempt runId } cause }
    }
  }
`);

export const ACKNOWLEDGE_ALERT_GROUP = graphql(`
  mutation AcknowledgeAlertGroup($input: AcknowledgeAlertGroupInput!) { acknowledgeAlertGroup(input: $input) { groupKey changed count } }
`);

export const SNOOZE_ALERT_GROUP = graphql(`
  mutation SnoozeAlertGroup($input: SnoozeAlertGroupInput!) { snoozeAlertGroup(input: $input) { groupKey changed until } }
`);
