// One definition of a stale run: the monitor's RUN_STALE and the sweeper's RUN_STALE_ALERT judge PUBLISHING alike,
// by the run's heartbeat against recovery.publishStale.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsNamed } from '../../support/worker.js';
import { inTransaction } from '../../../src/db/transaction.js';
import { monitorSummary } from '../../../src/domain/monitor/monitor-summary.js';
import { sweepOnce } from '../../../src/domain/sweeper/sweep.js';
import { type DomainTest, publishingRun, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());

const HOUR = 3_600_000;

async function publishing(heartbeatAge: string) {
  const run = await publishingRun(t);
  const { rows } = await t.sql.query(
    `UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - $2::interval WHERE run_id = $1 RETURNING heartbeat_at`,
    [run.runId, heartbeatAge],
  );
  return { runId: run.runId, heartbeatAt: rows[0].heartbeat_at as Date };
}

describe('stale runs', () => {
  it('a PUBLISHING run is stale once its heartbeat is older than recovery.publishStale, in the summary and the alert alike', async () => {
    // publishStale apart from validationStale, so that the threshold taken shows
    const recovery = { ...t.config.recovery, publishStale: HOUR, validationStale: 4 * HOUR };
    const stalled = await publishing('90 minutes');
    const moving = await publishing('30 minutes');

    const summary = await monitorSummary(t.db.prisma, {
      alertLimit: 100,
      recovery: { ...recovery, stallAfter: t.config.monitor.stallAfter },
      retention: t.config.cleanup,
      maxBatch: t.config.cleanup.maxBatch,
    });
    const stale = summary.alerts.filter((a) => a.kind === 'RUN_STALE');
    expect(stale).toEqual([expect.objectContaining({ runId: stalled.runId, status: 'PUBLISHING', at: stalled.heartbeatAt })]);

    const swept = await inTransaction(t.db, (tx, afterCommit) => sweepOnce(tx, { recovery, dispatch: t.config.dispatch }, afterCommit));
    expect(swept!.actions).toEqual({ stale_alert: 1 });
    expect(await eventsNamed(t, stalled.runId, 'RUN_STALE_ALERT')).toEqual([
      expect.objectContaining({
        message: 'no progress in PUBLISHING',
        details: expect.objectContaining({ status: 'PUBLISHING', thresholdSeconds: 3600 }),
      }),
    ]);
    expect(await eventsNamed(t, moving.runId, 'RUN_STALE_ALERT')).toEqual([]);
  });
});
