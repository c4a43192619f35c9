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

export const DEFINE_POOL = graphql(`
  mutation DefinePool($input: DefinePoolInput!) {
    definePool(input: $input) { changed pool { name maxRunning retryAfterSeconds running jobs updatedAt updatedBy } }
  }
`);

export const ASSIGN_JOB_TO_POOL = graphql(`
  mutation AssignJobToPool($input: AssignJobToPoolInput!) { assignJobToPool(input: $input) { jobKey pool previousPool changed } }
`);

export const SOURCE_POOLS = graphql(`
  query SourcePools { sourcePools { name maxRunning retryAfterSeconds running jobs updatedAt updatedBy } }
`);

export const BULK_ACTION = graphql(`
  mutation BulkAction($input: BulkActionInput!) {
    bulkAction(input: $input) {
      bulkActionId action dryRun limit changed alreadySo refused
      refusals { code count }
      targets { runId jobKey businessKey runStatus dispatchId dispatchType partitionId outcome code }
    }
  }
`);
