// Stalled runs against the real database, heartbeats aged by SQL as the sweeper's tests age them: the STALLED_RUN
// alert (before the sweeper's recovery.stale), its webhook, the lc_stalled_* gauges and Run.stall.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, report, startRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';
import { alertThresholds, readAlerts } from '../../../src/domain/monitor/monitor-summary.js';
import { countStalls } from '../../../src/domain/monitor/stalls.js';

const MINUTE = 60_000;

let api: TestApi;
let nifi: Receiver;
let hooks: Receiver;
let worker: TestWorkerParts;

beforeAll(async () => {
  api = await startTestApi({ monitor: { stallAfter: 10 * MINUTE } });
  [nifi, hooks] = await Promise.all([startReceiver(), startReceiver()]);
  worker = testWorker(api, {
    ...workerConfig(api, nifi),
    alerts: { webhooks: [{ name: 'ops', url: hooks.url, kinds: ['STALLED_RUN'], headers: {}, format: 'generic' }] },
  });
  // the receiver is configured now: the alerts present at its first cycle are not sent
  await worker.sweeper.cycle();
});
afterAll(async () => {
  await worker?.close();
  await Promise.all([nifi?.close(), hooks?.close()]);
  await api?.close();
});
// the alerts and the gauges cover the whole ledger: every test starts from an empty one
beforeEach(async () => {
  await api.sql.query(`TRUNCATE nifi_ops.load_event, nifi_ops.load_dispatch, nifi_ops.load_validation, nifi_ops.load_file,
                                nifi_ops.load_partition, nifi_ops.load_run, nifi_ops.alert_occurrence CASCADE`);
});
afterEach(() => hooks.reset());

/** Sets partitions' heartbeats (and the run's) `ago` in the past, as if nothing had reported since. */
const silence = (runId: string, partitionIds: string[], ago: string) =>
  api.sql.query(
    `UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp() - $3::interval, started_at = clock_timestamp() - $3::interval
      WHERE run_id = $1 AND partition_id = ANY($2::text[])`,
    [runId, partitionIds, ago],
  );
const ageRun = (runId: string, ago: string) =>
  api.sql.query(`UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - $2::interval WHERE run_id = $1`, [runId, ago]);

const stalledAlerts = async () =>
  (await readAlerts(api.db.prisma, alertThresholds(api.config), 500)).filter((a) => a.kind === 'STALLED_RUN');

/** A run with four partitions, three claimed (0000-0002); 0000 reported a chunk. */
async function runningRun() {
  const run = await startRun(api, [4, 4, 4, 4]);
  const tokens: Record<string, string> = {};
  for (const id of ['0000', '0001', '0002']) tokens[id] = (await claim(api, run.runId, id)).claimToken;
  await report(api, chunkInput(run, '0000', tokens['0000']!, 0, 2, 2));
  return { run, tokens };
}

