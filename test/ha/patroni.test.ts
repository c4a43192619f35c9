// Load Control on the real HA stack (README "Failover"): three PostgreSQL 15 members under Patroni with etcd as the
// DCS and synchronous_mode, HAProxy routing to the leader by Patroni's REST /primary (deploy/ha/, started by
// test/support/ha-cluster.ts as `npm run ha:cluster` does). `serve` and `work` run as processes whose database URL
// names HAProxy; NiFi-like flows, a console page and a load balancer load them (test/support/nifi-load.ts) while
// each scenario happens: a planned switchover, a crash of the leader's postmaster, its rejoining as a replica, and
// etcd losing its quorum. Each ends with: only 200 and 503 answers, every acknowledged write in the database, every
// VALIDATE_RUN started exactly once by the receiver's startValidation (the compare-and-set NiFi's flow relies on),
// and the same serve and work processes throughout. Each prints its 503 window (first to last 503 a client saw).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { testConfig } from '../support/api.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { startHaCluster, type HaCluster } from '../support/ha-cluster.js';
import {
  type Acknowledged,
  expectAcknowledgedIn,
  type NifiLoad,
  readinessPoller,
  startNifiLoad,
  unexpectedAnswers,
  validateOnDelivery,
  type Validations,
} from '../support/nifi-load.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

const DATABASE = 'load_control';
const FLOWS = 4;
/** How soon a client sends a request again after a 503 (NiFi waits the Retry-After, 1 s; shorter here, to time the window). */
const RETRY_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Milliseconds since `start`, for the scenarios' timelines. */
const since = (start: number) => `${Math.round(performance.now() - start)} ms`;

let cluster: HaCluster;
let receiver: Receiver;
let validations: Validations;
let serve: CliProcess;
let work: CliProcess;
let apiUrl: string;
let pids: number[];

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether a member takes writes; undefined while it cannot be reached. */
async function writable(member: string): Promise<boolean | undefined> {
  return query<{ standby: boolean }>(cluster.memberUrl(member), 'SELECT pg_is_in_recovery() AS standby').then(
    ([row]) => !row!.standby,
    () => undefined,
  );
}

beforeAll(async () => {
  cluster = await startHaCluster();
  await query(cluster.url(), `CREATE DATABASE ${DATABASE}`);
  await migrate(cluster.url(DATABASE));
  receiver = await startReceiver();
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  validations = validateOnDelivery(receiver, apiUrl, RETRY_MS);
  serve = runCli(['serve'], {
    DATABASE_URL: cluster.url(DATABASE),
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
    LC_AUTH__TOKENS: JSON.stringify(testConfig().auth.tokens),
  });
  work = runCli(['work'], {
    DATABASE_URL: cluster.url(DATABASE),
    LC_NIFI__RECEIVER_URL: receiver.url,
    // a lease lost with the leader comes back soon; the dispatcher's fallback poll is short
    LC_NIFI__TIMEOUT_SECONDS: '2',
    LC_DISPATCH__LEASE: 'PT5S',
    LC_DISPATCH__POLL_INTERVAL: '0.5',
  });
  await until('serve to be ready', async () => (await fetch(`${apiUrl}/readyz`).catch(() => undefined))?.status === 200, 60_000);
  await until('work to start', () => work.output().includes('"worker_started"'), 60_000);
  pids = [serve.pid!, work.pid!];
});

afterAll(async () => {
  for (const child of [serve, work]) if (child && child.exitCode === null) child.kill('SIGKILL');
  await Promise.all([serve?.exited, work?.exited]);
  await receiver?.close();
  await cluster?.stop();
});

/** Every run, claim and file of `runs` is in the database at `url`, each run in `status`. */
async function expectAcknowledgedAt(url: string, runs: Acknowledged[], status: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await expectAcknowledgedIn(client, runs, status);
  } finally {
    await client.end();
  }
}

/**
 * Runs the load until each flow finished a run, then `act` (which returns when the cluster has recovered), then until
 * each flow finished a run begun after that; checks the answers, the processes and every acknowledged write, and
 * prints the 503 window. Returns the runs the flows finished.
 */
