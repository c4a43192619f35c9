// `load-control compact [--table T] [--dry-run]`: gives the space a purge freed back to the operating system,
// online (src/domain/retention/compact.ts), and prints each table's size before and after.
import type pg from 'pg';
import { ConfigError } from '../config/config.js';
import {
  COMPACTED_TABLES,
  CompactionRefusedError,
  compactLedger,
  estimateCompactHeap,
  isCompactedTable,
  tableSizes,
  type CompactedTable,
  type TableSizes,
} from '../domain/retention/compact.js';
import { asProcess, checkedOption, openMigrationSession, type Command } from './process.js';

const MB = 2 ** 20;
const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
const size = (s: TableSizes) => `heap ${mb(s.heapBytes)}, indexes ${mb(s.indexBytes)}, ${s.rows} rows`;

/** The tables `--table` names (all of them without it); an unknown name is refused, naming the known ones. */
export function compactedTables(names: readonly string[]): CompactedTable[] {
  const unknown = names.filter((name) => !isCompactedTable(name));
  if (unknown.length) throw new Error(`--table: ${unknown.join(', ')} is not one of ${COMPACTED_TABLES.join(', ')}`);
  return names.length ? COMPACTED_TABLES.filter((table) => names.includes(table)) : [...COMPACTED_TABLES];
}

interface CompactCommand {
  client: pg.Client;
  tables: CompactedTable[];
  dryRun: boolean;
  print: (line: string) => void;
}

async function runCompactCommand({ client, tables, dryRun, print }: CompactCommand): Promise<void> {
  if (dryRun) {
    for (const table of tables) {
      const sizes = await tableSizes(client, table);
      const heap = await estimateCompactHeap(client, table);
      print(`${table}: ${size(sizes)}; compacted, the heap would take about ${mb(heap)} (indexes are rebuilt)`);
    }
    print('dry run: nothing was changed');
    return;
  }
  let reported = performance.now();
  const results = await compactLedger(client, {
    tables,
    progress: print,
    afterBatch: (batch) => {
      // a line every few seconds: a large table takes thousands of batches
      if (performance.now() - reported < 5000) return;
      reported = performance.now();
      print(`${batch.table}: pages ${batch.fromPage}–${batch.toPage}: moved ${batch.moved} rows in ${batch.milliseconds.toFixed(0)} ms`);
    },
  });
  for (const r of results) {
    print(
      `${r.before.table}: before ${size(r.before)}; after ${size(r.after)}; moved ${r.moved} rows in ${r.batches} batches` +
        `${r.skipped ? ` (${r.skipped} rows in use were left in place: run compact again later)` : ''} in ${r.seconds.toFixed(1)} s`,
    );
  }
}

export const compact: Command = {
  usage: `  compact [--table T]… [--dry-run]
                        after a large purge, give the ledger tables' free space back online (as
                        database.migrationUrl: VACUUM and REINDEX need the tables' owner); prints the
                        sizes before and after; --dry-run prints the sizes and an estimate only`,
  run: (invocation) =>
    asProcess(invocation, async (context) => {
      const { options } = context;
      const tables = checkedOption(() => compactedTables(options.table ?? []));
      const client = await openMigrationSession(context, 'compact');
      try {
        await runCompactCommand({ client, tables, dryRun: options['dry-run'] ?? false, print: (line) => console.log(line) });
      } catch (error) {
        if (error instanceof CompactionRefusedError) throw new ConfigError([error.message]);
        throw error;
      }
      return 'done';
    }),
};
