// The sweeper as the worker runs it: its cycle's metrics. Its rules are proven in test/domain/sweeper/sweeper.test.ts.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, completeRun, report, startRun } from '../../support/fixtures.js';
import { startReceiver } from '../../support/receiver.js';
import { testWorker, workerConfig } from '../../support/worker.js';

let api: TestApi;
beforeEach(async () => {
  api = await startTestApi();
});
afterEach(async () => api?.close());

/** A run extracting [3, 4] whose partition 0000 has written one of its two chunks and went quiet. */
async function runWithStalePartition() {
  const run = await startRun(api, [3, 4]);
  const owner = await claim(api, run.runId, '0000', randomUUID(), 'nifi-01');
  const first = await report(api, chunkInput(run, '0000', owner.claimToken, 0, 2, 2));
  expect(first.result?.partitionStatus).toBe('RUNNING');
  await api.sql.query(
    `UPDATE nifi_ops.load_partition SET heartbeat_at = heartbeat_at - interval '2 hours' WHERE run_id = $1 AND partition_id = '0000'`,
    [run.runId],
  );
  return run;
}

describe('sweeper loop', () => {
  it('counts its actions and refreshes the backlog and run gauges', async () => {
    const receiver = await startReceiver();
    const worker = testWorker(api, workerConfig(api, receiver));
    try {
      await completeRun(api);
      await runWithStalePartition();
      expect((await worker.sweeper.cycle())!.actions).toEqual({ timeout_stale_partition: 1 });
      const text = await worker.registry.metrics();
      expect(text).toContain('lc_sweeper_actions_total{rule="timeout_stale_partition"} 1');
      expect(text).toContain('lc_dispatch_backlog{status="PENDING"} 1');
      expect(text).toContain('lc_dispatch_backlog{status="DEAD"} 0');
      expect(text).toContain('lc_active_runs{status="EXTRACTED_VALIDATED"} 1');
      expect(text).toContain('lc_active_runs{status="TIMED_OUT"} 0');
    } finally {
      await worker.close();
      await receiver.close();
    }
  });
});