async function underLoad(scenario: string, act: (load: NifiLoad) => Promise<string>): Promise<Acknowledged[]> {
  const readiness: Array<{ at: number; status: number }> = [];
  const load = startNifiLoad(apiUrl, {
    businessKeyPrefix: `BK_${scenario.toUpperCase().replaceAll(' ', '_')}`,
    rows: [4, 4, 4],
    chunks: 2,
    flows: FLOWS,
    retryMs: RETRY_MS,
    watchers: [readinessPoller(apiUrl, readiness)],
  });
  const { answers, done } = load;
  let recoveredAt = 0;
  let what = '';
  try {
    await load.until('each flow to finish a run', () => done.every((runs) => runs.length >= 1), 60_000);
    what = await act(load);
    recoveredAt = performance.now();
    await load.until(
      'each flow to finish a run begun after the cluster recovered',
      () => done.every((runs) => runs.some((r) => r.startedAt > recoveredAt)),
      60_000,
    );
  } finally {
    await load.stop();
  }

  // never a 500, nor anything but 200 and 503
  expect(unexpectedAnswers(answers)).toEqual([]);
  const unavailable = answers.filter((a) => a.status === 503);
  const window = unavailable.length > 0 ? Math.round(unavailable.at(-1)!.at - unavailable[0]!.at) : 0;
  console.log(
    `ha: ${scenario} 503 window ${window} ms (${what}; ${unavailable.length} of ${answers.length} answers 503, ` +
      `${unavailable.filter((a) => a.query).length} of them queries; /readyz 503 ${readiness.filter((r) => r.status === 503).length} times)`,
  );
  // no restart: the same processes answered throughout
  expect([serve.pid, work.pid]).toEqual(pids);
  expect([serve.exitCode, serve.signalCode], serve.output().slice(-4000)).toEqual([null, null]);
  expect([work.exitCode, work.signalCode], work.output().slice(-4000)).toEqual([null, null]);

  // every run's VALIDATE_RUN reaches the receiver, whose startValidation starts each run once
  const runs = done.flat();
  const runIds = runs.map((run) => run.runId);
  await until(
    'every run to be validating',
    async () => {
      const rows = await query<{ n: number }>(
        cluster.url(DATABASE),
        `SELECT count(*)::int AS n FROM nifi_ops.load_run WHERE run_id = ANY($1::uuid[]) AND status = 'STAGE_VALIDATING'`,
        [runIds],
      ).catch(() => [{ n: -1 }]);
      return rows[0]!.n === runIds.length;
    },
    30_000,
  );
  await validations.settled();
  await expectAcknowledgedAt(cluster.url(DATABASE), runs, 'STAGE_VALIDATING');
  const dispatches = await query<{ run_id: string; dispatch_id: string; status: string; started: number }>(
    cluster.url(DATABASE),
    `SELECT d.run_id::text, d.dispatch_id::text, d.status,
            (SELECT count(*)::int FROM nifi_ops.load_event e
              WHERE e.run_id = d.run_id AND e.event_name = 'STAGE_VALIDATION_STARTED') AS started
       FROM nifi_ops.load_dispatch d
      WHERE d.run_id = ANY($1::uuid[]) AND d.dispatch_type = 'VALIDATE_RUN'`,
    [runIds],
  );
  expect(dispatches.map((d) => d.run_id).sort()).toEqual([...runIds].sort());
  for (const d of dispatches) {
    expect({ status: d.status, started: d.started, delivered: receiver.callsFor(d.dispatch_id).length > 0 }).toEqual({
      status: 'ACKED',
      started: 1,
      delivered: true,
    });
    // a startValidation whose answer was lost in the switch may have won unseen; none wins twice
    expect(validations.wins.get(d.dispatch_id) ?? 0).toBeLessThanOrEqual(1);
  }
  return runs;
}

