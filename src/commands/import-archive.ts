// `load-control import-archive DIR [--schema NAME]`: the archives `purge --export` wrote, verified file by file against
// their manifests and checksums, then read back into a schema of their own (default purge_archive) for an audit.
import { ConfigError } from '../config/config.js';
import { importArchives } from '../domain/retention/import-archive.js';
import {
  ARCHIVED_TABLES,
  CorruptArchiveError,
  findArchives,
  verifyArchive,
  type VerifiedArchive,
} from '../domain/retention/purge-archive.js';
import { asProcess, openMigrationSession, type Command } from './process.js';

async function verifyAll(path: string, print: (line: string) => void): Promise<VerifiedArchive[]> {
  const archives: VerifiedArchive[] = [];
  for (const dir of await findArchives(path)) {
    const archive = await verifyArchive(dir);
    const rows = archive.batches.reduce((n, b) => n + ARCHIVED_TABLES.reduce((m, t) => m + b.manifest.tables[t].rows, 0), 0);
    print(
      `verified ${dir}: ${archive.batches.length} batches, ${rows} rows` +
        (archive.manifest ? `, cutoff ${archive.manifest.cutoff}` : ', INTERRUPTED (no manifest.json: its purge did not finish)'),
    );
    archives.push(archive);
  }
  return archives;
}

export const importArchive: Command = {
  usage: `  import-archive DIR [--schema NAME]
                        verify the purge archives in DIR (checksums, row counts; a corrupt one is refused, exit 2,
                        and nothing is imported), then read them into schema NAME (default purge_archive) as
                        database.migrationUrl, one copy of each row`,
  run: (invocation) =>
    asProcess(invocation, async (context) => {
      const { options } = context;
      const [dir] = invocation.args;
      if (!dir) throw new ConfigError(['import-archive: name the directory of the archives (what purge --export wrote)']);
      const schema = options.schema ?? 'purge_archive';
      const print = (line: string) => console.log(line);
      const archives = await verifyAll(dir, print).catch((error: unknown) => {
        throw error instanceof CorruptArchiveError ? new ConfigError([`import-archive: refused: ${error.message}`]) : error;
      });
      const client = await openMigrationSession(context, 'import-archive');
      const counts = await importArchives(client, schema, archives).catch((error: unknown) => {
        throw error instanceof CorruptArchiveError || (error instanceof Error && error.message.startsWith('--schema'))
          ? new ConfigError([`import-archive: refused: ${error.message}`])
          : error;
      });
      for (const table of ARCHIVED_TABLES) {
        print(`${schema}.${table}: ${counts[table].read} rows read, ${counts[table].imported} new`);
      }
      return 'done';
    }),
};
