// runChanged over SSE end to end: triggers and the coalesced progress → the LISTEN connection → the
// feed's re-read → the subscriber; plus what happens when that connection is lost.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiMetrics } from '../../../src/server/metrics.js';
import { createApiServer } from '../../../src/server/app.js';
import { createLogger } from '../../../src/logging/logger.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { FAIL_RUN, JOB, chunkInput, claim, createRun, report, startRun } from '../../support/fixtures.js';
import { subscribe, type SseSubscription } from '../../support/sse.js';
import { startTcpProxy } from '../../support/tcp-proxy.js';
import { RUN_PROGRESS_CHANNEL } from '../../../src/db/channels.js';
import { createProgressNotifier } from '../../../src/db/progress-notifier.js';
import { REALTIME_APPLICATION_NAME, startRealtime } from '../../../src/realtime/realtime.js';
import { until } from '../../support/until.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({}, { realtime: true });
});
afterAll(async () => api?.close());

const RUN_CHANGED = `subscription($runId: UUID, $jobKey: String) {
  runChanged(runId: $runId, jobKey: $jobKey) { runId jobKey status successPartitionCount extractedCount
    partitions { partitionId status receivedChunks } } }`;

type RunMessage = {
  runChanged: {
    runId: string;
    jobKey: string;
    status: string;
    successPartitionCount: number;
    partitions: Array<{ partitionId: string; status: string; receivedChunks: number }>;
  };
};

const open: Array<SseSubscription<any>> = [];
async function watch(variables: Record<string, unknown>, token: 'viewer' | 'nifi' | 'operator' | null = 'viewer') {
  const sub = await subscribe<RunMessage>(api.url, RUN_CHANGED, variables, { token });
  open.push(sub);
  return sub;
}
afterAll(() => {
  for (const s of open) s.close();
});

const statusIs = (status: string) => (m: { data?: RunMessage | null }) => m.data?.runChanged?.status === status;

async function readyz(url: string): Promise<number> {
  return (await fetch(`${url}/readyz`)).status;
}

