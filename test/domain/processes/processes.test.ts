// The processes of an installation (src/domain/processes/processes.ts): the alerts built on their registrations and
// beats (WORKER_STALE, NO_DISPATCHER), the week after which they are forgotten, and the roles the table allows.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registration, silence } from '../../support/process-registrations.js';
import { alertThresholds, monitorSummary } from '../../../src/domain/monitor/monitor-summary.js';
import {
  forgetProcesses,
  listProcesses,
  markStopped,
  PROCESS_ROLES,
  registerProcess,
  STALE_AFTER_MS,
} from '../../../src/domain/processes/processes.js';
import { type DomainTest, extractedRun, startDomainTest } from '../support/fixtures.js';

let t: DomainTest;
beforeAll(async () => {
  t = await startDomainTest();
});
afterAll(async () => t?.close());
beforeEach(async () => {
  await t.sql.query('TRUNCATE nifi_ops.process_instance, nifi_ops.load_dispatch, nifi_ops.load_event CASCADE');
});

/** The monitor summary's alerts of one kind. */
const alerts = async (kind: string) =>
  (
    await monitorSummary(t.db.prisma, {
      alertLimit: 100,
      recovery: alertThresholds(t.config),
      retention: t.config.cleanup,
      maxBatch: t.config.cleanup.maxBatch,
    })
  ).alerts.filter((a) => a.kind === kind);

describe('processes', () => {
  it('raise WORKER_STALE for a process that stopped beating without stopping, until a restart on its host replaces it', async () => {
    const crashed = registration();
    await registerProcess(t.db.prisma, crashed);
    expect(await alerts('WORKER_STALE')).toEqual([]);
    await silence(t, crashed.instanceId, STALE_AFTER_MS + 1000);
    const [stale] = await alerts('WORKER_STALE');
    expect(stale).toMatchObject({ severity: 'ERROR' });
    expect(stale!.message).toContain(`work on etl-01 (pid 4242, instance ${crashed.instanceId}) last seen at`);

    // a stopped process is not stale, and a serve that went quiet is a warning
    const quietServe = registration({ role: 'serve', host: 'api-01', dispatcher: false, sweeper: false });
    await registerProcess(t.db.prisma, quietServe);
    await silence(t, quietServe.instanceId, STALE_AFTER_MS + 1000);
    expect((await alerts('WORKER_STALE')).map((a) => a.severity).sort()).toEqual(['ERROR', 'WARN']);
    await markStopped(t.db.prisma, quietServe.instanceId);

    await registerProcess(t.db.prisma, registration({ pid: 4343 }));
    expect(await alerts('WORKER_STALE')).toEqual([]);
  });

  it('raise NO_DISPATCHER while calls are due and no live process runs a dispatcher', async () => {
    const run = await extractedRun(t);
    // the VALIDATE_RUN call is due, but only just: a dispatcher has a minute to take it
    expect(await alerts('NO_DISPATCHER')).toEqual([]);
    await t.sql.query(`UPDATE nifi_ops.load_dispatch SET next_attempt_at = next_attempt_at - interval '2 minutes' WHERE run_id = $1`, [
      run.runId,
    ]);
    const [alert] = await alerts('NO_DISPATCHER');
    expect(alert).toMatchObject({ severity: 'ERROR' });
    expect(alert!.message).toMatch(/^1 call\(s\) to NiFi due since .* and no live process runs a dispatcher/);

    // a serve (no dispatcher) does not help; a stale dispatcher does not either; a live one does
    await registerProcess(t.db.prisma, registration({ role: 'serve', dispatcher: false, sweeper: false }));
    const stale = registration();
    await registerProcess(t.db.prisma, stale);
    await silence(t, stale.instanceId, STALE_AFTER_MS + 1000);
    expect(await alerts('NO_DISPATCHER')).toHaveLength(1);
    await registerProcess(t.db.prisma, registration({ host: 'etl-02' }));
    expect(await alerts('NO_DISPATCHER')).toEqual([]);
  });

  it('are forgotten by the sweeper a week after their last beat', async () => {
    const old = registration();
    const recent = registration({ pid: 7 });
    await registerProcess(t.db.prisma, old);
    await registerProcess(t.db.prisma, recent);
    await silence(t, old.instanceId, 7 * 24 * 3600_000 + 1000);
    expect(await forgetProcesses(t.db.prisma)).toBe(1);
    expect((await listProcesses(t.db.prisma)).map((p) => p.instanceId)).toEqual([recent.instanceId]);
  });

  it('have exactly the roles of PROCESS_ROLES in the CHECK constraint', async () => {
    const { rows } = await t.sql.query<{ definition: string }>(
      `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conname = 'ck_process_instance_role'`,
    );
    expect([...rows[0]!.definition.matchAll(/'([a-z]+)'/g)].map((m) => m[1]).sort()).toEqual([...PROCESS_ROLES].sort());
  });
});
