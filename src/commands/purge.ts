// `load-control purge [--before DATE] [--dry-run] [--export DIR]`: the ledger retention of the sweeper, run to the end
// by hand.
import { createDb, type Db } from '../db/client.js';
import { perform } from '../db/operation.js';
import { INSTANT_PATTERN, calendarDate } from '../domain/gate/business-date.js';
import { PURGED_TABLES, PURGE_BATCH_ROWS, noRows, previewPurgeOperation, purgeLedger, type RowCounts } from '../domain/retention/purge.js';
import { openPurgeArchive } from '../domain/retention/purge-archive.js';
import { asProcess, checkedOption, openDatabase, requireCurrentSchema, sessionUrl, type Command } from './process.js';

/**
 * The cutoff `--before` names: a date (its midnight UTC) or a timestamp with an offset, never in the future.
 * A timestamp without an offset is refused: which midnight it means would depend on the machine's time zone.
 */
export function parseBefore(text: string, now: Date): Date {
  const date = calendarDate(text);
  // Date would roll 2026-02-30T… over into March: the day is checked as a calendar date first
  const timestamp = INSTANT_PATTERN.test(text) && calendarDate(text.slice(0, 10)) !== null;
  const instant = date ? new Date(`${date}T00:00:00Z`) : timestamp ? new Date(text) : null;
  if (!instant || Number.isNaN(instant.getTime())) {
    throw new Error(`--before: ${JSON.stringify(text)} is not an ISO date (2026-09-01) or timestamp with offset (2026-09-01T06:00:00Z)`);
  }
  if (instant > now) throw new Error(`--before: ${instant.toISOString()} is in the future`);
  return instant;
}

const formatRows = (rows: RowCounts): string => PURGED_TABLES.map((table) => `${table}=${rows[table]}`).join(' ');

interface PurgeCommand {
  db: Db;
  before: Date;
  dryRun: boolean;
  /** Where each batch is exported before its delete commits, or null. */
  exportDir: string | null;
  print: (line: string) => void;
}

async function runPurgeCommand({ db, before, dryRun, exportDir, print }: PurgeCommand): Promise<void> {
  const cutoff = before.toISOString();
  if (dryRun) {
    const runs = await perform(db, previewPurgeOperation, before);
    const total = noRows();
    for (const run of runs) {
      for (const table of PURGED_TABLES) total[table] += run.rows[table];
      print(
        `would purge run ${run.runId} ${run.jobKey} ${run.businessKey} ${run.status} ended ${run.completedAt.toISOString()}: ${formatRows(run.rows)}`,
      );
    }
    print(`dry run: ${runs.length} runs ended before ${cutoff} would lose ${formatRows(total)}; nothing was changed`);
    return;
  }
  const archive = exportDir === null ? undefined : openPurgeArchive(exportDir, before);
  const summary = await purgeLedger(db, {
    before,
    batchRows: PURGE_BATCH_ROWS,
    archive,
    afterBatch: (batch) => {
      if (batch.purged) print(`purged run ${batch.run.runId} ${batch.run.jobKey} ${batch.run.businessKey} ${batch.run.status}`);
    },
  });
  print(
    `purged ${summary.purgedRuns.length} runs ended before ${cutoff} in ${summary.batches} batches: deleted ${formatRows(summary.deleted)}`,
  );
  const written = await archive?.finish(summary.complete);
  if (written) print(`exported to ${written.dir}: ${summary.batches} batches, ${archive!.bytesWritten()} bytes`);
  else if (archive) print('exported nothing: nothing was deleted');
}

export const purge: Command = {
  usage: `  purge [--before DATE] [--dry-run] [--export DIR]
                        delete the details of runs that ended before DATE (default: now − retention.ledger),
                        keeping each run's summary; --dry-run prints what would go and changes nothing;
                        --export DIR (default retention.exportDir) first writes each batch to an archive in DIR`,
  run: (invocation) =>
    asProcess(invocation, async (context) => {
      const { config, shutdown, options } = context;
      const now = new Date();
      const before =
        options.before === undefined
          ? new Date(now.getTime() - config.retention.ledger)
          : checkedOption(() => parseBefore(options.before as string, now));
      const url = sessionUrl(config, (await openDatabase(context, false)).url);
      await requireCurrentSchema(context, url);
      const db = createDb(url, { poolSize: 1, timeouts: config.database });
      shutdown.close('database', () => db.close());
      await runPurgeCommand({
        db,
        before,
        dryRun: options['dry-run'] ?? false,
        exportDir: options.export ?? config.retention.exportDir,
        print: (line) => console.log(line),
      });
      return 'done';
    }),
};
