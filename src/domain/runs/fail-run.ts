import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { isAllowedRunFailure, type RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { lockRun } from './lock-run.js';
import { inOneTransaction } from '../../db/operation.js';

export interface FailRunCommand {
  runId: string;
  expectedStatus: RunStatus;
  failStatus: RunStatus;
  errorStage: string;
  errorCode: string;
  message: string;
  actor: string;
}

export interface FailRunResult {
  runId: string;
  runStatus: RunStatus;
  changed: boolean;
}

/** failRun (ref §3.3): a stage failure reported by NiFi, limited to the allowed status pairs. */
async function failRun(tx: Tx, cmd: FailRunCommand): Promise<FailRunResult> {
  if (!isAllowedRunFailure(cmd.expectedStatus, cmd.failStatus)) {
    throw new DomainError('FAIL_TRANSITION_NOT_ALLOWED', { expectedStatus: cmd.expectedStatus, failStatus: cmd.failStatus });
  }
  const run = await lockRun(tx, cmd.runId);
  // a replay of the same failure is a no-op; expectedStatus is not re-checked then (ref §3.3)
  if (run.status === cmd.failStatus) return { runId: cmd.runId, runStatus: run.status, changed: false };
  if (run.status !== cmd.expectedStatus) throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });

  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: [cmd.expectedStatus],
      to: cmd.failStatus,
      set: Prisma.sql`error_stage = ${cmd.errorStage}, error_code = ${cmd.errorCode}, error_message = NULLIF(${cmd.message}, '')`,
      event: {
        level: 'ERROR',
        name: 'RUN_FAILED',
        runId: cmd.runId,
        actor: cmd.actor,
        errorCode: cmd.errorCode,
        message: cmd.message,
        details: { stage: cmd.errorStage, from: cmd.expectedStatus, to: cmd.failStatus },
      },
    },
  );
  return { runId: cmd.runId, runStatus: cmd.failStatus, changed: true };
}

export const failRunOperation = inOneTransaction(failRun);
