import { OPERATOR_EVENTS } from '../events/operator-events.js';
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { lockRun } from '../runs/lock-run.js';
import { RESOLVABLE_RUN_STATUS, type RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export const UNKNOWN_RESOLUTIONS = ['PUBLISHED', 'FAILED_PUBLISH'] as const;
type UnknownResolution = (typeof UNKNOWN_RESOLUTIONS)[number];

export interface ResolveUnknownCommand {
  runId: string;
  resolution: UnknownResolution;
  reason: string;
  actor: string;
}

export interface ResolveUnknownResult {
  runStatus: RunStatus;
  changed: boolean;
}

/**
 * resolveUnknown (ref §3.16): an operator, having checked the target, says how a PUBLISH_UNKNOWN ended.
 * PUBLISHED clears the publish error (target validation still has to run); FAILED_PUBLISH ends the run.
 */
async function resolveUnknown(tx: Tx, cmd: ResolveUnknownCommand): Promise<ResolveUnknownResult> {
  const run = await lockRun(tx, cmd.runId);
  if (run.status === cmd.resolution) return { runStatus: run.status, changed: false };
  if (run.status !== RESOLVABLE_RUN_STATUS) throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });

  await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: [RESOLVABLE_RUN_STATUS],
      to: cmd.resolution,
      set:
        cmd.resolution === 'PUBLISHED'
          ? Prisma.sql`error_stage = NULL, error_code = NULL, error_message = NULL`
          : Prisma.sql`error_code = 'PUBLISH_UNKNOWN_RESOLVED', error_message = ${cmd.reason}`,
      event: {
        level: 'WARN',
        name: OPERATOR_EVENTS.resolveUnknown,
        runId: cmd.runId,
        actor: cmd.actor,
        message: cmd.reason,
        details: { resolution: cmd.resolution, reason: cmd.reason },
      },
    },
  );
  return { runStatus: cmd.resolution, changed: true };
}

export const resolveUnknownOperation = inOneTransaction(resolveUnknown);
