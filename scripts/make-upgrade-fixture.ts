// npx tsx scripts/make-upgrade-fixture.ts — writes test/fixtures/ledger-at-2efcf01.sql and .json.
//
// A ledger as commit 2efcf01 leaves it: that commit's own code (git archive into a temporary directory, its
// `npm run generate`) migrates a fresh database and runs as `serve` and `work` against a loopback receiver
// standing in for NiFi; GraphQL calls to it leave runs in flight (EXTRACTING with chunks and claims,
// PUBLISH_UNKNOWN, a DEAD dispatch), finished runs and a gate publication. pg_dump then keeps the schema
// nifi_ops as plain SQL; the .json holds what NiFi knows and the database does not name (which run is which).
// Needs git, pg_dump and a PostgreSQL server: DATABASE_URL, default postgresql://root@127.0.0.1:5432/postgres.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { graphqlCaller } from '../test/support/api.js';
import { freePort } from '../test/support/cli.js';
import { FAIL_RUN } from '../test/support/fixtures.js';
import { DEFINE_GATE, PUBLISH, RECORD_OBSERVATION } from '../test/support/gate-fixtures.js';
import {
  call,
  claimPartition,
  extractAll,
  partitionId,
  publishRun,
  reportChunks,
  runState,
  startRun,
  succeed,
  validateDispatch,
  validateStaging,
  type Gql,
} from '../test/support/ledger-flow.js';
import { RELEASE_2EFCF01, checkoutRelease, stopCli, type CliProcess } from '../test/support/old-release.js';
import { startReceiver, type Receiver } from '../test/support/receiver.js';
import { until } from '../test/support/until.js';
import { databaseUrl } from '../test/support/url.js';
import type { UpgradeFixture } from '../test/support/upgrade-fixture.js';

const COMMAND = 'npx tsx scripts/make-upgrade-fixture.ts';
const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));
const output = join(repositoryRoot, 'test/fixtures/ledger-at-2efcf01');
const exec = promisify(execFile);

const JOB = 'ORACLE_INSP_DTL_DAILY';
const DEAD_JOB = 'ORACLE_INSP_HDR_DAILY';
const EXTERNAL_JOB = 'sap_fi_daily';
const CONSUMER = 'daily_inspection_mart';
const PUBLISHED_DATE = '2026-11-26';
const NEXT_DATE = '2026-11-27';

/** The receiver's VALIDATE_RUN call for this run, as NiFi would take it from PG-05. */
const validateCallFor = (receiver: Receiver, runId: string) =>
  until(`the validate call of run ${runId}`, () => receiver.calls.find((c) => c.headers['x-run-id'] === runId), 20_000);

async function fillLedger(gql: Gql, receiver: Receiver): Promise<UpgradeFixture> {
  // The DEAD dispatch first, while it is the only call: the receiver answers 503 twice, dispatch.maxAttempts is 2.
  receiver.script(503, 503);
  const deadRun = await startRun(gql, DEAD_JOB, 'BK_RECEIVER_DOWN', [2, 3]);
  await extractAll(gql, deadRun, [2, 3]);
  await until('the dispatch to die', async () => (await validateDispatch(gql, deadRun.runId)).status === 'DEAD', 20_000);

  await call(gql, DEFINE_GATE, { input: { consumer: CONSUMER, requiredJobs: [EXTERNAL_JOB, JOB] } }, 'operator');
  const observe = (businessDate: string, state: string) =>
    call(gql, RECORD_OBSERVATION, {
      input: {
        jobId: EXTERNAL_JOB,
        businessDate,
        attempt: 1,
        runId: `sap-${businessDate}`,
        state,
        startedAt: `${businessDate}T22:00:00+00:00`,
      },
    });

  // SUCCESS for the published date; its observation and the external job's authorise the publication.
  const successCounts = [3, 4];
  const successRun = await startRun(gql, JOB, PUBLISHED_DATE, successCounts);
  await extractAll(gql, successRun, successCounts);
  await validateStaging(gql, successRun.runId, (await validateCallFor(receiver, successRun.runId)).headers['x-dispatch-id'] as string, 7);
  await publishRun(gql, successRun.runId, 'PUBLISHED');
  await succeed(gql, successRun.runId, 7);
  await observe(PUBLISHED_DATE, 'SUCCEEDED');
  const published = await call<{ published: boolean }>(gql, PUBLISH, {
    input: { consumer: CONSUMER, businessDate: PUBLISHED_DATE, output: { rows: 7, table: 'mart.inspection_daily' } },
  });
  if (!published.published) throw new Error('the gate publication was not written');

  // A failure: the extract query broke.
  const failedRun = await startRun(gql, JOB, 'BK_EXTRACT_FAILED', [5]);
  await call(gql, FAIL_RUN, {
    input: {
      runId: failedRun.runId,
      expectedStatus: 'EXTRACTING',
      failStatus: 'FAILED_EXTRACT',
      errorStage: 'EXTRACT',
      errorCode: 'ORA-01555',
      message: 'snapshot too old',
    },
  });

  // PUBLISH_UNKNOWN: Hive did not say whether the INSERT OVERWRITE happened.
  const unknownRun = await startRun(gql, JOB, 'BK_PUBLISH_UNKNOWN', [2, 2]);
  await extractAll(gql, unknownRun, [2, 2]);
  await validateStaging(gql, unknownRun.runId, (await validateCallFor(receiver, unknownRun.runId)).headers['x-dispatch-id'] as string, 4);
  const unknownStatus = await publishRun(gql, unknownRun.runId, 'PUBLISH_UNKNOWN');
  if (unknownStatus !== 'PUBLISH_UNKNOWN') throw new Error(`expected PUBLISH_UNKNOWN, got ${unknownStatus}`);

  // EXTRACTING for the next date, whose external attempt is still running: partition 0000 done, 0001 with
  // two of its three chunks, 0002 claimed without chunks, 0003 and 0004 nobody claimed yet.
  await observe(NEXT_DATE, 'RUNNING');
  const counts = [4, 6, 5, 3, 2];
  const extracting = await startRun(gql, JOB, NEXT_DATE, counts);
  const done = await claimPartition(gql, extracting.runId, partitionId(0));
  await reportChunks(gql, extracting, partitionId(0), done, { from: 0, to: 1, chunkCount: 1, rows: 4 });
  const twoOfThree = await claimPartition(gql, extracting.runId, partitionId(1));
  await reportChunks(gql, extracting, partitionId(1), twoOfThree, { from: 0, to: 2, chunkCount: 3, rows: 2 });
  const claimedOnly = await claimPartition(gql, extracting.runId, partitionId(2));

  return {
    commit: RELEASE_2EFCF01,
    jobKey: JOB,
    runs: {
      extracting: {
        runId: extracting.runId,
        businessKey: NEXT_DATE,
        partitionRows: counts,
        running: {
          [partitionId(1)]: { claimToken: twoOfThree, chunkCount: 3, chunksReported: 2, rowsPerChunk: 2 },
          [partitionId(2)]: { claimToken: claimedOnly, chunkCount: 1, chunksReported: 0, rowsPerChunk: 5 },
        },
      },
      publishUnknown: { runId: unknownRun.runId, rows: 4 },
      deadDispatch: {
        runId: deadRun.runId,
        jobKey: DEAD_JOB,
        dispatchId: (await validateDispatch(gql, deadRun.runId)).dispatchId,
        rows: 5,
      },
      success: { runId: successRun.runId },
      failed: { runId: failedRun.runId },
    },
    gate: { consumer: CONSUMER, externalJob: EXTERNAL_JOB, publishedDate: PUBLISHED_DATE, nextDate: NEXT_DATE },
  };
}

