// monitorSummaryChanged and alertRaised over SSE: re-reads of the monitor summary, diffed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { failCreatedRun, createRun } from '../../support/fixtures.js';
import { subscribe, type SseSubscription } from '../../support/sse.js';
import { until } from '../../support/until.js';

let api: TestApi;
// test/support/api.ts starts realtime with a 1 s monitor refresh for clock-driven alerts
beforeAll(async () => {
  api = await startTestApi({ recovery: { stale: 60_000 } }, { realtime: true });
});
afterAll(async () => api?.close());

const open: Array<SseSubscription<any>> = [];
afterAll(() => {
  for (const s of open) s.close();
});

type Alert = { kind: string; severity: string; runId: string | null; status: string | null; message: string | null };
const ALERTS = 'subscription { alertRaised { kind severity runId status message } }';
const SUMMARY = `subscription($alertLimit: Int) { monitorSummaryChanged(alertLimit: $alertLimit) {
  serverTime activeRuns { status count } recentRuns { status count } dispatches { status count } cleanupDue
  alerts { kind runId } } }`;

async function watch<T = Record<string, any>>(
  query: string,
  variables: Record<string, unknown> = {},
  token: 'viewer' | 'nifi' | 'operator' | null = 'viewer',
) {
  const sub = await subscribe<T>(api.url, query, variables, { token });
  open.push(sub);
  return sub;
}

describe('alertRaised', () => {
  it('needs a token and then sends each new alert once, not the ones present when it started', async () => {
    const anonymous = await watch(ALERTS, {}, null);
    expect(anonymous.status).toBe(401);
    const before = await createRun(api);
    await failCreatedRun(api, before.runId);
    const sub = await watch<{ alertRaised: Alert }>(ALERTS);
    expect(sub.status).toBe(200);
    const run = await createRun(api);
    await failCreatedRun(api, run.runId);
    const raised = await sub.waitFor((m) => m.data?.alertRaised?.runId === run.runId);
    expect(raised.data!.alertRaised).toEqual({
      kind: 'RUN_FAILED',
      severity: 'ERROR',
      runId: run.runId,
      status: 'FAILED_MANIFEST',
      message: 'BAD_PLAN no plan',
    });
    // a later unrelated change re-reads the summary: nothing is raised twice, the earlier failure never
    const later = await createRun(api);
    await failCreatedRun(api, later.runId);
    await sub.waitFor((m) => m.data?.alertRaised?.runId === later.runId);
    const ids = sub.messages.map((m) => m.data!.alertRaised.runId);
    expect(ids.filter((id) => id === run.runId)).toHaveLength(1);
    expect(ids).not.toContain(before.runId);
  });

  it('raises alerts recorded as NiFi events (CLEANUP_FAILED)', async () => {
    const sub = await watch<{ alertRaised: Alert }>(ALERTS);
    const run = await createRun(api);
    await failCreatedRun(api, run.runId);
    const res = await api.gql(`mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`, {
      input: { runId: run.runId, level: 'ERROR', name: 'CLEANUP_FAILED', processGroup: 'PG-70', message: 'hdfs rm failed' },
    });
    expect(res.body.errors).toBeUndefined();
    const raised = await sub.waitFor((m) => m.data?.alertRaised?.kind === 'CLEANUP_FAILED');
    expect(raised.data!.alertRaised).toMatchObject({ runId: run.runId, severity: 'WARN', message: 'hdfs rm failed' });
  });

  it('raises what changes with the clock, without any notification (a run gone stale)', async () => {
    const sub = await watch<{ alertRaised: Alert }>(ALERTS);
    const run = await createRun(api);
    // heartbeat_at changes do not notify: only the feed's periodic re-read can see this
    await api.sql.query(`UPDATE nifi_ops.load_run SET heartbeat_at = now() - interval '2 hours' WHERE run_id = $1`, [run.runId]);
    const raised = await sub.waitFor((m) => m.data?.alertRaised?.runId === run.runId);
    expect(raised.data!.alertRaised).toMatchObject({ kind: 'RUN_STALE', severity: 'WARN', status: 'CREATED' });
  });

  it('concurrent failures: every alert is raised exactly once to every subscriber (10 rounds)', async () => {
    const subs = [await watch<{ alertRaised: Alert }>(ALERTS), await watch<{ alertRaised: Alert }>(ALERTS, {}, 'operator')];
    for (let round = 0; round < 10; round++) {
      const runs = await Promise.all(Array.from({ length: 6 }, () => createRun(api)));
      await Promise.all(runs.map((r) => failCreatedRun(api, r.runId)));
      for (const sub of subs) {
        await until(`round ${round}'s alerts`, () => runs.every((r) => sub.messages.some((m) => m.data?.alertRaised?.runId === r.runId)));
      }
    }
    // the re-reads that follow must not repeat any of them
    const marker = await createRun(api);
    await failCreatedRun(api, marker.runId);
    for (const sub of subs) {
      await sub.waitFor((m) => m.data?.alertRaised?.runId === marker.runId);
      const keys = sub.messages.map((m) => `${m.data!.alertRaised.kind}|${m.data!.alertRaised.runId}`);
      expect(new Set(keys).size).toBe(keys.length);
    }
  });
});

