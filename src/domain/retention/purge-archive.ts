// Export before purge (config retention.exportDir, `load-control purge --export DIR`): every batch of a purge first
// writes the rows it deletes — and, once per run, the rows an audit of that run needs that are never purged (its
// load_run summary, its publish-claim evidence, the publications citing it) — as gzip-compressed JSON Lines with a
// manifest of row counts and SHA-256 checksums, fsyncs files and directories, and only then commits its delete.
// `load-control import-archive` verifies an archive and reads it back into a schema of its own.
//
// DIR/purge-<time>-<random>/                   one archive per purge (per sweeper cycle that deletes something)
//   batch-000001/<table>.jsonl.gz             a line per row: to_jsonb of the row, as PostgreSQL wrote it
//   batch-000001/manifest.json                cutoff, time, release, runs, and per table rows, bytes, sha256
//   manifest.json                             written last: the batches with their manifests' sha256, totals
//
// A batch's files are durable before its delete commits: a purge killed anywhere leaves every deleted row in an
// archive. Killed between the fsync and the commit, a batch's rows are both archived and still in the ledger; the
// next purge archives them again, and the import keeps one copy of each row (by primary key). An archive without its
// top manifest.json is one whose purge did not finish; its batches are still whole and verifiable.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { Tx } from '../../db/client.js';
import { Prisma } from '../../generated/prisma/client.js';
import { PURGED_TABLES, type RowCounts } from './purge.js';

const RELEASE = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const ARCHIVE_FORMAT = 'load-control-purge-archive/1';

/** Tables never purged whose rows an audit of a purged run needs: copied into the archive, once per run. */
const COPIED_TABLES = ['load_run', 'gate_publish_claim_evidence', 'gate_publication', 'gate_publication_evidence'] as const;
export const ARCHIVED_TABLES = [...PURGED_TABLES, ...COPIED_TABLES] as const;
export type ArchivedTable = (typeof ARCHIVED_TABLES)[number];
type ArchiveRows = Record<ArchivedTable, string[]>;

interface ArchivedFile {
  file: string;
  rows: number;
  bytes: number;
  sha256: string;
}

interface BatchManifest {
  format: typeof ARCHIVE_FORMAT;
  batch: number;
  cutoff: string;
  exportedAt: string;
  release: string;
  runIds: string[];
  tables: Record<ArchivedTable, ArchivedFile>;
}

interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  cutoff: string;
  startedAt: string;
  finishedAt: string;
  release: string;
  batches: Array<{ batch: number; manifest: string; sha256: string }>;
  /** Rows deleted from the ledger, per purged table. */
  deleted: RowCounts;
  /** Rows copied, per table that is never purged. */
  copied: Record<(typeof COPIED_TABLES)[number], number>;
  /** The purge found nothing more due (false: its time budget ran out first, or other purgers held runs). */
  complete: boolean;
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const batchName = (batch: number) => `batch-${String(batch).padStart(6, '0')}`;
const gzipped = promisify(gzip);
const gunzipped = promisify(gunzip);

