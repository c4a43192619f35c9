// PgBouncer in transaction pooling mode (deploy/pgbouncer.example.ini) in front of the test PostgreSQL: two `serve`
// processes send the request path through it (database.url) with LISTEN and the schema check on database.directUrl,
// and `work` connects directly. A whole run goes through — manifest, claims, chunk reports on both APIs, the
// VALIDATE_RUN dispatch, validation, publish, success — and the ledger holds what the APIs answered.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testConfig } from '../support/api.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { JOB } from '../support/fixtures.js';
import { graphqlCaller } from '../support/api.js';
import {
  claimPartition,
  partitionId,
  publishRun,
  reportChunks,
  runState,
  startRun,
  succeed,
  validateDispatch,
  validateStaging,
} from '../support/ledger-flow.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

const ROWS = [6, 6, 6, 6];
const CHUNKS = 3;

let database: TestDatabase;
let bouncer: PgBouncer;
let receiver: Receiver;
const serves: Array<{ process: CliProcess; url: string }> = [];
let work: CliProcess;

beforeAll(async () => {
  database = await createTestDatabase();
  const direct = new URL(database.url);
  bouncer = await startPgBouncer({ host: direct.hostname, port: Number(direct.port || 5432) }, await freePort(), direct.username);
  receiver = await startReceiver();
  const pooled = bouncer.url(direct.username, database.name);
  // one after the other: two processes and their execution threads loading from the sources at once are slow
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const process = runCli(['serve'], {
      DATABASE_URL: pooled,
      LC_DATABASE__DIRECT_URL: database.url,
      PORT: String(port),
      LC_SERVER__HOST: '127.0.0.1',
      LC_AUTH__TOKENS: JSON.stringify(testConfig().auth.tokens),
    });
    const serve = { process, url: `http://127.0.0.1:${port}` };
    serves.push(serve);
    await until(
      'serve to be ready',
      async () => (await fetch(`${serve.url}/readyz`).catch(() => undefined))?.status === 200,
      150_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${serve.process.output().slice(-3000)}\n${bouncer.output()}`);
    });
  }
  work = runCli(['work'], {
    DATABASE_URL: pooled,
    LC_DATABASE__DIRECT_URL: database.url,
    LC_NIFI__RECEIVER_URL: receiver.url,
    LC_DISPATCH__POLL_INTERVAL: '0.5',
  });
  await until('work to start', () => work.output().includes('"worker_started"'), 150_000);
}, 330_000);

afterAll(async () => {
  for (const child of [...serves.map((s) => s.process), work]) if (child && child.exitCode === null) child.kill('SIGKILL');
  await Promise.all([...serves.map((s) => s.process.exited), work?.exited]);
  await receiver?.close();
  await bouncer?.close();
  await database?.drop();
});

describe('through PgBouncer in transaction pooling mode', () => {
  it('two serve processes drive a whole run, work delivers its dispatch, and the ledger holds every answer', async () => {
    const [a, b] = serves.map((serve) => graphqlCaller(serve.url)) as [ReturnType<typeof graphqlCaller>, ReturnType<typeof graphqlCaller>];
    const run = await startRun(a, JOB, 'BK_PGBOUNCER', ROWS);
    // the partitions alternate between the two APIs, each partition's chunks sent at once
    await Promise.all(
      ROWS.map(async (rows, index) => {
        const gql = index % 2 === 0 ? a : b;
        const token = await claimPartition(gql, run.runId, partitionId(index));
        await Promise.all(
          Array.from({ length: CHUNKS }, (_, chunk) =>
            reportChunks(gql, run, partitionId(index), token, { from: chunk, to: chunk + 1, chunkCount: CHUNKS, rows: rows / CHUNKS }),
          ),
        );
      }),
    );
    const dispatch = await validateDispatch(b, run.runId);
    const [call] = await receiver.waitForCalls(1, 30_000);
    expect(call!.headers['x-dispatch-id']).toBe(dispatch.dispatchId);
    const total = ROWS.reduce((x, y) => x + y, 0);
    await validateStaging(b, run.runId, dispatch.dispatchId, total);
    expect(await publishRun(a, run.runId, 'PUBLISHED')).toBe('PUBLISHED');
    expect(await succeed(b, run.runId, total)).toBe('SUCCESS');

    const state = await runState(a, run.runId);
    expect(state).toMatchObject({ status: 'SUCCESS', extractedCount: total, stagingCount: total, targetCount: total });
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    try {
      const files = await sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_file WHERE run_id = $1', [run.runId]);
      expect(files.rows[0].n).toBe(ROWS.length * CHUNKS);
    } finally {
      await sql.end();
    }
    // the request path went through PgBouncer: its transactions are counted there
    const admin = new pg.Client({ connectionString: bouncer.url(new URL(database.url).username, 'pgbouncer') });
    await admin.connect();
    try {
      const stats = await admin.query<{ database: string; total_xact_count: string }>('SHOW STATS');
      const ours = stats.rows.find((row) => row.database === database.name);
      expect(Number(ours?.total_xact_count ?? 0)).toBeGreaterThan(ROWS.length * CHUNKS);
    } finally {
      await admin.end();
    }
    for (const child of [...serves.map((s) => s.process), work]) expect([child.exitCode, child.signalCode]).toEqual([null, null]);
  }, 120_000);
});
