import type { Tx } from '../../db/client.js';
import { DomainError } from '../errors.js';
import { recordApiEvent, type EventLevel } from '../events/events.js';
import { lockRun } from '../runs/lock-run.js';

export const PUBLISH_OUTCOMES = ['PUBLISHED', 'FAILED_PUBLISH', 'PUBLISH_UNKNOWN'] as const;
export type PublishOutcome = (typeof PUBLISH_OUTCOMES)[number];

export interface ReportPublishResultCommand {
  runId: string;
  publishToken: string;
  outcome: PublishOutcome;
  errorCode: string | null;
  message: string;
  actor: string;
}

export interface ReportPublishResultResult {
  runStatus: string;
  changed: boolean;
}

const OUTCOME_EVENT: Record<PublishOutcome, { level: EventLevel; name: string }> = {
  PUBLISHED: { level: 'INFO', name: 'PUBLISH_FINISHED' },
  FAILED_PUBLISH: { level: 'ERROR', name: 'RUN_FAILED' },
  PUBLISH_UNKNOWN: { level: 'ERROR', name: 'PUBLISH_UNKNOWN' },
};

/**
 * reportPublishResult (ref §3.13): the publish token's owner reports how the INSERT OVERWRITE ended.
 * PUBLISH_UNKNOWN stays active (no completed_at) until an operator resolves it.
 */
export async function reportPublishResult(tx: Tx, cmd: ReportPublishResultCommand): Promise<ReportPublishResultResult> {
  const run = await lockRun(tx, cmd.runId);
  if (run.publishToken !== cmd.publishToken) throw new DomainError('PUBLISH_TOKEN_MISMATCH');
  if (run.status === cmd.outcome) return { runStatus: run.status, changed: false };
  // e.g. a late PUBLISHED after the sweeper declared the publication unknown: an operator must decide
  if (run.status !== 'PUBLISHING') throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });

  const errorCode = cmd.errorCode ?? cmd.outcome;
  if (cmd.outcome === 'PUBLISHED') {
    await tx.$executeRaw`
      UPDATE nifi_ops.load_run
         SET status = 'PUBLISHED', published_at = clock_timestamp(), heartbeat_at = clock_timestamp(),
             version_no = version_no + 1
       WHERE run_id = ${cmd.runId}::uuid AND status = 'PUBLISHING'`;
  } else {
    await tx.$executeRaw`
      UPDATE nifi_ops.load_run
         SET status = ${cmd.outcome}, error_stage = 'PUBLISH', error_code = ${errorCode},
             error_message = NULLIF(${cmd.message}, ''),
             completed_at = CASE WHEN ${cmd.outcome} = 'FAILED_PUBLISH' THEN clock_timestamp() END,
             heartbeat_at = clock_timestamp(), version_no = version_no + 1
       WHERE run_id = ${cmd.runId}::uuid AND status = 'PUBLISHING'`;
  }
  await recordApiEvent(tx, {
    ...OUTCOME_EVENT[cmd.outcome],
    runId: cmd.runId,
    actor: cmd.actor,
    errorCode: cmd.outcome === 'PUBLISHED' ? null : errorCode,
    message: cmd.message,
    details: { stage: 'PUBLISH', from: 'PUBLISHING', to: cmd.outcome },
  });
  return { runStatus: cmd.outcome, changed: true };
}
