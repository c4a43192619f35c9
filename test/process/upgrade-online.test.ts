// An online upgrade: 2efcf01's own `serve` keeps answering NiFi on the ledger it made while today's migrate()
// runs, and afterwards, on the new schema and the new function files, until it is replaced.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, readSchemaStatus } from '../../src/db/migrate.js';
import { graphqlCaller } from '../support/api.js';
import { freePort } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import {
  RESOLVE_UNKNOWN,
  call,
  claimPartition,
  partitionId,
  reportChunks,
  runState,
  type Gql,
  type StartedRun,
} from '../support/ledger-flow.js';
import { RELEASE_2EFCF01, checkoutRelease, stopCli, type CliProcess } from '../support/old-release.js';
import { until } from '../support/until.js';
import { readUpgradeFixture, restoreUpgradeFixture, type UpgradeFixture } from '../support/upgrade-fixture.js';

let fixture: UpgradeFixture;
let database: TestDatabase;
let workDir: string;
let oldServe: CliProcess;
let oldApi: Gql;

beforeAll(async () => {
  fixture = await readUpgradeFixture();
  expect(fixture.commit).toBe(RELEASE_2EFCF01);
  database = await createTestDatabase({ empty: true });
  await restoreUpgradeFixture(database.url);
  workDir = await mkdtemp(join(tmpdir(), 'lc-upgrade-online-'));
  const port = await freePort();
  const release = await checkoutRelease(RELEASE_2EFCF01, join(workDir, 'release'), {
    server: { host: '127.0.0.1', port },
    database: { url: database.url },
  });
  oldServe = release.start(['serve']);
  const url = `http://127.0.0.1:${port}`;
  await until(
    '2efcf01 serve',
    () =>
      fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ),
    60_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${oldServe.output()}`);
  });
  oldApi = graphqlCaller(url);
});

afterAll(async () => {
  if (oldServe) await stopCli(oldServe);
  await database?.drop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('2efcf01 serving during and after the upgrade', () => {
  it('records chunk reports while migrate() runs, finishes the extraction and resolves PUBLISH_UNKNOWN on the migrated schema', async () => {
    const { runId, partitionRows, running } = fixture.runs.extracting;
    const run: StartedRun = { runId, hdfsRunPath: (await runState(oldApi, runId)).hdfsRunPath };
    const finish = (partition: string) => {
      const held = running[partition]!;
      return reportChunks(oldApi, run, partition, held.claimToken, {
        from: held.chunksReported,
        to: held.chunkCount,
        chunkCount: held.chunkCount,
        rows: held.rowsPerChunk,
      });
    };

    const [migrated, first, second] = await Promise.all([migrate(database.url), finish('0001'), finish('0002')]);

    expect(await readSchemaStatus(database.url)).toEqual({ pendingMigrations: [], pendingFunctions: [], unknownMigrations: [] });
    expect(migrated.functionsApplied.length).toBeGreaterThan(0);
    for (const results of [first, second])
      expect(results.at(-1)).toMatchObject({ recorded: true, partitionStatus: 'SUCCESS', runStatus: 'EXTRACTING' });

    const last = [];
    for (const index of [3, 4]) {
      const token = await claimPartition(oldApi, runId, partitionId(index));
      last.push(
        ...(await reportChunks(oldApi, run, partitionId(index), token, { from: 0, to: 1, chunkCount: 1, rows: partitionRows[index]! })),
      );
    }
    expect(last.map((r) => [r.partitionStatus, r.runStatus, r.validationScheduled])).toEqual([
      ['SUCCESS', 'EXTRACTING', false],
      ['SUCCESS', 'EXTRACTED_VALIDATED', true],
    ]);
    const state = await runState(oldApi, runId);
    expect(state).toMatchObject({ status: 'EXTRACTED_VALIDATED', extractedCount: partitionRows.reduce((a, b) => a + b, 0) });
    expect(state.dispatches.map((d) => [d.dispatchType, d.status])).toEqual([['VALIDATE_RUN', 'PENDING']]);

    const resolved = await call(
      oldApi,
      RESOLVE_UNKNOWN,
      {
        input: { runId: fixture.runs.publishUnknown.runId, resolution: 'FAILED_PUBLISH', reason: 'the partition is not in Hive' },
      },
      'operator',
    );
    expect(resolved).toEqual({ runStatus: 'FAILED_PUBLISH', changed: true });
  });
});