/** Each run's status, so that the fixture is checked before it is written. */
async function expectStatuses(gql: Gql, fixture: UpgradeFixture): Promise<void> {
  const expected: Record<keyof UpgradeFixture['runs'], string> = {
    extracting: 'EXTRACTING',
    publishUnknown: 'PUBLISH_UNKNOWN',
    deadDispatch: 'EXTRACTED_VALIDATED',
    success: 'SUCCESS',
    failed: 'FAILED_EXTRACT',
  };
  for (const [name, status] of Object.entries(expected)) {
    const actual = (await runState(gql, fixture.runs[name as keyof typeof expected].runId)).status;
    if (actual !== status) throw new Error(`run ${name} is ${actual}, expected ${status}`);
  }
}

async function main(): Promise<void> {
  const adminUrl = process.env.DATABASE_URL ?? 'postgresql://root@127.0.0.1:5432/postgres';
  const workDir = await mkdtemp(join(tmpdir(), 'lc-upgrade-fixture-'));
  const database = `lc_fixture_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const children: CliProcess[] = [];
  const receiver = await startReceiver();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)} TEMPLATE template0`);
    const url = databaseUrl(adminUrl, database);
    const port = await freePort();
    const release = await checkoutRelease(RELEASE_2EFCF01, join(workDir, 'release'), {
      server: { host: '127.0.0.1', port },
      database: { url },
      nifi: { receiverUrl: receiver.url, timeoutSeconds: 2 },
      dispatch: { maxAttempts: 2, backoffMin: 'PT1S', backoffMax: 'PT1S', pollInterval: 'PT1S' },
    });

    await release.run(['migrate']);
    const serve = release.start(['serve']);
    const work = release.start(['work']);
    children.push(serve, work);
    const api = `http://127.0.0.1:${port}`;
    await until(
      'the old API',
      () =>
        fetch(`${api}/readyz`).then(
          (r) => r.ok,
          () => false,
        ),
      60_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${serve.output()}`);
    });

    const gql = graphqlCaller(api);
    const fixture = await fillLedger(gql, receiver);
    await expectStatuses(gql, fixture);
    await Promise.all(children.map(stopCli));

    const { stdout: dump } = await exec('pg_dump', ['--inserts', '--no-owner', '--no-privileges', '--schema=nifi_ops', url], {
      maxBuffer: 256 * 1024 * 1024,
    });
    // psql meta-commands (pg_dump's \restrict guard) are not SQL: the test restores through the simple query protocol.
    const sql = dump
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n');
    const header = [
      `-- The ledger as commit ${RELEASE_2EFCF01.slice(0, 7)} left it, made by \`${COMMAND}\` (its migrate, serve and work,`,
      '-- driven through its GraphQL API). Do not edit: run the command again. Read by test/api/upgrade.test.ts.',
      '',
    ].join('\n');
    await mkdir(join(output, '..'), { recursive: true });
    await writeFile(`${output}.sql`, header + sql);
    await writeFile(`${output}.json`, `${JSON.stringify(fixture, null, 2)}\n`);
    console.log(`wrote ${output}.sql (${Math.round((header + sql).length / 1024)} KiB) and ${output}.json`);
  } catch (error) {
    for (const child of children) console.error(child.output());
    throw error;
  } finally {
    await Promise.all(children.map(stopCli));
    await receiver.close();
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(database)} WITH (FORCE)`);
    await admin.end();
    await rm(workDir, { recursive: true, force: true });
  }
}

await main();
