// Upgrading a database that commit 2efcf01 migrated and loaded (test/fixtures/ledger-at-2efcf01.sql, made by
// scripts/make-upgrade-fixture.ts with that commit's own code): today's migrate() applies the newer migrations
// without rewriting a table, and every run that was in flight goes on to its end through today's API and worker.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  migrate,
  readFunctionFiles,
  readMigrationFiles,
  readSchemaStatus,
  type MigrateResult,
  type SchemaStatus,
} from '../../src/db/migrate.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { createTestDatabase } from '../support/database.js';
import { CLAIM, CREATE_RUN, REPORT } from '../support/fixtures.js';
import { OBSERVATIONS, PUBLICATION, PUBLISH, READINESS, RECORD_OBSERVATION } from '../support/gate-fixtures.js';
import {
  RESEND_DISPATCH,
  RESOLVE_UNKNOWN,
  call,
  claimPartition,
  partitionId,
  publishRun,
  reportChunks,
  runState,
  succeed,
  validateDispatch,
  validateStaging,
  type StartedRun,
} from '../support/ledger-flow.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { readUpgradeFixture, restoreUpgradeFixture, type UpgradeFixture } from '../support/upgrade-fixture.js';
import { testWorker, workerConfig, type TestWorkerParts } from '../support/worker.js';

// The fixture's timestamps are as old as the fixture: the sweeper must not time its runs out while this
// test plays NiFi, so its thresholds are ten years.
const DECADE = 10 * 365 * 24 * 60 * 60 * 1000;

interface Relation {
  relname: string;
  relfilenode: string;
}

