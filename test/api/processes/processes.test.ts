// The processes of an installation as the API lists them, and the worker's heartbeat: registration, beats, the metric,
// the stop, and beats through a database outage. The alerts built on them and the domain's rules are in
// test/domain/processes/processes.test.ts.
import { hostname } from 'node:os';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registration, silence } from '../../support/process-registrations.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { until } from '../../support/until.js';
import { quietLog } from '../../support/worker.js';
import { createDb } from '../../../src/db/client.js';
import { startHeartbeat } from '../../../src/worker/heartbeat.js';
import { beat, listProcesses, markStopped, registerProcess, STALE_AFTER_MS } from '../../../src/domain/processes/processes.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());
beforeEach(async () => {
  await api.sql.query('TRUNCATE nifi_ops.process_instance, nifi_ops.load_dispatch, nifi_ops.load_event CASCADE');
});

const PROCESSES = `{ processes { instanceId role host pid version dispatcher sweeper state startedAt lastSeenAt lastSweepAt stoppedAt } }`;

describe('processes', () => {
  it('are listed with their state: live after registering and beating, stale when silent, stopped when they say so', async () => {
    const serve = registration({ role: 'serve', dispatcher: false, sweeper: false, pid: 1 });
    const work = registration({ pid: 2 });
    await registerProcess(api.db.prisma, serve);
    await registerProcess(api.db.prisma, work);
    const sweptAt = new Date('2026-12-01T10:00:00Z');
    await beat(api.db.prisma, work, sweptAt);
    let listed = (await api.gql<{ processes: Array<Record<string, unknown>> }>(PROCESSES, {}, { token: 'viewer' })).body.data!.processes;
    expect(listed.map((p) => [p.role, p.state, p.lastSweepAt])).toEqual([
      ['serve', 'LIVE', null],
      ['work', 'LIVE', sweptAt.toISOString()],
    ]);

    await silence(api, work.instanceId, STALE_AFTER_MS + 1000);
    await markStopped(api.db.prisma, serve.instanceId);
    listed = (await api.gql<{ processes: Array<Record<string, unknown>> }>(PROCESSES, {}, { token: 'viewer' })).body.data!.processes;
    expect(listed.map((p) => [p.role, p.state, p.stoppedAt !== null])).toEqual([
      ['work', 'STALE', false],
      ['serve', 'STOPPED', true],
    ]);

    // a beat after the sweeper forgot the row (a week without the database) registers again
    await api.sql.query('DELETE FROM nifi_ops.process_instance WHERE instance_id = $1', [work.instanceId]);
    await beat(api.db.prisma, work, null);
    expect((await listProcesses(api.db.prisma)).find((p) => p.instanceId === work.instanceId)?.state).toBe('LIVE');
  });
});

describe('the heartbeat', () => {
  it('registers, beats with the last sweep, reports every process in lc_process_heartbeat_age_seconds, and records the stop', async () => {
    const silent = registration({ host: 'etl-09' });
    await registerProcess(api.db.prisma, silent);
    await silence(api, silent.instanceId, 90_000);
    // a crashed worker of this host, which the heartbeat's process (same role, same host) replaces
    const crashed = registration({ host: hostname() });
    await registerProcess(api.db.prisma, crashed);
    await silence(api, crashed.instanceId, 90_000);
    const registry = new Registry();
    const sweptAt = new Date();
    const heartbeat = startHeartbeat({
      db: api.db,
      log: quietLog,
      role: 'work',
      dispatcher: true,
      sweeper: true,
      registry,
      lastSweepAt: () => sweptAt,
      intervalMs: 50,
    });
    const mine = await until('a beat with the last sweep', async () =>
      (await listProcesses(api.db.prisma)).find((p) => p.instanceId === heartbeat.instanceId && p.lastSweepAt !== null),
    );
    expect(mine).toMatchObject({ role: 'work', pid: process.pid, dispatcher: true, state: 'LIVE' });
    const text = await until('the ages in the registry', async () => {
      const metrics = await registry.metrics();
      return metrics.includes(heartbeat.instanceId) && metrics.includes(silent.instanceId) ? metrics : null;
    });
    const age = Number(
      new RegExp(`lc_process_heartbeat_age_seconds\\{instance_id="${silent.instanceId}",role="work",host="etl-09"\\} (\\S+)`).exec(
        text,
      )?.[1],
    );
    expect(age).toBeGreaterThanOrEqual(90);
    expect(text).not.toContain(crashed.instanceId);

    await heartbeat.stop();
    expect((await listProcesses(api.db.prisma)).find((p) => p.instanceId === heartbeat.instanceId)?.state).toBe('STOPPED');
  });

  it('keeps beating through a database that went away and came back', async () => {
    const server = new URL(api.database.url);
    const proxy = await startTcpProxy(server.hostname, Number(server.port || 5432));
    const throughProxy = new URL(api.database.url);
    throughProxy.port = String(proxy.port);
    const db = createDb(throughProxy.toString(), {
      poolSize: 2,
      timeouts: { connectTimeout: 500, acquireTimeout: 1000, statementTimeout: 1000 },
    });
    const heartbeat = startHeartbeat({
      db,
      log: quietLog,
      role: 'serve',
      dispatcher: false,
      sweeper: false,
      registry: new Registry(),
      intervalMs: 50,
    });
    try {
      await until('registered', async () => (await listProcesses(api.db.prisma)).some((p) => p.instanceId === heartbeat.instanceId));
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const { rows } = await api.sql.query<{ last: Date }>(
        'SELECT last_seen_at AS last FROM nifi_ops.process_instance WHERE instance_id = $1',
        [heartbeat.instanceId],
      );
      await proxy.restore();
      await until('a beat after the outage', async () => {
        const now = await api.sql.query<{ last: Date }>(
          'SELECT last_seen_at AS last FROM nifi_ops.process_instance WHERE instance_id = $1',
          [heartbeat.instanceId],
        );
        return now.rows[0]!.last > rows[0]!.last;
      });
    } finally {
      await heartbeat.stop();
      await db.close();
      await proxy.close();
    }
  });
});
