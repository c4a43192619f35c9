// The operator's mutations: the console's actions, the simulated operator's and the tests'; and the reads the
// console and the CLI share.
import { RUN_EVENT_PAGE_TEXT } from '../../src/contract/run-event-page.js';
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

/** A page of a run's events, newest first: the run page's timeline and `load-control run <id> --events`. */
export const RUN_EVENT_PAGE = graphql(RUN_EVENT_PAGE_TEXT);