describe('a stalled run', () => {
  it('raises STALLED_RUN once RUNNING partitions are silent for monitor.stallAfter, naming them, before recovery.stale', async () => {
    const { run } = await runningRun();
    await silence(run.runId, ['0001', '0002'], '9 minutes');
    await ageRun(run.runId, '9 minutes');
    expect(await stalledAlerts()).toEqual([]);
    expect(await countStalls(api.db.prisma, api.config.monitor.stallAfter)).toEqual({ runs: 0, partitions: 0 });

    await silence(run.runId, ['0001'], '12 minutes');
    await silence(run.runId, ['0002'], '11 minutes');
    const [alert, ...others] = await stalledAlerts();
    expect(others).toEqual([]);
    expect(alert).toMatchObject({ severity: 'WARN', runId: run.runId, businessKey: run.businessKey, status: 'EXTRACTING' });
    expect(alert!.message).toMatch(/^2 RUNNING partition\(s\) without a heartbeat since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: 0001, 0002$/);
    const { rows } = await api.sql.query(`SELECT heartbeat_at FROM nifi_ops.load_partition WHERE run_id = $1 AND partition_id = '0001'`, [
      run.runId,
    ]);
    expect(alert!.at).toEqual(rows[0].heartbeat_at);
    // the sweeper's own rule has not acted: the partitions are still RUNNING, the run EXTRACTING
    expect(api.config.monitor.stallAfter).toBeLessThan(api.config.recovery.stale);
    await worker.sweeper.cycle();
    const { rows: statuses } = await api.sql.query(
      `SELECT r.status AS run, array_agg(p.status ORDER BY p.partition_id) AS partitions
         FROM nifi_ops.load_run r JOIN nifi_ops.load_partition p USING (run_id) WHERE r.run_id = $1 GROUP BY r.status`,
      [run.runId],
    );
    expect(statuses[0]).toEqual({ run: 'EXTRACTING', partitions: ['RUNNING', 'RUNNING', 'RUNNING', 'PENDING'] });
  });

  it('clears when the silent partitions report again', async () => {
    const { run, tokens } = await runningRun();
    await silence(run.runId, ['0001'], '12 minutes');
    expect(await stalledAlerts()).toHaveLength(1);
    await report(api, chunkInput(run, '0001', tokens['0001']!, 0, 2, 2));
    expect(await stalledAlerts()).toEqual([]);
  });

  it('raises it for an extracting run that has not moved at all (nobody claims its partitions)', async () => {
    const run = await startRun(api, [4, 4]);
    await api.sql.query(`UPDATE nifi_ops.load_partition SET created_at = clock_timestamp() - interval '11 minutes' WHERE run_id = $1`, [
      run.runId,
    ]);
    await ageRun(run.runId, '11 minutes');
    const [alert] = await stalledAlerts();
    expect(alert).toMatchObject({ runId: run.runId, partitionId: null });
    expect(alert!.message).toMatch(/^no progress since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(await countStalls(api.db.prisma, api.config.monitor.stallAfter)).toEqual({ runs: 1, partitions: 0 });
  });

  it('is sent to the webhooks once per occurrence and counted in lc_stalled_runs and lc_stalled_partitions', async () => {
    const { run } = await runningRun();
    await silence(run.runId, ['0001', '0002'], '15 minutes');
    await worker.sweeper.cycle();
    await worker.sweeper.cycle();
    const { rows: calls } = await api.sql.query(
      `SELECT d.receiver, o.kind, o.run_id::text AS run_id FROM nifi_ops.load_dispatch d
         JOIN nifi_ops.alert_occurrence o ON o.dedup_key = d.alert_dedup_key WHERE d.dispatch_type = 'ALERT_WEBHOOK'`,
    );
    expect(calls).toEqual([{ receiver: 'ops', kind: 'STALLED_RUN', run_id: run.runId }]);
    const metrics = await worker.registry.metrics();
    expect(metrics).toMatch(/^lc_stalled_runs 1$/m);
    expect(metrics).toMatch(/^lc_stalled_partitions 2$/m);
    expect(metrics).toMatch(/^lc_alerts\{kind="STALLED_RUN",severity="WARN"\} 1$/m);
  });
});

describe('Run.stall', () => {
  const STALL = `query($runId: UUID!) { run(runId: $runId) { status stall { stallAfterSeconds lastProgressAt
    quietestPartitions { partitionId status heartbeatAt } } } }`;

  it('gives the threshold, the last movement and the RUNNING partitions longest silent first; null once the run left EXTRACTING', async () => {
    const { run } = await runningRun();
    await silence(run.runId, ['0002'], '20 minutes');
    await silence(run.runId, ['0001'], '12 minutes');
    const res = await api.gql(STALL, { runId: run.runId }, { token: 'viewer' });
    const stall = res.body.data!.run.stall;
    expect(stall.stallAfterSeconds).toBe(600);
    expect(stall.quietestPartitions.map((p: { partitionId: string }) => p.partitionId)).toEqual(['0002', '0001', '0000']);
    const { rows } = await api.sql.query(`SELECT max(heartbeat_at) AS moved FROM nifi_ops.load_partition WHERE run_id = $1`, [run.runId]);
    expect(new Date(stall.lastProgressAt).getTime()).toBeGreaterThanOrEqual(rows[0].moved.getTime());

    await api.sql.query(`UPDATE nifi_ops.load_run SET status = 'FAILED_EXTRACT' WHERE run_id = $1`, [run.runId]);
    expect((await api.gql(STALL, { runId: run.runId }, { token: 'viewer' })).body.data!.run.stall).toBeNull();
  });
});
