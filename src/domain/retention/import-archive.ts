// `load-control import-archive`: verified purge archives read back into a schema of their own, for an audit. Each
// table is the ledger's table by shape (LIKE nifi_ops.<table>, with its defaults and its primary and unique keys, no
// foreign keys or checks: an archive holds a run's details without the rest of the ledger), and a row already
// there is kept once — a batch killed before its delete committed was archived twice (purge-archive.ts).
import type pg from 'pg';
import { ARCHIVED_TABLES, CorruptArchiveError, readArchivedRows, type ArchivedTable, type VerifiedArchive } from './purge-archive.js';

const ARCHIVE_SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

export type ImportCounts = Record<ArchivedTable, { read: number; imported: number }>;

/** The archive's provenance: every batch imported, from which archive, exported when, by which release. */
const ARCHIVE_BATCH_TABLE = `
  archive      text        NOT NULL,
  batch        integer     NOT NULL,
  cutoff       timestamptz NOT NULL,
  exported_at  timestamptz NOT NULL,
  release      text        NOT NULL,
  run_ids      text[]      NOT NULL,
  -- false: the purge that wrote it did not finish (its archive has no manifest.json)
  archive_complete boolean NOT NULL,
  imported_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (archive, batch)`;

/**
 * Imports verified archives in one transaction (all or nothing). A row whose keys name a column the ledger's table
 * does not have (an archive of a later release) refuses the import rather than dropping the value.
 */
export async function importArchives(client: pg.ClientBase, schema: string, archives: VerifiedArchive[]): Promise<ImportCounts> {
  if (!ARCHIVE_SCHEMA.test(schema) || schema === 'nifi_ops' || schema.startsWith('pg_')) {
    throw new Error(`--schema: ${JSON.stringify(schema)} must match ${ARCHIVE_SCHEMA.source}, and be neither nifi_ops nor pg_…`);
  }
  const counts = Object.fromEntries(ARCHIVED_TABLES.map((t) => [t, { read: 0, imported: 0 }])) as ImportCounts;
  await client.query('BEGIN');
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    for (const table of ARCHIVED_TABLES) {
      await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.${table} (LIKE nifi_ops.${table} INCLUDING DEFAULTS INCLUDING INDEXES)`);
    }
    await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.archive_batch (${ARCHIVE_BATCH_TABLE})`);
    for (const archive of archives) {
      for (const { dir, manifest } of archive.batches) {
        for (const table of ARCHIVED_TABLES) {
          const lines = await readArchivedRows(dir, manifest.tables[table]);
          if (lines.length === 0) continue;
          const { rows: unknown } = await client.query<{ key: string }>(
            `SELECT DISTINCT k AS key FROM unnest($1::jsonb[]) l, jsonb_object_keys(l) k
              WHERE k NOT IN (SELECT column_name FROM information_schema.columns WHERE table_schema = $2 AND table_name = $3)`,
            [lines, schema, table],
          );
          if (unknown.length > 0) {
            throw new CorruptArchiveError(
              `${dir}/${manifest.tables[table].file}: columns ${unknown.map((u) => u.key).join(', ')} are not in ${schema}.${table} ` +
                `(an archive of release ${manifest.release}; import it with that release or a later one)`,
            );
          }
          const inserted = await client.query(
            `INSERT INTO ${schema}.${table}
             SELECT (jsonb_populate_record(NULL::${schema}.${table}, l)).* FROM unnest($1::jsonb[]) l
             ON CONFLICT DO NOTHING`,
            [lines],
          );
          counts[table].read += lines.length;
          counts[table].imported += inserted.rowCount ?? 0;
        }
        await client.query(
          `INSERT INTO ${schema}.archive_batch (archive, batch, cutoff, exported_at, release, run_ids, archive_complete)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (archive, batch) DO NOTHING`,
          [archive.dir, manifest.batch, manifest.cutoff, manifest.exportedAt, manifest.release, manifest.runIds, archive.manifest !== null],
        );
      }
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
  return counts;
}
