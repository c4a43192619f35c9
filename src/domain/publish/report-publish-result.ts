import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import type { EventLevel } from '../events/events.js';
import { lockRun } from '../runs/lock-run.js';
import type { RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export const PUBLISH_OUTCOMES = ['PUBLISHED', 'FAILED_PUBLISH', 'PUBLISH_UNKNOWN'] as const;
type PublishOutcome = (typeof PUBLISH_OUTCOMES)[number];

export interface ReportPublishResultCommand {
  runId: string;
  publishToken: string;
  outcome: PublishOutcome;
  errorCode: string | null;
  message: string;
  /** The Hive query id of the INSERT OVERWRITE, when PG-50 knows it: what resolving PUBLISH_UNKNOWN starts from. */
  queryId: string | null;
  /** Anything else PG-50 wants on the record (the HiveServer2 host, the operation handle, the error's text). */
  details: Record<string, unknown>;
  actor: string;
}

export interface ReportPublishResultResult {
  runStatus: RunStatus;
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
async function reportPublishResult(tx: Tx, cmd: ReportPublishResultCommand): Promise<ReportPublishResultResult> {
  const run = await lockRun(tx, cmd.runId);
  if (run.publishToken !== cmd.publishToken) throw new DomainError('PUBLISH_TOKEN_MISMATCH');
  if (run.status === cmd.outcome) return { runStatus: run.status, changed: false };
  // e.g. a late PUBLISHED after the sweeper declared the publication unknown: an operator must decide
  if (run.status !== 'PUBLISHING') throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });

  const errorCode = cmd.errorCode ?? cmd.outcome;
  const queryId = Prisma.sql`publish_query_id = COALESCE(${cmd.queryId}, publish_query_id)`;
  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: ['PUBLISHING'],
      to: cmd.outcome,
      set:
        cmd.outcome === 'PUBLISHED'
          ? queryId
          : Prisma.sql`${queryId}, error_stage = 'PUBLISH', error_code = ${errorCode}, error_message = NULLIF(${cmd.message}, '')`,
      event: {
        ...OUTCOME_EVENT[cmd.outcome],
        runId: cmd.runId,
        actor: cmd.actor,
        errorCode: cmd.outcome === 'PUBLISHED' ? null : errorCode,
        message: cmd.message,
        details: { ...cmd.details, stage: 'PUBLISH', from: 'PUBLISHING', to: cmd.outcome, queryId: cmd.queryId },
      },
    },
  );
  return { runStatus: cmd.outcome, changed: true };
}

export const reportPublishResultOperation = inOneTransaction(reportPublishResult);
