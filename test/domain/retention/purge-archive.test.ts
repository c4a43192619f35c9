// Export before purge (src/domain/retention/purge-archive.ts): each batch writes exactly the rows it deletes, with
// counts and checksums, before its delete commits; a failed export deletes nothing; a corrupt archive is refused;
// the import reads an archive back into a schema of its own, one copy per row. Killing a purge mid-way is
// test/process/retention/purge-export.test.ts.
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { detailRows, endedDaysAgo, purgeOnce } from '../../support/purge-fixtures.js';
import { sized } from '../../support/test-size.js';
import { createDb } from '../../../src/db/client.js';
import { perform } from '../../../src/db/operation.js';
import { recordCleanupOperation } from '../../../src/domain/cleanup/record-cleanup.js';
import { importArchives } from '../../../src/domain/retention/import-archive.js';
import { PURGED_TABLES } from '../../../src/domain/retention/purge.js';
import {
  ARCHIVED_TABLES,
  CorruptArchiveError,
  openPurgeArchive,
  readArchivedRows,
  verifyArchive,
  type VerifiedArchive,
} from '../../../src/domain/retention/purge-archive.js';
import { ACTOR, type DomainTest, publishedRun, startDomainTest, succeeded } from '../support/fixtures.js';

/** Rounds of the race between two exporting purgers (nightly: more). */
const EXPORT_RACES = sized(5, 40);

let t: DomainTest;
beforeEach(async () => {
  t = await startDomainTest();
});
afterEach(async () => t?.close());

