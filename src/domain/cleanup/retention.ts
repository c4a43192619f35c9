import type { Config } from '../../config/config.js';
import { Prisma } from '../../generated/prisma/client.js';
import { FAILED_RUN_STATUSES } from '../states.js';

/** How long ended runs keep their staging table and HDFS files, in milliseconds (config.cleanup). */
export type Retention = Pick<Config['cleanup'], 'successRetention' | 'failedRetention'>;

/**
 * The "cleanup due" predicate on a load_run row aliased `r` (ref §3.17, §5.3): not cleaned yet, and ended
 * longer ago than its retention — SUCCESS after successRetention, every failed or cancelled status after
 * failedRetention, measured from completed_at (or the last heartbeat). Active runs never qualify, nor does a run
 * that a later attempt resumed: that attempt works in the same HDFS run path, and its own cleanup removes it.
 */
export function cleanupDue(retention: Retention): Prisma.Sql {
  const endedAt = Prisma.sql`COALESCE(r.completed_at, r.heartbeat_at)`;
  return Prisma.sql`(r.cleaned_at IS NULL
      AND NOT EXISTS (SELECT FROM nifi_ops.load_run resumed WHERE resumed.retry_of_run_id = r.run_id) AND (
      (r.status = 'SUCCESS'
        AND ${endedAt} < clock_timestamp() - ${retention.successRetention}::double precision * interval '1 millisecond')
      OR (r.status = ANY(${FAILED_RUN_STATUSES}::text[])
        AND ${endedAt} < clock_timestamp() - ${retention.failedRetention}::double precision * interval '1 millisecond')))`;
}
