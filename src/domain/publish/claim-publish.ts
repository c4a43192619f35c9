import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { recordApiEvent } from '../events/events.js';
import { authorisePublishClaim } from '../gate/publish-claim.js';
import { Prisma } from '../../generated/prisma/client.js';
import { refusableByGate } from '../gate/run-gate.js';
import { lockRun } from '../runs/lock-run.js';
import type { RunStatus } from '../states.js';
import { transitionRun } from '../transitions.js';
import { inOneTransaction } from '../../db/operation.js';

export interface ClaimPublishCommand {
  runId: string;
  publishToken: string;
  actor: string;
}

export interface ClaimPublishResult {
  claimed: boolean;
  runStatus: RunStatus;
}

/**
 * claimPublish (ref §3.12): one owner per publication. STAGING_VALIDATED → PUBLISHING stores the token;
 * the same token again is a replay (claimed), any other token or status is claimed=false. Only a
 * claimed caller may run the INSERT OVERWRITE. A gated job's claim waits for its gate: the refusal undoes the
 * claim and is recorded (refusableByGate).
 */
function claimPublish(tx: Tx, cmd: ClaimPublishCommand, afterCommit: AfterCommit): Promise<ClaimPublishResult> {
  return refusableByGate(tx, afterCommit, () => claimRun(tx, cmd));
}

async function claimRun(tx: Tx, cmd: ClaimPublishCommand): Promise<ClaimPublishResult> {
  const run = await lockRun(tx, cmd.runId);
  if (run.status === 'PUBLISHING') return { claimed: run.publishToken === cmd.publishToken, runStatus: run.status };

  const claimed = await transitionRun(
    tx,
    { runId: cmd.runId },
    {
      from: ['STAGING_VALIDATED'],
      to: 'PUBLISHING',
      set: Prisma.sql`publish_token = ${cmd.publishToken}::uuid`,
    },
  );
  if (claimed.length === 0) return { claimed: false, runStatus: run.status };
  // a gated job publishes only on ready upstream runs, whose evidence is stored with the claim (or all rolls back)
  await authorisePublishClaim(tx, {
    runId: cmd.runId,
    jobKey: run.jobKey,
    businessKey: run.businessKey,
    publishToken: cmd.publishToken,
    actor: cmd.actor,
  });

  await recordApiEvent(tx, {
    level: 'INFO',
    name: 'PUBLISH_STARTED',
    runId: cmd.runId,
    actor: cmd.actor,
    details: { publishToken: cmd.publishToken },
  });
  return { claimed: true, runStatus: 'PUBLISHING' };
}

export const claimPublishOperation = inOneTransaction(claimPublish);
