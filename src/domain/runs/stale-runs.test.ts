// One definition of a stale run: the monitor's RUN_STALE and the sweeper's RUN_STALE_ALERT judge PUBLISHING alike,
// by the run's heartbeat against recovery.publishStale.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../../test/support/api.js';
import { CLAIM_PUBLISH, toStagingValidated } from '../../../test/support/fixtures.js';
import { eventsNamed } from '../../../test/support/worker.js';
import { inTransaction } from '../../db/transaction.js';
import { monitorSummary } from '../monitor/monitor-summary.js';
import { sweepOnce } from '../sweeper/sweep.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const HOUR = 3_600_000;

async function publishing(heartbeatAge: string) {
  const run = await toStagingValidated(api);
  const claimed = await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken: randomUUID() } });
  expect(claimed.body.data!.claimPublish.claimed).toBe(true);
  const { rows } = await api.sql.query(
    `UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - $2::interval WHERE run_id = $1 RETURNING heartbeat_at`,
    [run.runId, heartbeatAge],
  );
  return { runId: run.runId, heartbeatAt: rows[0].heartbeat_at as Date };
}

describe('stale runs', () => {
  it('a PUBLISHING run is stale once its heartbeat is older than recovery.publishStale, in the summary and the alert alike', async () => {
    // publishStale apart from validationStale, so that the threshold taken shows
    const recovery = { ...api.config.recovery, publishStale: HOUR, validationStale: 4 * HOUR };
    const stalled = await publishing('90 minutes');
    const moving = await publishing('30 minutes');

    const summary = await monitorSummary(api.db.prisma, {
      alertLimit: 100,
      recovery: { ...recovery, stallAfter: api.config.monitor.stallAfter },
      retention: api.config.cleanup,
      maxBatch: api.config.cleanup.maxBatch,
    });
    const stale = summary.alerts.filter((a) => a.kind === 'RUN_STALE');
    expect(stale).toEqual([expect.objectContaining({ runId: stalled.runId, status: 'PUBLISHING', at: stalled.heartbeatAt })]);

    const swept = await inTransaction(api.db, (tx, afterCommit) => sweepOnce(tx, { recovery, dispatch: api.config.dispatch }, afterCommit));
    expect(swept!.actions).toEqual({ stale_alert: 1 });
    expect(await eventsNamed(api, stalled.runId, 'RUN_STALE_ALERT')).toEqual([
      expect.objectContaining({
        message: 'no progress in PUBLISHING',
        details: expect.objectContaining({ status: 'PUBLISHING', thresholdSeconds: 3600 }),
      }),
    ]);
    expect(await eventsNamed(api, moving.runId, 'RUN_STALE_ALERT')).toEqual([]);
  });
});
