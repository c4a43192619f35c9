// The operator's mutations: the console's actions, the simulated operator's and the tests'; and the reads the
// console and the CLI share.
import { ACKNOWLEDGE_ALERT_GROUP_TEXT, SNOOZE_ALERT_GROUP_TEXT } from '../../src/contract/alert-group-actions.js';
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

export const RESUME_RUN = graphql(`
  mutation ResumeRun($input: ResumeRunInput!) {
    resumeRun(input: $input) { runId status resumedFromRunId hdfsRunPath stageTable carriedPartitions reissuedPartitions }
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
      gate { consumer requiredJobs boundJobKey notifyUrl notifyFormat notifyAsset expectedBy { jobId daysAfter time timeZone text } definedBy definedAt }
      decisions { businessDate version ready evidence { jobId attempt runId } cause }
    }
  }
`);

export const PAUSE_JOB = graphql(`
  mutation PauseJob($input: PauseJobInput!) { pauseJob(input: $input) { changed job { jobKey paused pausedAt pausedBy pauseReason } } }
`);

export const RESUME_JOB = graphql(`
  mutation ResumeJob($input: ResumeJobInput!) { resumeJob(input: $input) { changed job { jobKey paused pausedAt pausedBy pauseReason } } }
`);

export const START_BACKFILL = graphql(`
  mutation StartBackfill($input: StartBackfillInput!) {
    startBackfill(input: $input) {
      backfill {
        backfillId jobKey from to reprocess maxConcurrent order pushReadiness status createdBy readinessHeld allowedActions
        progress { queued running succeeded failed skipped cancelled total }
      }
      plan { position businessDate action reason latestRunId latestRunStatus otherBackfillId }
    }
  }
`);

export const PAUSE_BACKFILL = graphql(`
  mutation PauseBackfill($input: PauseBackfillInput!) { pauseBackfill(input: $input) { changed backfill { backfillId status allowedActions } } }
`);

export const RESUME_BACKFILL = graphql(`
  mutation ResumeBackfill($input: ResumeBackfillInput!) { resumeBackfill(input: $input) { changed backfill { backfillId status allowedActions } } }
`);

export const CANCEL_BACKFILL = graphql(`
  mutation CancelBackfill($input: CancelBackfillInput!) { cancelBackfill(input: $input) { changed backfill { backfillId status allowedActions } } }
`);

export const RELEASE_BACKFILL_READINESS = graphql(`
  mutation ReleaseBackfillReadiness($input: ReleaseBackfillReadinessInput!) {
    releaseBackfillReadiness(input: $input) { changed backfill { backfillId status readinessHeld readinessReleasedBy allowedActions } }
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

export const ACKNOWLEDGE_ALERT_GROUP = graphql(ACKNOWLEDGE_ALERT_GROUP_TEXT);

export const SNOOZE_ALERT_GROUP = graphql(SNOOZE_ALERT_GROUP_TEXT);
/** A page of a run's events, newest first: the run page's timeline and `load-control run <id> --events`. */
export const RUN_EVENT_PAGE = graphql(RUN_EVENT_PAGE_TEXT);