/** Changes a run's status without firing its trigger: no NOTIFY, only a resync can tell anyone. */
async function silentlySetStatus(sql: pg.Pool, runId: string, status: string): Promise<void> {
  const client = await sql.connect();
  try {
    // DDL is transactional: the trigger is off for this transaction only. ALTER TABLE refuses a table with trigger
    // events still pending in the transaction: the gate's deferred ones fire at the UPDATE instead of at COMMIT.
    await client.query('BEGIN');
    await client.query('SET CONSTRAINTS ALL IMMEDIATE');
    await client.query('ALTER TABLE nifi_ops.load_run DISABLE TRIGGER tr_load_run_changed_notify');
    await client.query('UPDATE nifi_ops.load_run SET status = $2 WHERE run_id = $1', [runId, status]);
    await client.query('ALTER TABLE nifi_ops.load_run ENABLE TRIGGER tr_load_run_changed_notify');
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

describe('runChanged', () => {
  it('needs a token (401 UNAUTHENTICATED without one) and accepts any role', async () => {
    const run = await createRun(api);
    const anonymous = await watch({ runId: run.runId }, null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('x-error-code')).toBe('UNAUTHENTICATED');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    for (const token of ['viewer', 'nifi', 'operator'] as const) {
      const sub = await watch({ runId: run.runId }, token);
      expect(sub.status).toBe(200);
      expect(sub.headers.get('content-type')).toContain('text/event-stream');
      await sub.waitFor(statusIs('CREATED'));
      sub.close();
    }
  });

  it('for one run starts with its current state and follows every committed transition', async () => {
    const run = await createRun(api);
    const sub = await watch({ runId: run.runId });
    const first = await sub.waitFor(() => true);
    expect(first.data!.runChanged).toMatchObject({ runId: run.runId, jobKey: JOB, status: 'CREATED' });
    const fail = await api.gql(FAIL_RUN, {
      input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'X' },
    });
    expect(fail.body.data!.failRun.changed).toBe(true);
    await sub.waitFor(statusIs('FAILED_MANIFEST'));
  });

  it('refuses an unknown run with 404 RUN_NOT_FOUND and malformed arguments with 422 INVALID_INPUT, keeping nothing open', async () => {
    const before = api.realtime!.runs.subscriberCount();
    const unknown = await watch({ runId: randomUUID() });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-error-code')).toBe('RUN_NOT_FOUND');
    const badId = await watch({ runId: 'not-a-uuid' });
    expect(badId.status).toBe(422);
    expect(badId.headers.get('x-error-code')).toBe('INVALID_INPUT');
    const badJob = await watch({ jobKey: 'lower case' });
    expect(badJob.status).toBe(422);
    await until('the refused stream to end', () => badJob.ended);
    expect(badJob.messages[0]!.errors![0]!.extensions).toMatchObject({ code: 'INVALID_INPUT', details: { field: 'jobKey' } });
    const tooLong = await watch({ jobKey: 'A'.repeat(201) });
    expect(tooLong.status).toBe(422);
    expect(api.realtime!.runs.subscriberCount()).toBe(before);
  });

  it("for a job delivers that job's runs and no others; without arguments every run", async () => {
    const job = `JOB_${randomUUID().slice(0, 8).toUpperCase()}`;
    const forJob = await watch({ jobKey: job });
    const all = await watch({});
    const other = await createRun(api);
    const mine = await createRun(api, { jobKey: job });
    await forJob.waitFor((m) => m.data?.runChanged?.runId === mine.runId);
    await all.waitFor((m) => m.data?.runChanged?.runId === mine.runId);
    await all.waitFor((m) => m.data?.runChanged?.runId === other.runId);
    expect(forJob.messages.every((m) => m.data!.runChanged.jobKey === job)).toBe(true);
  });

  it('delivers claim and chunk progress, re-read with the partitions the subscriber selected', async () => {
    const run = await startRun(api, [3, 2]);
    const sub = await watch({ runId: run.runId });
    await sub.waitFor(statusIs('EXTRACTING'));
    const { claimToken } = await claim(api, run.runId, '0000');
    await sub.waitFor((m) => m.data?.runChanged?.partitions?.[0]?.status === 'RUNNING');
    expect((await report(api, chunkInput(run, '0000', claimToken, 0, 2, 1))).result!.recorded).toBe(true);
    await sub.waitFor((m) => m.data?.runChanged?.partitions?.[0]?.receivedChunks === 1);
    await report(api, chunkInput(run, '0000', claimToken, 1, 2, 2));
    const done = await sub.waitFor((m) => m.data?.runChanged?.partitions?.[0]?.status === 'SUCCESS');
    expect(done.data!.runChanged.partitions[1]).toMatchObject({ partitionId: '0001', status: 'PENDING', receivedChunks: 0 });
  });

  it('ends the subscription in the server when the client goes away', async () => {
    const run = await createRun(api);
    const before = api.realtime!.runs.subscriberCount();
    const sub = await watch({ runId: run.runId });
    await sub.waitFor(statusIs('CREATED'));
    expect(api.realtime!.runs.subscriberCount()).toBe(before + 1);
    sub.close();
    await until('the subscription to be dropped', () => api.realtime!.runs.subscriberCount() === before);
  });

  it('concurrent reports completing one run: counts never go backwards and the final state arrives (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const counts = [1, 1, 1, 1, 1, 1, 1, 1];
      const run = await startRun(api, counts);
      const tokens = await Promise.all(counts.map((_, i) => claim(api, run.runId, String(i).padStart(4, '0'))));
      const sub = await watch({ runId: run.runId });
      await sub.waitFor(() => true);
      const results = await Promise.all(
        counts.map((n, i) => report(api, chunkInput(run, String(i).padStart(4, '0'), tokens[i]!.claimToken, 0, 1, n))),
      );
      expect(results.filter((r) => r.result?.runStatus === 'EXTRACTED_VALIDATED' && r.result.validationScheduled)).toHaveLength(1);
      await sub.waitFor(statusIs('EXTRACTED_VALIDATED'));
      // a final progress notification may still follow; give it time, then check the order of everything seen
      await new Promise((r) => setTimeout(r, 400));
      const seen = sub.messages.map((m) => m.data!.runChanged.successPartitionCount);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(sub.messages.at(-1)!.data!.runChanged).toMatchObject({ status: 'EXTRACTED_VALIDATED', successPartitionCount: 8 });
      sub.close();
    }
  });
});

