// `load-control work` as a process: its configuration check and its health endpoints.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_LISTENER_NAME } from '../../src/db/listener.js';
import { REALTIME_APPLICATION_NAME } from '../../src/realtime/realtime.js';
import { LISTEN_APPLICATION_NAME } from '../../src/worker/dispatcher.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { freePort, runCli as run } from '../support/cli.js';
import { completeRun } from '../support/fixtures.js';
import { defineGate, observed, unique } from '../support/gate-fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

let api: TestApi;
let receiver: Receiver;
beforeAll(async () => {
  api = await startTestApi();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await api?.close();
});

describe('load-control work', () => {
  it('refuses to start without nifi.receiverUrl, naming the key', async () => {
    const child = run(['work'], { DATABASE_URL: api.database.url });
    expect(await child.exited).toBe(2);
    expect(child.output()).toContain('config: nifi.receiverUrl: required by the worker');
  });

  it('refuses a --metrics-port that is not a port number', async () => {
    const child = run(['work', '--metrics-port', 'x'], { DATABASE_URL: api.database.url, LC_NIFI__RECEIVER_URL: receiver.url });
    expect(await child.exited).toBe(2);
    expect(child.output()).toContain('--metrics-port: must be a port number');
  });

  it('delivers calls and serves /healthz, /readyz and /metrics with --metrics-port; SIGTERM stops it', async () => {
    const child = run(['work', '--metrics-port', '0'], {
      DATABASE_URL: api.database.url,
      LC_NIFI__RECEIVER_URL: receiver.url,
      LC_SERVER__HOST: '127.0.0.1',
    });
    try {
      const port = await until('the metrics port', () => /"port":(\d+)[^\n]*worker_metrics_listening/.exec(child.output())?.[1]);
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      await until('readiness', async () => (await fetch(`${base}/readyz`)).status === 200);
      const run1 = await completeRun(api);
      await receiver.waitForCalls(1);
      expect(receiver.callsFor(run1.dispatchId)).toHaveLength(1);
      let metrics = '';
      await until('the delivery to be counted', async () => {
        metrics = await (await fetch(`${base}/metrics`)).text();
        return metrics.includes('lc_dispatch_total{type="VALIDATE_RUN",result="sent"} 1');
      });
      expect(metrics).toContain('lc_active_runs{status="EXTRACTED_VALIDATED"}');
      // it registered as a process of the installation, with its dispatcher and sweeper
      const processes = await api.sql.query(
        'SELECT role, pid, dispatcher, sweeper, stopped_at FROM nifi_ops.process_instance WHERE pid = $1',
        [child.pid],
      );
      expect(processes.rows).toEqual([{ role: 'work', pid: child.pid, dispatcher: true, sweeper: true, stopped_at: null }]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await child.exited).toBe(0);
    expect(child.output()).toContain('worker_stopped');
    const stopped = await api.sql.query('SELECT stopped_at FROM nifi_ops.process_instance WHERE pid = $1', [child.pid]);
    expect(stopped.rows[0].stopped_at).toBeInstanceOf(Date);
  });
});

describe('load-control start', () => {
  it('also runs the worker when nifi.receiverUrl is set, on the one LISTEN connection of the process, part of /readyz', async () => {
    const port = await freePort();
    const child = run(['start'], {
      DATABASE_URL: api.database.url,
      LC_NIFI__RECEIVER_URL: receiver.url,
      PORT: String(port),
      LC_SERVER__HOST: '127.0.0.1',
    });
    try {
      const base = `http://127.0.0.1:${port}`;
      await until('readiness', async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200);
      expect(child.output()).toContain('worker_started');
      receiver.reset();
      const done = await completeRun(api);
      await receiver.waitForCalls(1);
      expect(receiver.callsFor(done.dispatchId)).toHaveLength(1);
      await until('the delivery to be counted', async () =>
        (await (await fetch(`${base}/metrics`)).text()).includes('lc_dispatch_total{type="VALIDATE_RUN",result="sent"} 1'),
      );
      // the API's realtime and the dispatcher share one LISTEN connection, on all four channels: by the listeners'
      // names too, since a connection's last query is its LISTEN only until its first liveness probe, 10 s later
      const { rows } = await api.sql.query<{ application_name: string }>(
        `SELECT application_name FROM pg_stat_activity
          WHERE datname = current_database() AND (query LIKE 'LISTEN %' OR application_name = ANY($1))`,
        [[PROCESS_LISTENER_NAME, REALTIME_APPLICATION_NAME, LISTEN_APPLICATION_NAME]],
      );
      expect(rows).toEqual([{ application_name: PROCESS_LISTENER_NAME }]);
      const connected = child
        .output()
        .split('\n')
        .find((line) => line.includes('"listen_connected"'));
      for (const channel of ['lc_run_changed', 'lc_run_progress', 'lc_alert', 'load_dispatch']) expect(connected).toContain(channel);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await child.exited).toBe(0);
  });

  it('without nifi.receiverUrl delivers the gates’ calls and leaves NiFi’s waiting in the outbox', async () => {
    const port = await freePort();
    const child = run(['start'], { DATABASE_URL: api.database.url, PORT: String(port), LC_SERVER__HOST: '127.0.0.1' });
    try {
      await until('readiness', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200);
      expect(child.output()).toContain('nifi_calls_not_delivered');
      expect(child.output()).toContain("NiFi's calls wait in the outbox; gates', alerts' and lineage calls are delivered");
      expect(child.output()).not.toContain('"worker_started"');

      const validation = await completeRun(api);
      const consumer = unique('consumer');
      const jobId = unique('job');
      await defineGate(api, consumer, [jobId], undefined, { notifyUrl: receiver.url });
      await observed(api, { jobId, businessDate: '2026-11-30', state: 'SUCCEEDED' });
      const [gateCall] = await until('the gate’s call to be acknowledged', async () => {
        const { rows } = await api.sql.query<{ dispatch_id: string }>(
          `SELECT dispatch_id FROM nifi_ops.load_dispatch WHERE consumer = $1 AND dispatch_type = 'GATE_READY' AND status = 'ACKED'`,
          [consumer],
        );
        return rows.length > 0 ? rows : undefined;
      });
      expect(receiver.callsFor(gateCall!.dispatch_id)).toHaveLength(1);
      // NiFi's call was neither sent nor cancelled: a worker with a receiver takes it later
      const { rows } = await api.sql.query('SELECT status, attempt_count FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [
        validation.dispatchId,
      ]);
      expect(rows).toEqual([{ status: 'PENDING', attempt_count: 0 }]);
      expect(receiver.callsFor(validation.dispatchId)).toEqual([]);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await child.exited).toBe(0);
  });
});