/** Writes a file and fsyncs it before it is closed. */
async function writeDurably(path: string, data: Buffer | string): Promise<void> {
  const file = await open(path, 'w');
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** fsync of a directory: its entries (the files and directories just made in it) survive a crash. */
async function syncDirectory(path: string): Promise<void> {
  const dir = await open(path, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** What purgeNextBatch hands over before it commits: the batch's run and its deleted rows (to_jsonb text), per table. */
interface ExportedBatch {
  batch: number;
  runId: string;
  deleted: Record<(typeof PURGED_TABLES)[number], string[]>;
}

export interface PurgeArchive {
  /** In the batch's transaction, before its commit: writes and fsyncs the batch. A retried transaction rewrites it. */
  exportBatch(tx: Tx, batch: ExportedBatch): Promise<void>;
  /** After the last batch: the top manifest; null (and no directory) when nothing was purged. */
  finish(complete: boolean): Promise<{ dir: string; manifest: ArchiveManifest } | null>;
  /** Bytes written so far (compressed files and manifests). */
  bytesWritten(): number;
}

/** The rows of a run that are never purged, as to_jsonb text: what an audit of the run needs besides its details. */
async function copiedRows(tx: Tx, runId: string): Promise<Record<(typeof COPIED_TABLES)[number], string[]>> {
  const rows = (query: Prisma.Sql) => tx.$queryRaw<Array<{ row: string }>>(query).then((r) => r.map((x) => x.row));
  return {
    load_run: await rows(Prisma.sql`SELECT to_jsonb(t)::text AS row FROM nifi_ops.load_run t WHERE t.run_id = ${runId}::uuid`),
    gate_publish_claim_evidence: await rows(
      Prisma.sql`SELECT to_jsonb(t)::text AS row FROM nifi_ops.gate_publish_claim_evidence t WHERE t.run_id = ${runId}::uuid ORDER BY t.job_id`,
    ),
    gate_publication: await rows(Prisma.sql`
      SELECT to_jsonb(t)::text AS row FROM nifi_ops.gate_publication t
       WHERE (t.consumer, t.business_date) IN (SELECT e.consumer, e.business_date FROM nifi_ops.gate_publication_evidence e
                                                 WHERE e.run_id = ${runId})
       ORDER BY t.consumer, t.business_date`),
    gate_publication_evidence: await rows(Prisma.sql`
      SELECT to_jsonb(t)::text AS row FROM nifi_ops.gate_publication_evidence t
       WHERE t.run_id = ${runId} ORDER BY t.consumer, t.business_date, t.job_id`),
  };
}

/** A new archive under exportDir for one purge before `cutoff`; its directory is made with its first batch. */
export function openPurgeArchive(exportDir: string, cutoff: Date): PurgeArchive {
  const startedAt = new Date();
  const dir = join(exportDir, `purge-${startedAt.toISOString().replace(/[:.]/g, '')}-${randomBytes(4).toString('hex')}`);
  const batches = new Map<number, { manifest: string; sha256: string; holdsRowsOf: string[]; tables: BatchManifest['tables'] }>();
  let bytes = 0;

  return {
    async exportBatch(tx, { batch, runId, deleted }) {
      if (batches.size === 0) {
        await mkdir(exportDir, { recursive: true });
        await mkdir(dir, { recursive: true });
        await syncDirectory(exportDir);
      }
      // a run's summary and evidence go with the first batch of the run this archive holds rows of
      const holdsRows = PURGED_TABLES.some((table) => deleted[table].length > 0);
      const copied = !holdsRows || [...batches.entries()].some(([n, b]) => n !== batch && b.holdsRowsOf.includes(runId));
      const rows: ArchiveRows = {
        ...deleted,
        ...(copied ? Object.fromEntries(COPIED_TABLES.map((t) => [t, []])) : await copiedRows(tx, runId)),
      } as ArchiveRows;
      const batchDir = join(dir, batchName(batch));
      await mkdir(batchDir, { recursive: true });
      const tables = {} as BatchManifest['tables'];
      for (const table of ARCHIVED_TABLES) {
        const lines = rows[table];
        const data = await gzipped(Buffer.from(lines.map((line) => `${line}\n`).join(''), 'utf8'));
        const file = `${table}.jsonl.gz`;
        await writeDurably(join(batchDir, file), data);
        tables[table] = { file, rows: lines.length, bytes: data.length, sha256: sha256(data) };
        bytes += data.length;
      }
      const manifest: BatchManifest = {
        format: ARCHIVE_FORMAT,
        batch,
        cutoff: cutoff.toISOString(),
        exportedAt: new Date().toISOString(),
        release: RELEASE,
        runIds: [runId],
        tables,
      };
      const text = `${JSON.stringify(manifest, null, 2)}\n`;
      await writeDurably(join(batchDir, 'manifest.json'), text);
      await syncDirectory(batchDir);
      await syncDirectory(dir);
      bytes += Buffer.byteLength(text);
      batches.set(batch, {
        manifest: `${batchName(batch)}/manifest.json`,
        sha256: sha256(Buffer.from(text)),
        holdsRowsOf: holdsRows ? [runId] : [],
        tables,
      });
    },

    async finish(complete) {
      if (batches.size === 0) return null;
      const deleted = Object.fromEntries(PURGED_TABLES.map((t) => [t, 0])) as RowCounts;
      const copied = Object.fromEntries(COPIED_TABLES.map((t) => [t, 0])) as ArchiveManifest['copied'];
      for (const b of batches.values()) {
        for (const t of PURGED_TABLES) deleted[t] += b.tables[t].rows;
        for (const t of COPIED_TABLES) copied[t] += b.tables[t].rows;
      }
      const manifest: ArchiveManifest = {
        format: ARCHIVE_FORMAT,
        cutoff: cutoff.toISOString(),
        startedAt: startedAt.toISOString(),
        finishedAt: new Date().toISOString(),
        release: RELEASE,
        batches: [...batches.entries()].sort(([a], [b]) => a - b).map(([batch, b]) => ({ batch, manifest: b.manifest, sha256: b.sha256 })),
        deleted,
        copied,
        complete,
      };
      const text = `${JSON.stringify(manifest, null, 2)}\n`;
      await writeDurably(join(dir, 'manifest.json'), text);
      await syncDirectory(dir);
      bytes += Buffer.byteLength(text);
      return { dir, manifest };
    },

    bytesWritten: () => bytes,
  };
}

// ---- reading an archive back ----

/** An archive that does not verify: a missing or changed file, a wrong count, a line that is no JSON object. */
export class CorruptArchiveError extends Error {}

interface VerifiedBatch {
  dir: string;
  manifest: BatchManifest;
}

export interface VerifiedArchive {
  dir: string;
  /** Null when the purge did not finish (no top manifest): its batches verified on their own. */
  manifest: ArchiveManifest | null;
  batches: VerifiedBatch[];
}

async function readJson<T>(path: string): Promise<{ value: T; data: Buffer }> {
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (error) {
    throw new CorruptArchiveError(`${path}: cannot be read: ${(error as Error).message}`);
  }
  try {
    return { value: JSON.parse(data.toString('utf8')) as T, data };
  } catch {
    throw new CorruptArchiveError(`${path}: is not JSON`);
  }
}

/** One table's file of a batch, checked against its manifest entry: size, SHA-256, gzip, and one JSON object a line. */
export async function readArchivedRows(batchDir: string, entry: ArchivedFile): Promise<string[]> {
  const path = join(batchDir, entry.file);
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (error) {
    throw new CorruptArchiveError(`${path}: cannot be read: ${(error as Error).message}`);
  }
  if (data.length !== entry.bytes || sha256(data) !== entry.sha256) {
    throw new CorruptArchiveError(`${path}: checksum mismatch (the manifest says ${entry.bytes} bytes, sha256 ${entry.sha256})`);
  }
  let text: string;
  try {
    text = (await gunzipped(data)).toString('utf8');
  } catch {
    throw new CorruptArchiveError(`${path}: is not gzip`);
  }
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  if (lines.length !== entry.rows) throw new CorruptArchiveError(`${path}: ${lines.length} rows, the manifest says ${entry.rows}`);
  for (const [i, line] of lines.entries()) {
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      row = null;
    }
    if (row === null || typeof row !== 'object' || Array.isArray(row))
      throw new CorruptArchiveError(`${path}: line ${i + 1} is no JSON object`);
  }
  return lines;
}

async function verifyBatch(batchDir: string): Promise<VerifiedBatch> {
  const { value: manifest } = await readJson<BatchManifest>(join(batchDir, 'manifest.json'));
  if (manifest.format !== ARCHIVE_FORMAT) throw new CorruptArchiveError(`${batchDir}/manifest.json: not a ${ARCHIVE_FORMAT} manifest`);
  for (const table of ARCHIVED_TABLES) {
    const entry = manifest.tables?.[table];
    if (!entry) throw new CorruptArchiveError(`${batchDir}/manifest.json: no entry for ${table}`);
    await readArchivedRows(batchDir, entry);
  }
  return { dir: batchDir, manifest };
}

/** Verifies every file of one archive (a purge-… directory): nothing is trusted that does not match its manifest. */
export async function verifyArchive(dir: string): Promise<VerifiedArchive> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((error: Error) => {
    throw new CorruptArchiveError(`${dir}: cannot be read: ${error.message}`);
  });
  const batchDirs = entries.filter((e) => e.isDirectory() && /^batch-\d{6}$/.test(e.name)).map((e) => e.name);
  const hasManifest = entries.some((e) => e.isFile() && e.name === 'manifest.json');
  let manifest: ArchiveManifest | null = null;
  if (hasManifest) {
    manifest = (await readJson<ArchiveManifest>(join(dir, 'manifest.json'))).value;
    if (manifest.format !== ARCHIVE_FORMAT) throw new CorruptArchiveError(`${dir}/manifest.json: not a ${ARCHIVE_FORMAT} manifest`);
    const listed = manifest.batches.map((b) => batchName(b.batch));
    const missing = listed.filter((name) => !batchDirs.includes(name));
    if (missing.length > 0) throw new CorruptArchiveError(`${dir}: ${missing.join(', ')} listed in manifest.json but missing`);
    for (const b of manifest.batches) {
      const { data } = await readJson<BatchManifest>(join(dir, b.manifest));
      if (sha256(data) !== b.sha256) throw new CorruptArchiveError(`${dir}/${b.manifest}: checksum mismatch with manifest.json`);
    }
  }
  if (batchDirs.length === 0) throw new CorruptArchiveError(`${dir}: no batches: not a purge archive`);
  const batches: VerifiedBatch[] = [];
  for (const name of batchDirs.sort()) batches.push(await verifyBatch(join(dir, name)));
  return { dir, manifest, batches };
}

/** The archives under `path`: the path itself when it is one, else its purge-… directories, oldest first. */
export async function findArchives(path: string): Promise<string[]> {
  const entries = await readdir(path, { withFileTypes: true }).catch((error: Error) => {
    throw new CorruptArchiveError(`${path}: cannot be read: ${error.message}`);
  });
  if (entries.some((e) => e.isDirectory() && /^batch-\d{6}$/.test(e.name))) return [path];
  const archives = entries.filter((e) => e.isDirectory() && e.name.startsWith('purge-')).map((e) => join(path, e.name));
  if (archives.length === 0) throw new CorruptArchiveError(`${path}: holds no purge archive`);
  return archives.sort();
}