describe('the LISTEN connection', () => {
  it('after pg_terminate_backend reconnects and gives every subscriber a fresh state (changes made meanwhile included)', async () => {
    const job = `JOB_${randomUUID().slice(0, 8).toUpperCase()}`;
    const run = await createRun(api, { jobKey: job });
    const one = await watch({ runId: run.runId });
    const forJob = await watch({ jobKey: job });
    await one.waitFor(statusIs('CREATED'));
    await silentlySetStatus(api.sql, run.runId, 'EXTRACTING');
    const { rows } = await api.sql.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
      [REALTIME_APPLICATION_NAME],
    );
    expect(rows).toHaveLength(1);
    await api.sql.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await one.waitFor(statusIs('EXTRACTING'));
    await forJob.waitFor(statusIs('EXTRACTING'));
    await until('the listener to be back', async () => (await readyz(api.url)) === 200 && api.realtime!.listening());
    const again = await api.sql.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [
      REALTIME_APPLICATION_NAME,
    ]);
    expect(again.rows).toHaveLength(1);
    expect(again.rows[0].pid).not.toBe(rows[0]!.pid);
  });

  it('keeps reconnecting while the database is unreachable (/readyz 503), then resyncs every subscription (/readyz 200)', async () => {
    const target = new URL(api.database.url);
    const proxy = await startTcpProxy(target.hostname, Number(target.port));
    const viaProxy = new URL(api.database.url);
    viaProxy.port = String(proxy.port);
    await proxy.cut();
    const log = createLogger({ level: 'fatal', format: 'json' }, 'test');
    // started while the database cannot be reached at all; no periodic monitor refresh to hide a missing resync
    const realtime = startRealtime({ url: viaProxy.toString(), config: api.config, log, monitor: { refreshMs: 600_000 } });
    const server = createApiServer({ config: api.config, db: api.db, log, metrics: createApiMetrics(), realtime });
    const { port } = await server.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${port}`;
    try {
      expect(await readyz(url)).toBe(503);
      await proxy.restore();
      await until('/readyz 200 after the first connect', async () => (await readyz(url)) === 200);

      const run = await createRun(api);
      const sub = await subscribe<RunMessage>(url, RUN_CHANGED, { runId: run.runId }, { token: 'operator' });
      const alerts = await subscribe(url, 'subscription { alertRaised { kind runId } }', {}, { token: 'viewer' });
      const summaries = await subscribe(
        url,
        'subscription { monitorSummaryChanged { recentRuns { status count } } }',
        {},
        { token: 'nifi' },
      );
      const status = await subscribe(url, 'subscription { realtimeStatus { live since } }', {}, { token: 'viewer' });
      const progress = await subscribe(
        url,
        'subscription($runId: UUID!) { runProgress(runId: $runId) { version snapshot run { status } } }',
        { runId: run.runId },
        { token: 'viewer' },
      );
      open.push(sub, alerts, summaries, status, progress);
      await sub.waitFor(statusIs('CREATED'));
      await summaries.waitFor(() => true);
      expect((await status.waitFor(() => true)).data!.realtimeStatus.live).toBe(true);
      await progress.waitFor(() => true);

      const cutAt = Date.now();
      await proxy.cut();
      await until('/readyz 503 while cut off', async () => (await readyz(url)) === 503);
      // subscribers are told at once that what they show may be stale, and since when
      const down = await status.waitFor((m) => m.data?.realtimeStatus?.live === false);
      expect(new Date(down.data!.realtimeStatus.since).getTime()).toBeGreaterThanOrEqual(cutAt - 1000);
      // longer than pg-listen's own 3 s of reconnecting: the listener must carry on by itself
      await new Promise((r) => setTimeout(r, 4000));
      expect(await readyz(url)).toBe(503);
      // committed while the listener cannot hear it: the notifications are lost, the resync is not
      const fail = await api.gql(FAIL_RUN, {
        input: { runId: run.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'X' },
      });
      expect(fail.body.data!.failRun.changed).toBe(true);
      const summariesBefore = summaries.messages.length;
      await proxy.restore();
      await until('/readyz 200 after the reconnect', async () => (await readyz(url)) === 200, 30_000);
      await sub.waitFor(statusIs('FAILED_MANIFEST'));
      await alerts.waitFor((m) => m.data?.alertRaised?.kind === 'RUN_FAILED' && m.data.alertRaised.runId === run.runId);
      await until('a fresh summary', () => summaries.messages.length > summariesBefore);
      await status.waitFor((m) => m !== status.messages[0] && m.data?.realtimeStatus?.live === true);
      // the run's progress comes again as a snapshot, with what changed meanwhile
      const resynced = await progress.waitFor((m) => m.data?.runProgress?.run.status === 'FAILED_MANIFEST');
      expect(resynced.data!.runProgress.snapshot).toBe(true);
    } finally {
      await server.close();
      await realtime.close();
      await proxy.close();
    }
  });
});

describe('coalesced progress', () => {
  it('a burst of touches for one run is one notification at once and one at the end of the interval', async () => {
    const listener = new pg.Client({ connectionString: api.database.url });
    await listener.connect();
    const got: string[] = [];
    listener.on('notification', (n) => got.push(n.payload ?? ''));
    await listener.query(`LISTEN ${RUN_PROGRESS_CHANNEL}`);
    const progress = createProgressNotifier(api.sql, { intervalMs: 200 });
    try {
      const [a, b] = [randomUUID(), randomUUID()];
      for (let i = 0; i < 100; i++) progress.touch(a);
      progress.touch(b);
      await until('the trailing notification', () => got.filter((p) => p === a).length === 2);
      // nothing else is pending: later windows stay quiet
      await new Promise((r) => setTimeout(r, 800));
      expect(got.filter((p) => p === a)).toHaveLength(2);
      expect(got.filter((p) => p === b)).toHaveLength(1);
      progress.touch(a);
      await until('a quiet run to notify at once', () => got.filter((p) => p === a).length === 3);
    } finally {
      progress.close();
      await listener.end();
    }
  });
});
