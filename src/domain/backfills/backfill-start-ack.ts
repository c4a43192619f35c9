// The ACK of a START_LOAD call: NiFi's createRun for the date, carrying the backfill id. In createRun's transaction
// the date moves STARTING → RUNNING with its run, and the call is acknowledged.
import type { Tx } from '../../db/client.js';
import { DomainError } from '../../contract/errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { calendarDate } from '../gate/business-date.js';
import { ACKABLE_DISPATCH_STATUSES } from '../states.js';
import { transitionBackfillDate, transitionDispatch } from '../transitions.js';

export interface BackfillStart {
  backfillId: string;
  jobKey: string;
  businessKey: string;
  runId: string;
}

/** Refuses, and so undoes the run, when the backfill has no such date of the job or the date is not STARTING. */
export async function acknowledgeBackfillStart(tx: Tx, start: BackfillStart): Promise<void> {
  const businessDate = calendarDate(start.businessKey);
  const moved =
    businessDate === null
      ? []
      : await transitionBackfillDate(
          tx,
          {
            picked: Prisma.sql`SELECT bd.backfill_id, bd.business_date FROM nifi_ops.load_backfill_date bd
              JOIN nifi_ops.load_backfill b ON b.backfill_id = bd.backfill_id
             WHERE bd.backfill_id = ${start.backfillId}::uuid AND bd.business_date = ${businessDate}::date
               AND b.job_key = ${start.jobKey}`,
          },
          { from: ['STARTING'], to: 'RUNNING', set: Prisma.sql`run_id = ${start.runId}::uuid, reason = NULL` },
        );
  if (moved.length === 0) {
    const [found] = await tx.$queryRaw<Array<{ backfill_status: string; date_status: string }>>`
      SELECT b.status AS backfill_status, bd.status AS date_status
        FROM nifi_ops.load_backfill b JOIN nifi_ops.load_backfill_date bd ON bd.backfill_id = b.backfill_id
       WHERE b.backfill_id = ${start.backfillId}::uuid AND b.job_key = ${start.jobKey}
         AND bd.business_date = ${businessDate}::date`;
    if (!found)
      throw new DomainError('BACKFILL_NOT_FOUND', { backfillId: start.backfillId, jobKey: start.jobKey, businessKey: start.businessKey });
    throw new DomainError('BACKFILL_STATUS_MISMATCH', {
      backfillId: start.backfillId,
      businessKey: start.businessKey,
      backfillStatus: found.backfill_status,
      dateStatus: found.date_status,
    });
  }
  await transitionDispatch(
    tx,
    {
      picked: Prisma.sql`SELECT d.dispatch_id FROM nifi_ops.load_dispatch d
        WHERE d.dispatch_type = 'START_LOAD' AND d.backfill_id = ${start.backfillId}::uuid AND d.business_date = ${businessDate}::date
        FOR UPDATE`,
    },
    { from: ACKABLE_DISPATCH_STATUSES, to: 'ACKED', set: Prisma.sql`last_error = NULL` },
  );
}