describe('Load Control on Patroni, etcd and HAProxy under load', () => {
  it('a planned switchover (patronictl switchover) to the synchronous standby', async () => {
    const before = await cluster.healthy();
    const leader = before.find((m) => m.role === 'leader')!.name;
    const candidate = before.find((m) => m.role === 'sync_standby')!.name;
    await underLoad('switchover', async () => {
      const start = performance.now();
      const output = await cluster.patronictl('switchover', '--leader', leader, '--candidate', candidate, '--force');
      expect(output).toContain(`Successfully switched over to "${candidate}"`);
      const switched = since(start);
      await until(
        'HAProxy to lead to the new leader',
        async () => (await cluster.leader()) === candidate && (await writable(candidate)),
        60_000,
      );
      return `${leader} → ${candidate}: patronictl returned after ${switched}, ${candidate} took writes after ${since(start)}`;
    });
    expect(await cluster.leader()).toBe(candidate);
    await cluster.healthy();
  }, 150_000);

  let crashed: string;
  let failoverRuns: Acknowledged[] = [];

  it("an unplanned failover: the leader's postmaster killed (SIGKILL) with WAL its standbys never received", async () => {
    crashed = (await cluster.leader())!;
    const runs = await underLoad('failover', async () => {
      // for a second nothing reaches the standbys (a network hiccup): the leader writes on, its commits waiting for
      // the synchronous standby and so never answered, then dies — its WAL now goes further than any standby's
      cluster.pauseWalSenders(crashed);
      await sleep(1000);
      const start = performance.now();
      cluster.killPostmaster(crashed);
      const leader = await until(
        'another member to lead',
        async () => {
          const current = await cluster.leader();
          return current !== undefined && current !== crashed && (await writable(current)) && current;
        },
        60_000,
      );
      return `${crashed} killed, ${leader} took writes after ${since(start)}`;
    });
    failoverRuns = runs;
    expect(await cluster.leader()).not.toBe(crashed);
  }, 150_000);

  it('the crashed leader rejoining as a replica, with every acknowledged write', async () => {
    expect(crashed).toBeDefined();
    const runs = await underLoad('rejoin', async () => {
      const start = performance.now();
      await cluster.healthy();
      return `${crashed} streaming again after ${since(start)} more`;
    });
    const [member] = (await cluster.members()).filter((m) => m.name === crashed);
    expect(member?.role).toMatch(/^(replica|sync_standby)$/);
    expect(await writable(crashed)).toBe(false);
    // it replays everything the new leader has, the writes acknowledged before and after its return included
    const [{ lsn }] = (await query<{ lsn: string }>(cluster.url(), 'SELECT pg_current_wal_lsn()::text AS lsn')) as [{ lsn: string }];
    await until('the rejoined member to replay the leader’s WAL', async () => {
      const [row] = await query<{ replayed: boolean }>(
        cluster.memberUrl(crashed),
        'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS replayed',
        [lsn],
      );
      return row!.replayed;
    });
    await expectAcknowledgedAt(cluster.memberUrl(crashed, DATABASE), [...failoverRuns, ...runs], 'STAGE_VALIDATING');
    // its WAL had gone further than the new leader's: Patroni rewound it (use_pg_rewind) instead of copying it again
    const decisions = (await cluster.log(crashed)).split('\n').filter((line) => /rewind|Local timeline|primary_timeline/.test(line));
    expect(decisions).toEqual(
      expect.arrayContaining([expect.stringContaining('running pg_rewind from'), expect.stringContaining('pg_rewind exit code=0')]),
    );
  }, 150_000);

  it('etcd losing its quorum: the leader turns read-only, writes are answered 503; quorum restored, writes resume', async () => {
    const leader = (await cluster.leader())!;
    const [first, second] = cluster.etcdNames;
    await underLoad('quorum loss', async (load) => {
      const start = performance.now();
      await cluster.stopEtcd(first!, second!);
      // Patroni cannot renew the leader key: its leader demotes itself rather than risk a second primary
      await until('the leader to turn read-only', async () => (await writable(leader)) === false, 60_000);
      const demoted = since(start);
      const demotedAt = performance.now();
      expect(await Promise.all(cluster.memberNames.map(writable))).not.toContain(true);
      await load.until(
        'a write to be answered 503 while the cluster is read-only',
        () => load.answers.some((a) => a.at > demotedAt && a.status === 503 && !a.query),
        30_000,
      );
      const restarted = since(start);
      await cluster.startEtcd(first!, second!);
      const current = await until(
        'a member to lead again',
        async () => {
          const found = await cluster.leader();
          return found !== undefined && (await writable(found)) && found;
        },
        60_000,
      );
      return `2 of 3 etcd stopped; ${leader} read-only after ${demoted}, etcd restarted at ${restarted}, ${current} took writes at ${since(start)}`;
    });
    await cluster.healthy();
  }, 150_000);
});
