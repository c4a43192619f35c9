// A PostgreSQL failover under load (README "Failover"): a primary with a synchronous streaming standby, and `serve`
// and `work` as processes reaching the primary through a forwarder (test/support/tcp-proxy.ts, standing in for a
// virtual IP or HAProxy). Mid-load the primary dies (an immediate stop), the standby is promoted and the forwarder
// switched to it. Requests are answered 503 meanwhile, never 500; serve, with its execution thread, and work carry
// on without a restart; every write a client got a 200 for is in the promoted database, and every dispatch reaches
// the receiver. Then the old primary comes back as a standby of the new one: an API still pointed at it answers
// writes 503 (SQLSTATE 25006) and reads 200.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { startTestApi, testConfig, type TestApi } from '../support/api.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { CLAIM, CREATE_RUN, HDFS_ROOT, JOB, REPORT } from '../support/fixtures.js';
import { expectAcknowledgedIn, readinessPoller, startNifiLoad } from '../support/nifi-load.js';
import { createPgClusters, type PgCluster, type PgClusters } from '../support/pg-cluster.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';

const DATABASE = 'load_control';
/** NiFi's flows: each drives runs one after the other, each run three partitions of two chunks. */
const FLOWS = 4;
const SHAPE = { businessKeyPrefix: 'BK_FAILOVER', rows: [4, 4, 4], chunks: 2 };
/** How soon a client sends a request again after a 503 (NiFi waits the Retry-After, 1 s; shorter here, to time the window). */
const RETRY_MS = 100;

let clusters: PgClusters;
let primary: PgCluster;
let standby: PgCluster;
let forwarder: TcpProxy;
let receiver: Receiver;
let serve: CliProcess;
let work: CliProcess;
let apiUrl: string;
/** An API whose database URL names the primary itself, not the forwarder. */
let oldPrimaryApi: TestApi;