const scratch = mkdtempSync(join(tmpdir(), 'lc-purge-archive-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const exportDir = () => join(scratch, `export-${++dirs}`);

/** A SUCCESS run cleaned up and ended 100 days ago: partitions, files, validations, a dispatch and events. */
async function dueRun() {
  const run = await publishedRun(t, [3, 4]);
  await succeeded(t, run.runId);
  await endedDaysAgo(t, run.runId, 100);
  const cleaned = await perform(t.db, recordCleanupOperation, {
    runId: run.runId,
    droppedTable: null,
    deletedPath: null,
    retention: t.config.cleanup,
    actor: ACTOR,
  });
  expect(cleaned.changed).toBe(true);
  return run;
}

/** Each purged table's rows of these runs, as PostgreSQL's to_jsonb sees them, in a stable order. */
async function ledgerRows(runIds: string[]): Promise<Record<string, unknown[]>> {
  const rows: Record<string, unknown[]> = {};
  for (const table of PURGED_TABLES) {
    const result = await t.sql.query(
      `SELECT to_jsonb(t) AS row FROM nifi_ops.${table} t WHERE run_id = ANY($1::uuid[]) ORDER BY to_jsonb(t)::text`,
      [runIds],
    );
    rows[table] = result.rows.map((r) => r.row);
  }
  return rows;
}

/** Every row an archive holds, per table, in the same order. */
async function archivedRows(archive: VerifiedArchive): Promise<Record<string, unknown[]>> {
  const rows: Record<string, unknown[]> = Object.fromEntries(ARCHIVED_TABLES.map((table) => [table, []]));
  for (const { dir, manifest } of archive.batches) {
    for (const table of ARCHIVED_TABLES)
      rows[table]!.push(...(await readArchivedRows(dir, manifest.tables[table])).map((l) => JSON.parse(l)));
  }
  for (const table of ARCHIVED_TABLES) rows[table]!.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  return rows;
}

const sortedRows = (rows: unknown[]) => [...rows].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

describe('purge with an archive', () => {
  it('writes exactly the rows each batch deletes, with counts, sizes and checksums, and each run’s summary once', async () => {
    const runs = [await dueRun(), await dueRun(), await dueRun()];
    const runIds = runs.map((r) => r.runId);
    const before = await ledgerRows(runIds);
    const { rows: summaries } = await t.sql.query('SELECT to_jsonb(r) AS row FROM nifi_ops.load_run r WHERE run_id = ANY($1::uuid[])', [
      runIds,
    ]);

    const archive = openPurgeArchive(exportDir(), new Date(Date.now() - 90 * 86_400_000));
    // small batches: a run takes several, so its summary must not repeat
    const summary = await purgeOnce(t.db, { batchRows: 7, archive });
    const written = await archive.finish(summary.complete);
    expect(summary.purgedRuns).toHaveLength(3);
    expect(summary.batches).toBeGreaterThan(3);
    for (const runId of runIds) expect(Object.values(await detailRows(t, runId)).every((n) => n === 0)).toBe(true);

    const verified = await verifyArchive(written!.dir);
    expect(verified.batches).toHaveLength(summary.batches);
    expect(verified.manifest).toMatchObject({ deleted: summary.deleted, complete: true, copied: { load_run: 3 } });
    const archived = await archivedRows(verified);
    for (const table of PURGED_TABLES) {
      expect(archived[table]!.length, table).toBe(summary.deleted[table]);
      expect(archived[table], table).toEqual(before[table]);
    }
    expect(PURGED_TABLES.every((table) => summary.deleted[table] > 0)).toBe(true);
    // the summary as it was before the purge stamped purged_at
    expect(archived.load_run).toEqual(sortedRows(summaries.map((s) => s.row)));
    expect(archive.bytesWritten()).toBeGreaterThan(0);
  });

  it('deletes nothing when the export cannot be written: the delete waits for the files', async () => {
    const run = await dueRun();
    const rows = await detailRows(t, run.runId);
    const blocked = join(scratch, `a-file-${++dirs}`);
    writeFileSync(blocked, 'not a directory');
    const archive = openPurgeArchive(join(blocked, 'export'), new Date(Date.now() - 90 * 86_400_000));
    await expect(purgeOnce(t.db, { archive })).rejects.toThrow(/ENOTDIR/);
    expect(await detailRows(t, run.runId)).toEqual(rows);
  });
});

describe('two purgers exporting at once', () => {
  it('put every deleted row in exactly one archive, and in each archive the summary of each run it holds, once', async () => {
    // the batch sleeps between its export and its commit, holding its run: the other purger meets it there
    await t.sql.query(`ALTER DATABASE ${t.database.name} SET load_control.fault_points = 'purge_export_before_commit=0.05'`);
    const workers = [createDb(t.database.url, { poolSize: 2 }), createDb(t.database.url, { poolSize: 2 })];
    try {
      for (let rep = 0; rep < EXPORT_RACES; rep++) {
        const runs = [await dueRun(), await dueRun(), await dueRun()];
        const runIds = runs.map((r) => r.runId);
        const before = await ledgerRows(runIds);
        const archives = workers.map(() => openPurgeArchive(exportDir(), new Date(Date.now() - 90 * 86_400_000)));
        const summaries = await Promise.all(workers.map((db, i) => purgeOnce(db, { batchRows: 10, archive: archives[i] })));
        const written = await Promise.all(archives.map((a, i) => a.finish(summaries[i]!.complete)));
        const rows: Record<string, unknown[]> = Object.fromEntries(ARCHIVED_TABLES.map((table) => [table, []]));
        for (const w of written) {
          if (!w) continue;
          const archived = await archivedRows(await verifyArchive(w.dir));
          for (const table of ARCHIVED_TABLES) rows[table]!.push(...archived[table]!);
          // an archive answers for itself: the summary of every run it holds rows of, once
          const held = new Set(PURGED_TABLES.flatMap((table) => (archived[table] as Array<{ run_id: string }>).map((r) => r.run_id)));
          const summaries = (archived.load_run as Array<{ run_id: string }>).map((r) => r.run_id).sort();
          expect(summaries, `round ${rep}`).toEqual([...held].sort());
        }
        for (const table of PURGED_TABLES) expect(sortedRows(rows[table]!), `${table}, round ${rep}`).toEqual(before[table]);
      }
    } finally {
      await Promise.all(workers.map((db) => db.close()));
    }
  }, 120_000);
});

describe('verifyArchive', () => {
  async function archiveOfTwoRuns(): Promise<string> {
    await dueRun();
    await dueRun();
    const archive = openPurgeArchive(exportDir(), new Date(Date.now() - 90 * 86_400_000));
    const summary = await purgeOnce(t.db, { batchRows: 20, archive });
    return (await archive.finish(summary.complete))!.dir;
  }

  it('refuses a changed file, a changed batch manifest, a missing batch and a file that is no gzip, naming the file', async () => {
    const dir = await archiveOfTwoRuns();
    await expect(verifyArchive(dir)).resolves.toMatchObject({ batches: expect.any(Array) });
    const corrupt = (name: string, damage: (copy: string) => void) => {
      const copy = join(scratch, `corrupt-${name}-${++dirs}`);
      cpSync(dir, copy, { recursive: true });
      damage(copy);
      return copy;
    };
    const flipped = corrupt('flip', (copy) => {
      const path = join(copy, 'batch-000001', 'load_file.jsonl.gz');
      const data = readFileSync(path);
      data[data.length - 5] = data[data.length - 5]! ^ 0xff;
      writeFileSync(path, data);
    });
    await expect(verifyArchive(flipped)).rejects.toThrow(/batch-000001\/load_file\.jsonl\.gz: checksum mismatch/);

    const recounted = corrupt('count', (copy) => {
      const path = join(copy, 'batch-000002', 'manifest.json');
      const manifest = JSON.parse(readFileSync(path, 'utf8'));
      manifest.tables.load_event.rows += 1;
      writeFileSync(path, JSON.stringify(manifest));
    });
    await expect(verifyArchive(recounted)).rejects.toThrow(/batch-000002\/manifest\.json: checksum mismatch with manifest\.json/);

    const missing = corrupt('missing', (copy) => rmSync(join(copy, 'batch-000002'), { recursive: true }));
    await expect(verifyArchive(missing)).rejects.toThrow(/batch-000002 listed in manifest\.json but missing/);

    // without the top manifest (an interrupted purge) each batch still answers for its files
    const unzipped = corrupt('gzip', (copy) => {
      rmSync(join(copy, 'manifest.json'));
      const batch = join(copy, 'batch-000001');
      const manifest = JSON.parse(readFileSync(join(batch, 'manifest.json'), 'utf8'));
      const plain = Buffer.from('{"a":1}\n');
      writeFileSync(join(batch, 'load_event.jsonl.gz'), plain);
      manifest.tables.load_event = {
        ...manifest.tables.load_event,
        bytes: plain.length,
        sha256: createHash('sha256').update(plain).digest('hex'),
      };
      writeFileSync(join(batch, 'manifest.json'), JSON.stringify(manifest));
    });
    await expect(verifyArchive(unzipped)).rejects.toThrow(CorruptArchiveError);
    await expect(verifyArchive(unzipped)).rejects.toThrow(/load_event\.jsonl\.gz: is not gzip/);
  });
});

describe('importArchives', () => {
  it('reads an archive back into a schema of its own, row for row, and keeps one copy of a row imported twice', async () => {
    const runs = [await dueRun(), await dueRun()];
    const before = await ledgerRows(runs.map((r) => r.runId));
    const archive = openPurgeArchive(exportDir(), new Date(Date.now() - 90 * 86_400_000));
    const summary = await purgeOnce(t.db, { batchRows: 9, archive });
    const verified = await verifyArchive((await archive.finish(summary.complete))!.dir);

    const client = new pg.Client({ connectionString: t.database.url });
    await client.connect();
    try {
      const first = await importArchives(client, 'audit', [verified]);
      for (const table of PURGED_TABLES) expect(first[table]).toEqual({ read: summary.deleted[table], imported: summary.deleted[table] });
      expect(first.load_run).toEqual({ read: 2, imported: 2 });
      for (const table of PURGED_TABLES) {
        const { rows } = await client.query(`SELECT to_jsonb(t) AS row FROM audit.${table} t ORDER BY to_jsonb(t)::text`);
        expect(
          rows.map((r) => r.row),
          table,
        ).toEqual(before[table]);
      }
      const again = await importArchives(client, 'audit', [verified]);
      for (const table of PURGED_TABLES) expect(again[table]).toEqual({ read: summary.deleted[table], imported: 0 });
      const { rows: batches } = await client.query('SELECT batch, archive_complete FROM audit.archive_batch ORDER BY batch');
      expect(batches).toHaveLength(summary.batches);
      expect(batches.every((b) => b.archive_complete)).toBe(true);

      await expect(importArchives(client, 'nifi_ops', [verified])).rejects.toThrow(/--schema/);
      await expect(importArchives(client, 'Audit; DROP', [verified])).rejects.toThrow(/--schema/);
    } finally {
      await client.end();
    }
  });
});
