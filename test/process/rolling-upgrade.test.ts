// A rolling upgrade under load (README "Rolling upgrade"), as an operator rolls one out: the previous release
// (24440f7, test/support/old-release.ts) runs two `serve` behind HAProxy (deploy/haproxy-api.example.cfg, checking
// /readyz) and two `work`, while NiFi-like flows load through HAProxy and NiFi acknowledges each VALIDATE_RUN
// with startValidation. Today's migrations are applied under that traffic by the real runner, then each process in
// turn gets SIGTERM and is replaced by today's, the next one only once the new one is ready. No client sees a 5xx,
// a reset or a refused connection; every write a client got a 200 for is in the database; every VALIDATE_RUN is
// delivered once. Then today's serves are restarted the same way: with server.shutdownDelay they listen until
// HAProxy took them out, and HAProxy never has to try a request again (the old release needs its retry-on).
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readSchemaStatus } from '../../src/db/migrate.js';
import { freePort, runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { START_VALIDATION } from '../support/fixtures.js';
import { startHaproxy, type Haproxy } from '../support/haproxy.js';
import { call } from '../support/ledger-flow.js';
import { expectAcknowledgedIn, startNifiLoad, type Acknowledged, type NifiLoad } from '../support/nifi-load.js';
import { RELEASE_24440F7, checkoutRelease, stopCli, type CliProcess, type OldRelease } from '../support/old-release.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

const FLOWS = 4;
const SHAPE = { businessKeyPrefix: 'BK_ROLLING', rows: [4, 4, 4], chunks: 2 };
/** NiFi waits the Retry-After (1 s) after a 503; there should be none. */
const RETRY_MS = 1_000;

/**
 * Today's processes behind HAProxy stay listening this long after SIGTERM with /readyz 503: longer than HAProxy takes
 * to see it (two failed checks, every 500 ms), so that it stops sending to them before they stop listening.
 */
const SHUTDOWN_DELAY = 'PT3S';

interface Slot {
  name: string;
  kind: 'serve' | 'work';
  /** serve: its port, the address HAProxy has for it. */
  port?: number;
  process: CliProcess;
}

/** One process replaced, with performance.now() times and, for a serve, what HAProxy had to do meanwhile. */
interface Restart {
  name: string;
  signalledAt: number;
  exitCode: number | null;
  exitedAt: number;
  readyAt: number;
  /** Connections to it HAProxy tried again, requests it sent elsewhere, responses or connections that failed. */
  haproxy: { retries: number; redispatches: number; errors: number };
}

let database: TestDatabase;
let receiver: Receiver;
let haproxy: Haproxy;
let workDir: string;
let release: OldRelease;
const slots: Slot[] = [];

async function serveReady(slot: Slot): Promise<void> {
  await haproxy.waitForServer(slot.name, 'UP', 60_000).catch((error: Error) => {
    throw new Error(`${error.message}\n${slot.process.output()}`);
  });
}

async function workReady(slot: Slot): Promise<void> {
  await until('work to start', () => slot.process.output().includes('"worker_started"'), 60_000).catch((error: Error) => {
    throw new Error(`${error.message}\n${slot.process.output()}`);
  });
}

/** SIGTERM to the slot's process; once it exited (and HAProxy took it out), today's release in its place, ready. */
async function replace(slot: Slot): Promise<Restart> {
  const before = (await haproxy.serverStats())[slot.name];
  const signalledAt = performance.now();
  const old = slot.process;
  await stopCli(old);
  const exitedAt = performance.now();
  // a serve comes back into rotation only after HAProxy took it out (it may exit before the next check)
  if (slot.kind === 'serve') await haproxy.waitForServer(slot.name, 'DOWN');
  const env = { LC_CONFIG: release.configPath, LC_SERVER__SHUTDOWN_DELAY: SHUTDOWN_DELAY };
  slot.process = slot.kind === 'serve' ? runCli(['serve'], { ...env, PORT: String(slot.port) }) : runCli(['work'], env);
  await (slot.kind === 'serve' ? serveReady(slot) : workReady(slot));
  const after = (await haproxy.serverStats())[slot.name];
  const delta = (counter: 'retries' | 'redispatches' | 'errors') => (after && before ? after[counter] - before[counter] : 0);
  return {
    name: slot.name,
    signalledAt,
    exitCode: old.exitCode,
    exitedAt,
    readyAt: performance.now(),
    haproxy: { retries: delta('retries'), redispatches: delta('redispatches'), errors: delta('errors') },
  };
}

/** The longest wait of a request the load sent between `from` and `to`, in ms. */
function maxLatency(load: NifiLoad, from: number, to: number): number {
  return Math.round(Math.max(0, ...load.answers.filter((a) => a.at - a.ms >= from && a.at - a.ms <= to).map((a) => a.ms)));
}

/** HAProxy's news of its servers (taken out, back in, and why), for a failure's message. */
const serverEvents = () =>
  haproxy
    .output()
    .split('\n')
    .filter((line) => line.startsWith('[') && line.includes('Server load_control_serve/'))
    .join('\n');

function report(load: NifiLoad, restarts: Restart[]): void {
  const ms = (from: number, to: number) => `${Math.round(to - from)} ms`;
  for (const r of restarts) {
    console.log(
      `rolling-upgrade: ${r.name}: SIGTERM to exit ${ms(r.signalledAt, r.exitedAt)} (status ${r.exitCode}), replacement ready ` +
        `${ms(r.exitedAt, r.readyAt)} later; max latency from SIGTERM to ready ${maxLatency(load, r.signalledAt, r.readyAt)} ms` +
        (r.name.startsWith('serve')
          ? `; HAProxy retried ${r.haproxy.retries} connections to it, redispatched ${r.haproxy.redispatches} requests, ${r.haproxy.errors} errors`
          : ''),
    );
  }
}

/** Stops the clients; a client's failure is thrown with what happened to the processes and HAProxy's servers. */
async function stopLoad(load: NifiLoad, restarts: Restart[]): Promise<void> {
  await load.stop().catch((error: Error) => {
    report(load, restarts);
    throw new Error(`${error.message}\n${serverEvents()}`);
  });
}

/** Every VALIDATE_RUN of `runs` reached NiFi once and NiFi's acknowledgement took; every write acknowledged is there. */
async function expectDeliveredOnceAndKept(runs: Acknowledged[], acknowledgements: Array<Promise<{ started: boolean }>>): Promise<void> {
  const check = new pg.Client({ connectionString: database.url });
  await check.connect();
  try {
    const dispatches = await check.query<{ dispatch_id: string }>(
      `SELECT dispatch_id::text FROM nifi_ops.load_dispatch WHERE dispatch_type = 'VALIDATE_RUN' AND run_id = ANY($1::uuid[])`,
      [runs.map((run) => run.runId)],
    );
    expect(dispatches.rows.length).toBe(runs.length);
    await until('every dispatch to be delivered', () => dispatches.rows.every((d) => receiver.callsFor(d.dispatch_id).length > 0), 30_000);
    expect((await Promise.all(acknowledgements)).filter((ack) => !ack.started)).toEqual([]);
    expect(dispatches.rows.map((d) => receiver.callsFor(d.dispatch_id).length).filter((calls) => calls !== 1)).toEqual([]);
    // and the ledger agrees: each sent once, acknowledged
    const states = await check.query<{ status: string; attempt_count: number }>(
      'SELECT status, attempt_count FROM nifi_ops.load_dispatch WHERE dispatch_id = ANY($1::uuid[])',
      [dispatches.rows.map((d) => d.dispatch_id)],
    );
    expect(states.rows.filter((d) => d.status !== 'ACKED' || d.attempt_count !== 1)).toEqual([]);
    await expectAcknowledgedIn(check, runs, 'STAGE_VALIDATING');
  } finally {
    await check.end();
  }
}

/** NiFi's flows through HAProxy, and its control receiver acknowledging each VALIDATE_RUN through HAProxy too. */
function startLoad(businessKeyPrefix: string) {
  const load = startNifiLoad(haproxy.url, { ...SHAPE, businessKeyPrefix, flows: FLOWS, retryMs: RETRY_MS });
  const acknowledgements: Array<Promise<{ started: boolean }>> = [];
  receiver.onCall((received) => {
    const input = { runId: received.headers['x-run-id'], dispatchId: received.headers['x-dispatch-id'], node: 'nifi-01' };
    acknowledgements.push(call(load.gql, START_VALIDATION, { input }));
  });
  return { load, acknowledgements };
}

beforeAll(async () => {
  database = await createTestDatabase({ empty: true });
  receiver = await startReceiver();
  workDir = await mkdtemp(join(tmpdir(), 'lc-rolling-upgrade-'));
  release = await checkoutRelease(RELEASE_24440F7, join(workDir, 'release'), {
    server: { host: '127.0.0.1' },
    database: { url: database.url },
    // a worker's lease shorter than a test, so that a dispatch lost with a stopped worker would be sent again
    nifi: { receiverUrl: receiver.url, timeoutSeconds: 2 },
    dispatch: { lease: 'PT5S', pollInterval: 0.5 },
    logging: { level: 'info' },
  });
  await release.run(['migrate']);

  const ports = [await freePort(), await freePort()];
  haproxy = await startHaproxy(await freePort(), { serve1: `127.0.0.1:${ports[0]}`, serve2: `127.0.0.1:${ports[1]}` });
  for (const [index, port] of ports.entries()) {
    slots.push({ name: `serve${index + 1}`, kind: 'serve', port, process: release.start(['serve'], { PORT: String(port) }) });
  }
  for (const index of [1, 2]) slots.push({ name: `work${index}`, kind: 'work', process: release.start(['work']) });
  await Promise.all(slots.map((slot) => (slot.kind === 'serve' ? serveReady(slot) : workReady(slot))));
});

afterAll(async () => {
  for (const slot of slots) if (slot.process.exitCode === null) slot.process.kill('SIGKILL');
  await Promise.all(
    slots.map((slot) => (slot.process.exitCode === null ? new Promise((resolve) => slot.process.once('exit', resolve)) : null)),
  );
  await haproxy?.close();
  await receiver?.close();
  await database?.drop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('a rolling upgrade from 24440f7 behind HAProxy under load', () => {
  it('migrates under traffic, replaces two serve and two work one at a time: no 5xx, no reset, nothing lost, each dispatch once', async () => {
    const { load, acknowledgements } = startLoad('BK_ROLLING');
    const restarts: Restart[] = [];
    let startedAt = 0;
    let migratedAt = 0;
    let upgradedAt = 0;
    try {
      await load.until('each flow to finish a run on the previous release', () => load.done.every((runs) => runs.length >= 1), 60_000);
      startedAt = performance.now();
      const migrated = await migrate(database.url);
      migratedAt = performance.now();
      // every migration today's release has and the previous one had not
      const previous = new Set(readdirSync(join(release.dir, 'prisma/migrations')));
      expect(migrated.applied).toEqual(
        readdirSync('prisma/migrations')
          .filter((name) => !previous.has(name))
          .sort(),
      );
      expect(migrated.applied.length).toBeGreaterThan(0);
      expect(migrated.functionsApplied.length).toBeGreaterThan(0);
      expect(await readSchemaStatus(database.url)).toEqual({ pendingMigrations: [], pendingFunctions: [], unknownMigrations: [] });
      await load.until(
        'each flow to finish a run on the migrated schema',
        () => load.done.every((runs) => runs.some((run) => run.startedAt > migratedAt)),
        60_000,
      );
      for (const slot of slots) restarts.push(await replace(slot));
      upgradedAt = performance.now();
      await load.until(
        'each flow to finish a run on the new release',
        () => load.done.every((runs) => runs.some((run) => run.startedAt > upgradedAt)),
        60_000,
      );
    } finally {
      await stopLoad(load, restarts);
    }
    const runs = load.done.flat();
    console.log(
      `rolling-upgrade: ${load.answers.length} requests answered through HAProxy, ${runs.length} runs, ${receiver.calls.length} VALIDATE_RUN ` +
        `calls; upgrade took ${Math.round(upgradedAt - startedAt)} ms, the migrations ${Math.round(migratedAt - startedAt)} ms of it ` +
        `(max latency meanwhile ${maxLatency(load, startedAt, migratedAt)} ms)`,
    );
    report(load, restarts);

    // not one 5xx, nor a connection reset or refused, at the client
    expect(
      load.answers.filter((a) => a.status !== 200),
      serverEvents(),
    ).toEqual([]);
    // each old process drained and exited 0
    expect(restarts.map((r) => [r.name, r.exitCode])).toEqual(slots.map((slot) => [slot.name, 0]));
    await expectDeliveredOnceAndKept(runs, acknowledgements);
  }, 240_000);

  it("restarts today's serves without HAProxy retrying a connection: server.shutdownDelay keeps them listening until it took them out", async () => {
    receiver.reset();
    const { load, acknowledgements } = startLoad('BK_RESTART');
    const restarts: Restart[] = [];
    try {
      await load.until('each flow to finish a run', () => load.done.every((runs) => runs.length >= 1), 60_000);
      for (const slot of slots.filter((s) => s.kind === 'serve')) restarts.push(await replace(slot));
      const restartedAt = performance.now();
      await load.until(
        'each flow to finish a run after the restarts',
        () => load.done.every((runs) => runs.some((run) => run.startedAt > restartedAt)),
        60_000,
      );
    } finally {
      await stopLoad(load, restarts);
    }
    report(load, restarts);

    expect(
      load.answers.filter((a) => a.status !== 200),
      serverEvents(),
    ).toEqual([]);
    expect(restarts.map((r) => [r.name, r.exitCode, r.haproxy])).toEqual(
      restarts.map((r) => [r.name, 0, { retries: 0, redispatches: 0, errors: 0 }]),
    );
    await expectDeliveredOnceAndKept(load.done.flat(), acknowledgements);
  }, 120_000);
});