beforeAll(async () => {
  clusters = await createPgClusters();
  primary = await clusters.primary('primary', await freePort());
  const admin = new pg.Client({ connectionString: primary.url() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();
  await migrate(primary.url(DATABASE));
  standby = await clusters.synchronousStandby('standby', primary, await freePort());
  forwarder = await startTcpProxy('127.0.0.1', primary.port);
  receiver = await startReceiver();

  const viaForwarder = `postgresql://postgres@127.0.0.1:${forwarder.port}/${DATABASE}`;
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  serve = runCli(['serve'], {
    DATABASE_URL: viaForwarder,
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
    LC_AUTH__TOKENS: JSON.stringify(testConfig().auth.tokens),
  });
  work = runCli(['work'], {
    DATABASE_URL: viaForwarder,
    LC_NIFI__RECEIVER_URL: receiver.url,
    // a lease lost with the primary comes back soon; the dispatcher's fallback poll is short
    LC_NIFI__TIMEOUT_SECONDS: '2',
    LC_DISPATCH__LEASE: 'PT5S',
    LC_DISPATCH__POLL_INTERVAL: '0.5',
  });
  oldPrimaryApi = await startTestApi({}, { database: { name: DATABASE, url: primary.url(DATABASE), drop: async () => undefined } });
  await until('serve to be ready', async () => (await fetch(`${apiUrl}/readyz`).catch(() => undefined))?.status === 200, 60_000);
  await until('work to start', () => work.output().includes('"worker_started"'), 60_000);
});

afterAll(async () => {
  for (const child of [serve, work]) if (child && child.exitCode === null) child.kill('SIGKILL');
  await Promise.all([serve?.exited, work?.exited]);
  await oldPrimaryApi?.close();
  await receiver?.close();
  await forwarder?.close();
  await clusters?.close();
});

describe('a failover of PostgreSQL under load', () => {
  it('answers 503 and never 500 while the standby is promoted; serve and work go on; no acknowledged write or dispatch is lost', async () => {
    const readiness: Array<{ at: number; status: number }> = [];
    // a load balancer polling /readyz, all along, beside the flows and the console page
    const load = startNifiLoad(apiUrl, {
      ...SHAPE,
      flows: FLOWS,
      retryMs: RETRY_MS,
      watchers: [readinessPoller(apiUrl, readiness)],
    });
    const { answers, done } = load;
    let failedAt = 0;
    let promotedAt = 0;
    let switchedAt = 0;
    try {
      await load.until('each flow to finish two runs', () => done.every((runs) => runs.length >= 2), 60_000);
      failedAt = performance.now();
      await primary.stop('immediate');
      await standby.promote();
      promotedAt = performance.now();
      forwarder.retarget(standby.port);
      switchedAt = performance.now();
      await load.until(
        'each flow to finish two runs begun after the switch',
        () => done.every((runs) => runs.filter((run) => run.startedAt > switchedAt).length >= 2),
        60_000,
      );
    } finally {
      await load.stop();
    }

    // never a 500, nor anything but 200 and 503
    expect(answers.filter((a) => a.status !== 200 && !(a.status === 503 && a.code === 'SERVICE_UNAVAILABLE'))).toEqual([]);
    const unavailable = answers.filter((a) => a.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    // the window the clients saw: from the first 503 to the first 200 after the last one
    const since = (at: number) => `+${Math.round(at - failedAt)} ms`;
    const last503 = unavailable.at(-1)!.at;
    const firstAfter = answers.find((a) => a.at > last503 && a.status === 200);
    const readyAgain = readiness.find((r) => r.at > switchedAt && r.status === 200);
    console.log(
      `[failover] primary stopped and standby promoted by ${since(promotedAt)}, forwarder switched at ${since(switchedAt)}; ` +
        `503 from ${since(unavailable[0]!.at)} to ${since(last503)} (${unavailable.length} answers, ` +
        `${unavailable.filter((a) => a.query).length} of them queries on the execution thread), the next 200 at ` +
        `${firstAfter ? since(firstAfter.at) : '?'}; /readyz 200 again at ${readyAgain ? since(readyAgain.at) : '?'}; ` +
        `${answers.length} answers in all`,
    );
    // no restart: the same processes answered throughout
    expect([serve.exitCode, serve.signalCode, work.exitCode, work.signalCode]).toEqual([null, null, null, null]);
    expect(readyAgain).toBeDefined();

    // every acknowledged write is in the promoted database
    const promoted = new pg.Client({ connectionString: standby.url(DATABASE) });
    await promoted.connect();
    try {
      const runs = done.flat();
      await expectAcknowledgedIn(promoted, runs, 'EXTRACTED_VALIDATED');

      // every dispatch, before the failover and after it, reaches NiFi through the same worker
      const dispatches = await promoted.query<{ dispatch_id: string }>(
        `SELECT dispatch_id::text FROM nifi_ops.load_dispatch WHERE dispatch_type = 'VALIDATE_RUN'`,
      );
      expect(dispatches.rows.length).toBe(runs.length);
      await until(
        'every dispatch to be delivered',
        () => dispatches.rows.every((d) => receiver.callsFor(d.dispatch_id).length > 0),
        30_000,
      );
    } finally {
      await promoted.end();
    }
  }, 120_000);

  it('answers writes 503 and reads 200 through an API still pointed at the old primary, once it is a standby', async () => {
    await clusters.rewindAsStandby(primary, standby);
    const direct = new pg.Client({ connectionString: primary.url(DATABASE) });
    await direct.connect();
    try {
      expect((await direct.query('SELECT pg_is_in_recovery() AS standby')).rows[0].standby).toBe(true);
      const write = await direct.query('CREATE TABLE nifi_ops.never_written (id int)').catch((error) => error);
      expect(write.code).toBe('25006');
    } finally {
      await direct.end();
    }
    const viewer = { token: 'viewer' as const };
    const read = await until('the API to read from the old primary', async () => {
      const res = await oldPrimaryApi.gql('{ runs(first: 1) { nodes { runId status } } }', {}, viewer);
      return res.status === 200 ? res : null;
    });
    const { runId, status } = read.body.data!.runs.nodes[0] as { runId: string; status: string };
    const writes = await Promise.all([
      oldPrimaryApi.gql(CREATE_RUN, {
        input: { jobKey: JOB, businessKey: 'BK_ON_A_STANDBY', hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_', idempotencyKey: randomUUID() },
      }),
      oldPrimaryApi.gql(CLAIM, { input: { runId, partitionId: '0000', claimToken: randomUUID(), workerNode: 'nifi-01' } }),
      oldPrimaryApi.gql(REPORT, {
        input: {
          runId,
          partitionId: '0000',
          claimToken: randomUUID(),
          chunkIndex: '0',
          chunkCount: '1',
          fragmentIdentifier: 'frag',
          recordCount: '1',
          byteCount: '1',
          hdfsPath: `${HDFS_ROOT}/on-a-standby.parquet`,
        },
      }),
    ]);
    for (const res of writes) expect([res.status, res.code, res.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
    const again = await oldPrimaryApi.gql('query($runId: UUID!) { run(runId: $runId) { status } }', { runId }, viewer);
    expect([again.status, again.body.data]).toEqual([200, { run: { status } }]);
    expect((await fetch(`${oldPrimaryApi.url}/readyz`)).status).toBe(503);
  });
});