async function tablesOnDisk(url: string): Promise<Relation[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<Relation>(
      `SELECT c.relname, c.relfilenode::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'nifi_ops' AND c.relkind = 'r' ORDER BY c.relname`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

let fixture: UpgradeFixture;
let before: Relation[];
let recordedBefore: string[];
let statusBefore: SchemaStatus;
let migrated: MigrateResult;
let api: TestApi;
let receiver: Receiver;
let worker: TestWorkerParts;

beforeAll(async () => {
  fixture = await readUpgradeFixture();
  const database = await createTestDatabase({ empty: true });
  await restoreUpgradeFixture(database.url);
  before = await tablesOnDisk(database.url);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  recordedBefore = (await client.query<{ name: string }>('SELECT name FROM nifi_ops.lc_migration ORDER BY name')).rows.map((r) => r.name);
  await client.end();

  statusBefore = await readSchemaStatus(database.url);
  migrated = await migrate(database.url);

  const stale = { stale: DECADE, runTimeout: DECADE, validationStale: DECADE, publishStale: DECADE };
  api = await startTestApi({ recovery: stale }, { database });
  receiver = await startReceiver();
  worker = testWorker(api, workerConfig(api, receiver, { recovery: stale }));
});

afterAll(async () => {
  await worker?.close();
  await receiver?.close();
  await api?.close();
});

/** The receiver's one call for this dispatch after a dispatcher pass, as NiFi's PG-05 gets it. */
async function deliver(dispatchId: string) {
  await worker.dispatcher.dispatchOnce();
  const calls = receiver.callsFor(dispatchId);
  expect(calls).toHaveLength(1);
  return calls[0]!;
}

describe('a ledger of 2efcf01 upgraded', () => {
  it('had migrations 0001-0009 and gets every newer one and every function file, rewriting no table', async () => {
    const files = (await readMigrationFiles()).map((file) => file.name);
    const functionFiles = await readFunctionFiles();
    expect(recordedBefore).toEqual(files.filter((name) => name <= '0009_report_chunks_group_commit'));
    expect(migrated.applied).toEqual(files.filter((name) => !recordedBefore.includes(name)));
    expect(migrated.functionsApplied).toEqual(functionFiles.map((file) => file.name));
    expect(statusBefore).toEqual({
      pendingMigrations: migrated.applied,
      pendingFunctions: migrated.functionsApplied,
      unknownMigrations: [],
    });
    expect(await readSchemaStatus(api.database.url)).toEqual({ pendingMigrations: [], pendingFunctions: [], unknownMigrations: [] });
    expect((await api.sql.query('SELECT name FROM nifi_ops.lc_migration ORDER BY name')).rows.map((r) => r.name)).toEqual(files);
    expect((await api.sql.query('SELECT name, checksum FROM nifi_ops.lc_function_file ORDER BY name')).rows).toEqual(
      functionFiles.map((file) => ({ name: file.name, checksum: file.checksum })),
    );
    // A rewrite (ALTER COLUMN TYPE, a volatile default, VACUUM FULL, CLUSTER) gives the table a new file.
    const after = new Map((await tablesOnDisk(api.database.url)).map((r) => [r.relname, r.relfilenode]));
    for (const table of before)
      expect({ table: table.relname, file: after.get(table.relname) }).toEqual({ table: table.relname, file: table.relfilenode });
  });

  it('keeps every run where 2efcf01 left it through a sweeper cycle of the new code', async () => {
    expect(await worker.sweeper.cycle()).not.toBeNull();

    const statuses = await Promise.all(Object.values(fixture.runs).map(async ({ runId }) => (await runState(api.gql, runId)).status));
    expect(statuses).toEqual(['EXTRACTING', 'PUBLISH_UNKNOWN', 'EXTRACTED_VALIDATED', 'SUCCESS', 'FAILED_EXTRACT']);
    const extracting = await runState(api.gql, fixture.runs.extracting.runId);
    expect(extracting.partitions.map((p) => [p.partitionId, p.status])).toEqual([
      ['0000', 'SUCCESS'],
      ['0001', 'RUNNING'],
      ['0002', 'RUNNING'],
      ['0003', 'PENDING'],
      ['0004', 'PENDING'],
    ]);
  });

  it('finishes the EXTRACTING run with the claim tokens NiFi held, validates and publishes it, and the gate publishes its date', async () => {
    const { runId, partitionRows, running, businessKey } = fixture.runs.extracting;
    const run: StartedRun = { runId, hdfsRunPath: (await runState(api.gql, runId)).hdfsRunPath };
    const { consumer, externalJob, nextDate } = fixture.gate;
    expect(businessKey).toBe(nextDate);
    const notReady = await call(api.gql, READINESS, { consumer, businessDate: nextDate }, 'viewer');
    expect(notReady.jobs.map((j: { jobId: string; reason: string }) => [j.jobId, j.reason]).sort()).toEqual(
      [
        [fixture.jobKey, 'RUNNING'],
        [externalJob, 'RUNNING'],
      ].sort(),
    );

    // a token that is not the partition's owner is still refused
    const foreign = await api.gql(REPORT, {
      input: {
        runId,
        partitionId: '0001',
        claimToken: randomUUID(),
        chunkIndex: '2',
        chunkCount: '3',
        fragmentIdentifier: 'frag-0001',
        hdfsPath: `${run.hdfsRunPath}/part-0001-000002.parquet`,
        recordCount: '2',
        byteCount: '20',
      },
    });
    expect([foreign.status, foreign.code]).toEqual([409, 'CLAIM_MISMATCH']);

    for (const [partition, held] of Object.entries(running)) {
      const results = await reportChunks(api.gql, run, partition, held.claimToken, {
        from: held.chunksReported,
        to: held.chunkCount,
        chunkCount: held.chunkCount,
        rows: held.rowsPerChunk,
      });
      expect(results.at(-1)).toMatchObject({
        recorded: true,
        partitionStatus: 'SUCCESS',
        runStatus: 'EXTRACTING',
        receivedChunks: held.chunkCount,
      });
    }
    const pending = partitionRows.map((_, index) => partitionId(index)).filter((p) => p !== '0000' && !(p in running));
    expect(pending).toEqual(['0003', '0004']);
    const last = [];
    for (const partition of pending) {
      const token = await claimPartition(api.gql, runId, partition);
      last.push(
        ...(await reportChunks(api.gql, run, partition, token, { from: 0, to: 1, chunkCount: 1, rows: partitionRows[Number(partition)]! })),
      );
    }
    expect(last.map((r) => [r.partitionStatus, r.runStatus, r.validationScheduled])).toEqual([
      ['SUCCESS', 'EXTRACTING', false],
      ['SUCCESS', 'EXTRACTED_VALIDATED', true],
    ]);

    const rows = partitionRows.reduce((a, b) => a + b, 0);
    const dispatch = await validateDispatch(api.gql, runId);
    const received = await deliver(dispatch.dispatchId);
    expect([received.path, received.headers['x-run-id']]).toEqual([`/nifi-control/validate/${fixture.jobKey}`, runId]);
    await validateStaging(api.gql, runId, dispatch.dispatchId, rows);
    expect((await validateDispatch(api.gql, runId)).status).toBe('ACKED');
    expect(await publishRun(api.gql, runId, 'PUBLISHED')).toBe('PUBLISHED');
    expect(await succeed(api.gql, runId, rows)).toBe('SUCCESS');
    expect(await runState(api.gql, runId)).toMatchObject({
      status: 'SUCCESS',
      extractedCount: rows,
      stagingCount: rows,
      targetCount: rows,
    });

    await call(api.gql, RECORD_OBSERVATION, {
      input: {
        jobId: externalJob,
        businessDate: nextDate,
        attempt: 1,
        runId: `sap-${nextDate}`,
        state: 'SUCCEEDED',
        startedAt: `${nextDate}T22:00:00+00:00`,
      },
    });
    const published = await call(api.gql, PUBLISH, {
      input: { consumer, businessDate: nextDate, output: { rows, table: 'mart.inspection_daily' } },
    });
    expect(published.published).toBe(true);
    expect(published.publication.evidence.map((e: { jobId: string; runId: string }) => [e.jobId, e.runId]).sort()).toEqual(
      [
        [fixture.jobKey, runId],
        [externalJob, `sap-${nextDate}`],
      ].sort(),
    );
  });

  it('lets the operator resolve the PUBLISH_UNKNOWN run as published, and the run succeeds', async () => {
    const { runId, rows } = fixture.runs.publishUnknown;
    expect((await runState(api.gql, runId)).status).toBe('PUBLISH_UNKNOWN');

    const resolved = await call(
      api.gql,
      RESOLVE_UNKNOWN,
      {
        input: { runId, resolution: 'PUBLISHED', reason: 'the partition is in Hive with the expected row count' },
      },
      'operator',
    );

    expect(resolved).toEqual({ runStatus: 'PUBLISHED', changed: true });
    expect(await succeed(api.gql, runId, rows)).toBe('SUCCESS');
  });

  it('resends the DEAD dispatch, delivers it, and the run goes on to SUCCESS', async () => {
    const { runId, jobKey, dispatchId, rows } = fixture.runs.deadDispatch;
    expect(await validateDispatch(api.gql, runId)).toMatchObject({ dispatchId, status: 'DEAD', attemptCount: 2 });

    const resent = await call(api.gql, RESEND_DISPATCH, { input: { runId, dispatchId, reason: 'the receiver is back' } }, 'operator');
    expect(resent).toEqual({ dispatchId, status: 'PENDING' });
    const received = await deliver(dispatchId);

    expect(received.path).toBe(`/nifi-control/validate/${jobKey}`);
    expect((await validateDispatch(api.gql, runId)).status).toBe('SENT');
    await validateStaging(api.gql, runId, dispatchId, rows);
    expect(await publishRun(api.gql, runId, 'PUBLISHED')).toBe('PUBLISHED');
    expect(await succeed(api.gql, runId, rows)).toBe('SUCCESS');
  });

  it('still reads the gate publication 2efcf01 wrote, with its evidence, and refuses a different one', async () => {
    const { consumer, externalJob, publishedDate } = fixture.gate;

    const publication = await call(api.gql, PUBLICATION, { consumer, businessDate: publishedDate }, 'viewer');

    expect(publication).toMatchObject({ consumer, businessDate: publishedDate, output: { rows: 7, table: 'mart.inspection_daily' } });
    expect(
      publication.evidence.map((e: { jobId: string; attempt: number; runId: string }) => [e.jobId, e.attempt, e.runId]).sort(),
    ).toEqual(
      [
        [fixture.jobKey, 1, fixture.runs.success.runId],
        [externalJob, 1, `sap-${publishedDate}`],
      ].sort(),
    );
    const observations = await call(api.gql, OBSERVATIONS, { jobId: fixture.jobKey, businessDate: publishedDate }, 'viewer');
    expect(observations.map((o: { attempt: number; state: string; runId: string }) => [o.attempt, o.state, o.runId])).toEqual([
      [1, 'SUCCEEDED', fixture.runs.success.runId],
    ]);
    const again = await api.gql(PUBLISH, { input: { consumer, businessDate: publishedDate, output: { rows: 8 } } });
    expect([again.status, again.code]).toEqual([409, 'PUBLICATION_CONFLICT']);
  });

  it('keeps the finished runs finished: the failed business key takes a new run, the claim of a finished run is refused', async () => {
    const failed = await runState(api.gql, fixture.runs.failed.runId);
    expect(failed.status).toBe('FAILED_EXTRACT');

    const retry = await call(api.gql, CREATE_RUN, {
      input: {
        jobKey: fixture.jobKey,
        businessKey: failed.businessKey,
        hdfsRoot: '/data/nifi/stage',
        stageTablePrefix: 'TMP_UPGRADE_',
      },
    });
    expect(retry).toMatchObject({ status: 'CREATED', created: true });
    const lateClaim = await call(api.gql, CLAIM, {
      input: { runId: fixture.runs.success.runId, partitionId: '0000', claimToken: randomUUID(), workerNode: 'nifi-01' },
    });
    expect(lateClaim).toMatchObject({ claimed: false, runStatus: 'SUCCESS' });
  });
});
