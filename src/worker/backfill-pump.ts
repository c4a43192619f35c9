import type { Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import { perform } from '../db/operation.js';
import { advanceBackfillOperation, backfillsToAdvanceOperation } from '../domain/backfills/advance-backfill.js';
import type { Logger } from '../logging/logger.js';
import { createPollLoop, type PollLoop } from './poll-loop.js';

const PUMP_ACTOR = 'backfill-pump';

/**
 * Every worker's backfill pump: once per backfill.pumpInterval it advances each open backfill, one transaction per
 * backfill. Pumps of several workers may advance the same backfill at once: its row's lock decides (advanceBackfill).
 */
export function createBackfillPump(options: { config: Config; db: Db; log: Logger }): PollLoop {
  const log = options.log.child({ component: PUMP_ACTOR });
  return createPollLoop({
    intervalMs: options.config.backfill.pumpInterval,
    onError: (err) => log.error({ err }, 'backfill_pump_failed'),
    pass: async () => {
      for (const backfillId of await perform(options.db, backfillsToAdvanceOperation, undefined)) {
        const outcome = await perform(options.db, advanceBackfillOperation, { backfillId, actor: PUMP_ACTOR });
        if (outcome && outcome.started.length + outcome.succeeded.length + outcome.failed.length > 0)
          log.info(outcome, 'backfill_advanced');
      }
    },
  });
}