describe('monitorSummaryChanged', () => {
  it('needs a token, refuses a bad alertLimit with 422, and starts with the current summary', async () => {
    expect((await watch(SUMMARY, {}, null)).status).toBe(401);
    const bad = await watch(SUMMARY, { alertLimit: 0 });
    expect(bad.status).toBe(422);
    expect(bad.headers.get('x-error-code')).toBe('INVALID_INPUT');
    expect((await watch(SUMMARY, { alertLimit: 501 })).status).toBe(422);
    const sub = await watch(SUMMARY, { alertLimit: 5 });
    const first = await sub.waitFor(() => true);
    const query = await api.gql(
      '{ monitorSummary(alertLimit: 5) { activeRuns { status count } recentRuns { status count } dispatches { status count } cleanupDue alerts { kind runId } } }',
      {},
      { token: 'viewer' },
    );
    expect(first.data!.monitorSummaryChanged).toMatchObject(query.body.data!.monitorSummary);
  });

  it('sends the summary again when a transition changes it, and not when nothing it shows changed', async () => {
    const sub = await watch(SUMMARY, { alertLimit: 500 });
    await sub.waitFor(() => true);
    const created = (s: any) => s.activeRuns.find((c: any) => c.status === 'CREATED')?.count ?? 0;
    const start = created(sub.messages.at(-1)!.data!.monitorSummaryChanged);
    const run = await createRun(api);
    await sub.waitFor((m) => created(m.data!.monitorSummaryChanged) === start + 1);
    await failCreatedRun(api, run.runId);
    await sub.waitFor((m) => m.data!.monitorSummaryChanged.alerts.some((a: any) => a.runId === run.runId));
    // the periodic re-read (every second here) finds nothing new: no message, although serverTime moved on
    const count = sub.messages.length;
    await new Promise((r) => setTimeout(r, 2500));
    expect(sub.messages.length).toBe(count);
    const shown = sub.messages.at(-1)!.data!.monitorSummaryChanged;
    expect(created(shown)).toBe(start);
    expect(shown.recentRuns.find((c: any) => c.status === 'FAILED_MANIFEST').count).toBeGreaterThan(0);
  });

  it('gives each subscriber its own alert limit', async () => {
    for (let i = 0; i < 3; i++) await failCreatedRun(api, (await createRun(api)).runId);
    const small = await watch(SUMMARY, { alertLimit: 1 });
    const large = await watch(SUMMARY, { alertLimit: 500 });
    const a = await small.waitFor(() => true);
    const b = await large.waitFor(() => true);
    expect(a.data!.monitorSummaryChanged.alerts).toHaveLength(1);
    expect(b.data!.monitorSummaryChanged.alerts.length).toBeGreaterThanOrEqual(3);
    expect(a.data!.monitorSummaryChanged.alerts[0]).toEqual(b.data!.monitorSummaryChanged.alerts[0]);
  });

  it('drops its subscribers when clients go away', async () => {
    const before = api.realtime!.monitor.subscriberCount();
    const subs = [await watch(SUMMARY), await watch(ALERTS)];
    await subs[0]!.waitFor(() => true);
    expect(api.realtime!.monitor.subscriberCount()).toBe(before + 2);
    for (const s of subs) s.close();
    await until('the subscriptions to be dropped', () => api.realtime!.monitor.subscriberCount() === before);
  });
});
