import { randomUUID } from 'node:crypto';
import type { AfterCommit } from '../../db/after-commit.js';
import type { Tx } from '../../db/client.js';
import { inOneTransaction } from '../../db/operation.js';
import { recordNifiEvent } from '../events/events.js';
import { lockJob } from '../jobs/job-pause.js';
import { advanceBackfill } from './advance-backfill.js';
import { planBackfill, type BackfillRange, type PlannedDate } from './plan-backfill.js';
import { getBackfill, type BackfillRecord } from './queries.js';

export interface StartBackfillCommand extends BackfillRange {
  maxConcurrent: number;
  pushReadiness: boolean;
  actor: string;
}

export interface StartBackfillResult {
  backfill: BackfillRecord;
  plan: PlannedDate[];
}

/**
 * startBackfill: the plan, recorded — START dates QUEUED, the others SKIPPED with their reason — then advanced at
 * once. The job's row is locked first, so two operators starting the same range one after the other get one
 * backfill with the dates and one that skips them all (IN_OTHER_BACKFILL).
 */
async function startBackfill(tx: Tx, cmd: StartBackfillCommand, afterCommit: AfterCommit): Promise<StartBackfillResult> {
  await lockJob(tx, cmd.jobKey, 'update');
  await tx.$executeRaw`SELECT nifi_ops.fault_point('start_backfill_locked')`;
  const plan = await planBackfill(tx, cmd);
  const backfillId = randomUUID();
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_backfill (backfill_id, job_key, from_date, to_date, reprocess, max_concurrent, date_order,
        push_readiness, status, created_by)
    VALUES (${backfillId}::uuid, ${cmd.jobKey}, ${cmd.from}::date, ${cmd.to}::date, ${cmd.reprocess}, ${cmd.maxConcurrent}::int,
        ${cmd.order}, ${cmd.pushReadiness}, 'RUNNING', ${cmd.actor})`;
  await tx.$executeRaw`
    INSERT INTO nifi_ops.load_backfill_date (backfill_id, business_date, position, status, reason)
    SELECT ${backfillId}::uuid, p.business_date, p.position,
           CASE WHEN p.action = 'START' THEN 'QUEUED' ELSE 'SKIPPED' END,
           CASE WHEN p.action = 'START' THEN NULL ELSE p.reason END
      FROM unnest(${plan.map((p) => p.businessDate)}::date[], ${plan.map((p) => p.position)}::int[],
                  ${plan.map((p) => p.action)}::text[], ${plan.map((p) => p.reason)}::text[])
           AS p(business_date, position, action, reason)`;
  await recordNifiEvent(tx, {
    level: 'INFO',
    name: 'BACKFILL_STARTED',
    runId: null,
    jobKey: cmd.jobKey,
    processGroup: 'LOAD_CONTROL_API',
    message: `${cmd.from}..${cmd.to}, ${plan.filter((p) => p.action === 'START').length} of ${plan.length} dates to start`,
    details: {
      backfillId,
      from: cmd.from,
      to: cmd.to,
      reprocess: cmd.reprocess,
      maxConcurrent: cmd.maxConcurrent,
      order: cmd.order,
      pushReadiness: cmd.pushReadiness,
    },
    actor: cmd.actor,
  });
  await advanceBackfill(tx, backfillId, cmd.actor, afterCommit);
  return { backfill: (await getBackfill(tx, backfillId))!, plan };
}

export const startBackfillOperation = inOneTransaction(startBackfill);
