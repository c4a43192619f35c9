import type { Tx } from '../../db/client.js';
import { formatDuration } from '../../config/durations.js';
import { Prisma } from '../../generated/prisma/client.js';
import { transitionRun } from '../transitions.js';
import { SWEEPER_ACTOR, seconds, type RuleOutcome, type SweeperSettings } from './settings.js';

/**
 * R5 stale publishing (ref §5.2): no publish result within recovery.publishStale → PUBLISH_UNKNOWN.
 * Never retried or failed automatically: an operator must find out whether the publish happened.
 */
export async function sweepStalePublishing(tx: Tx, settings: SweeperSettings): Promise<RuleOutcome> {
  const { publishStale } = settings.recovery;
  const message = `no publish result within ${formatDuration(publishStale)}`;
  const runs = await transitionRun(
    tx,
    {
      picked: Prisma.sql`SELECT run_id FROM nifi_ops.load_run
             WHERE status = 'PUBLISHING'
               AND publish_started_at < clock_timestamp() - make_interval(secs => ${seconds(publishStale)}::float8)
             ORDER BY publish_started_at
               FOR UPDATE SKIP LOCKED`,
    },
    {
      from: ['PUBLISHING'],
      to: 'PUBLISH_UNKNOWN',
      set: Prisma.sql`error_stage = 'PUBLISH', error_code = 'PUBLISH_STALE', error_message = ${message}`,
      event: (run) => ({
        level: 'ERROR',
        name: 'PUBLISH_UNKNOWN',
        runId: run.run_id,
        actor: SWEEPER_ACTOR,
        errorCode: 'PUBLISH_STALE',
        message,
        details: { from: 'PUBLISHING' },
      }),
    },
  );
  return { acted: runs.map((run) => ({ action: 'publish_unknown', runId: run.run_id })) };
}
