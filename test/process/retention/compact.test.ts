import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHistory } from '../../../bench/history-data.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { runCli } from '../../support/cli.js';
import { createLoginRole } from '../../support/database.js';
import { applicationGrants } from '../../../src/db/grants.js';
import { chunkInput, claim, report, startRun, type CreatedRun } from '../../support/fixtures.js';
import { compactedTables } from '../../../src/commands/compact.js';
import {
  COMPACTED_TABLES,
  CompactionRefusedError,
  compactLedger,
  tableSizes,
  type CompactBatch,
  type TableSizes,
} from '../../../src/domain/retention/compact.js';
import { PURGE_BATCH_ROWS, purgeLedger } from '../../../src/domain/retention/purge.js';

const HOUR = 3_600_000;

/** Three business dates of history (bench/history-data.ts), the two older ones cleaned up and purged: most pages free. */
async function purgedLedger(api: TestApi, beforePurge: () => Promise<void> = async () => undefined): Promise<void> {
  await generateHistory(api.database.url, { days: 3 });
  await beforePurge();
  const before = new Date(Date.now() - 12 * HOUR);
  // the history's SUCCESS runs this young are not cleaned up yet (cleanup waits for its own retention)
  await api.sql.query(
    `UPDATE nifi_ops.load_run SET cleaned_at = completed_at + interval '1 hour'
      WHERE status = 'SUCCESS' AND cleaned_at IS NULL AND completed_at < $1`,
    [before],
  );
  const summary = await purgeLedger(api.db, { before, batchRows: PURGE_BATCH_ROWS });
  expect(summary.purgedRuns.length).toBeGreaterThan(100);
}

async function connect(api: TestApi): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: api.database.url, application_name: 'compact test' });
  await client.connect();
  return client;
}

/** Each ledger table's rows, as text, in one digest: rows of the run `except` left out. */
async function digests(api: TestApi, except: string | null = null): Promise<Record<string, { rows: number; md5: string }>> {
  const result: Record<string, { rows: number; md5: string }> = {};
  for (const table of COMPACTED_TABLES) {
    const { rows } = await api.sql.query(
      `SELECT count(*)::int AS rows, md5(COALESCE(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS md5
         FROM nifi_ops.${table} t WHERE t.run_id IS DISTINCT FROM $1::uuid`,
      [except],
    );
    result[table] = rows[0];
  }
  return result;
}

/**
 * Where each ledger table's rows and indexes are: the rows' ctids, in one digest, and the files of the heap and of
 * every index. Compaction moves rows (new ctids) and rebuilds indexes (new files); nothing else of the test's
 * changes them. Their sizes are no such witness: autovacuum, which may come at any time, adds the free space
 * map of an index whose pages the purge emptied, and may cut empty pages off a heap's end.
 */
async function layout(client: pg.Client): Promise<Record<string, { ctids: string; files: string[] }>> {
  const all: Record<string, { ctids: string; files: string[] }> = {};
  for (const table of COMPACTED_TABLES) {
    const { rows } = await client.query<{ ctids: string; files: string[] }>(
      `SELECT (SELECT md5(COALESCE(string_agg(ctid::text, ',' ORDER BY ctid), '')) FROM nifi_ops.${table}) AS ctids,
              ARRAY(SELECT c.relname || ' ' || pg_relation_filenode(c.oid) FROM pg_class c
                     WHERE c.oid = $1::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = $1::regclass)
                     ORDER BY c.relname) AS files`,
      [`nifi_ops.${table}`],
    );
    all[table] = rows[0]!;
  }
  return all;
}

async function sizes(client: pg.Client): Promise<Record<string, TableSizes>> {
  const all: Record<string, TableSizes> = {};
  for (const table of COMPACTED_TABLES) all[table] = await tableSizes(client, table);
  return all;
}

const PARTITIONS = 40;
const CHUNKS = 3;
const pid = (i: number) => String(i).padStart(4, '0');

/**
 * NiFi's side of a run of PARTITIONS partitions: four workers claim and report every chunk, then report chunks
 * again (replays, as a retrying NiFi does) until `until` resolves. Every answer must be a success.
 */
async function loadRun(api: TestApi, run: CreatedRun, until: Promise<unknown>): Promise<{ requests: number; during: number[] }> {
  let finished = false;
  void until.finally(() => {
    finished = true;
  });
  const tokens = new Map<string, string>();
  const queue = Array.from({ length: PARTITIONS }, (_, i) => pid(i));
  let requests = 0;
  const during: number[] = [];
  const worker = async () => {
    for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
      const claimed = await claim(api, run.runId, p);
      expect(claimed.result?.claimed).toBe(true);
      tokens.set(p, claimed.claimToken);
      for (let c = 0; c < CHUNKS; c++) {
        const r = await report(api, chunkInput(run, p, claimed.claimToken, c, CHUNKS, 5));
        expect(r.result?.recorded, JSON.stringify(r.body)).toBe(true);
        requests++;
        during.push(Date.now());
      }
    }
    for (let n = 0; !finished; n++) {
      const p = pid(n % PARTITIONS);
      const r = await report(api, chunkInput(run, p, tokens.get(p)!, n % CHUNKS, CHUNKS, 5));
      expect(r.result?.recorded, JSON.stringify(r.body)).toBe(true);
      requests++;
      during.push(Date.now());
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return { requests, during };
}

describe('compactLedger beside a live load', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => api?.close());

  it('shrinks the purged tables while a run is loaded, every other row unchanged, every chunk of the run counted once', {
    timeout: 900_000,
  }, async () => {
    let run: CreatedRun | undefined;
    // the run's partitions are written after the history, at the tables' ends: compaction moves them while they load
    await purgedLedger(api, async () => {
      run = await startRun(
        api,
        Array.from({ length: PARTITIONS }, () => 5 * CHUNKS),
      );
    });
    const live = run!;
    const client = await connect(api);
    try {
      await client.query(`VACUUM ${COMPACTED_TABLES.map((t) => `nifi_ops.${t}`).join(', ')}`);
      const before = await sizes(client);
      const untouched = await digests(api, live.runId);
      const batches: Array<CompactBatch & { at: number }> = [];
      const compaction = compactLedger(client, { batchPages: 8, afterBatch: (b) => void batches.push({ ...b, at: Date.now() }) });
      const [results, load] = await Promise.all([compaction, loadRun(api, live, compaction)]);

      // the two overlapped: chunk reports were answered between the compaction's first and last batch
      const [first, last] = [batches[0]!.at, batches.at(-1)!.at];
      expect(load.during.filter((t) => t > first && t < last).length).toBeGreaterThan(0);
      expect(batches.some((b) => b.moved > 0)).toBe(true);

      const after = await sizes(client);
      for (const table of ['load_file', 'load_event', 'load_partition'] as const) {
        expect(after[table]!.heapBytes, table).toBeLessThan(before[table]!.heapBytes * 0.7);
        expect(after[table]!.indexBytes, table).toBeLessThan(before[table]!.indexBytes * 0.7);
      }
      // the small tables may grow meanwhile: the load inserts its events and dispatch
      expect(results.map((r) => r.before.table)).toEqual([...COMPACTED_TABLES]);
      expect(await digests(api, live.runId)).toEqual(untouched);

      // exactly once: every chunk one file, every partition SUCCESS once, the run validated once
      const { rows: partitions } = await api.sql.query(
        `SELECT p.status, p.received_chunks, p.received_rows::int, (SELECT count(*)::int FROM nifi_ops.load_file f
                 WHERE f.run_id = p.run_id AND f.partition_id = p.partition_id) AS files
           FROM nifi_ops.load_partition p WHERE p.run_id = $1`,
        [live.runId],
      );
      expect(partitions).toHaveLength(PARTITIONS);
      for (const p of partitions)
        expect(p).toEqual({ status: 'SUCCESS', received_chunks: CHUNKS, received_rows: 5 * CHUNKS, files: CHUNKS });
      const { rows: runRows } = await api.sql.query(
        `SELECT status, extracted_count::int, success_partition_count,
                (SELECT count(*)::int FROM nifi_ops.load_dispatch d WHERE d.run_id = r.run_id) AS dispatches,
                (SELECT count(*)::int FROM nifi_ops.load_event e WHERE e.run_id = r.run_id AND e.event_name = 'PARTITION_SUCCESS') AS successes
           FROM nifi_ops.load_run r WHERE run_id = $1`,
        [live.runId],
      );
      expect(runRows[0]).toEqual({
        status: 'EXTRACTED_VALIDATED',
        extracted_count: PARTITIONS * CHUNKS * 5,
        success_partition_count: PARTITIONS,
        dispatches: 1,
        successes: PARTITIONS,
      });
    } finally {
      await client.end();
    }
  });
});

describe('compactLedger and `load-control compact`', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi();
    await purgedLedger(api);
  });
  afterAll(async () => api?.close());

  it('--dry-run prints each table with an estimate and changes nothing; an unknown --table is refused', { timeout: 120_000 }, async () => {
    const client = await connect(api);
    try {
      const before = await layout(client);
      const rows = await digests(api);
      const cli = runCli(['compact', '--dry-run', '--table', 'load_file', '--table', 'load_event'], { DATABASE_URL: api.database.url });
      expect(await cli.exited).toBe(0);
      expect(cli.output()).toMatch(/load_file: heap [\d.]+ MB, indexes [\d.]+ MB, \d+ rows; compacted, the heap would take about/);
      expect(cli.output()).toMatch(/load_event: heap/);
      expect(cli.output()).not.toMatch(/load_partition:/);
      expect(cli.output()).toContain('dry run: nothing was changed');
      expect(await layout(client)).toEqual(before);
      expect(await digests(api)).toEqual(rows);

      const unknown = runCli(['compact', '--table', 'gate_observation'], { DATABASE_URL: api.database.url });
      expect(await unknown.exited).toBe(2);
      expect(unknown.output()).toContain('--table: gate_observation is not one of load_file, load_event');
      expect(await layout(client)).toEqual(before);
    } finally {
      await client.end();
    }
  });

  it('refuses, changing nothing, a role that does not own the tables (the application role of `load-control grants`)', {
    timeout: 120_000,
  }, async () => {
    const admin = await connect(api);
    const { name: role, url: asRole } = await createLoginRole(admin, 'lc_compact');
    try {
      for (const statement of await applicationGrants(admin, role)) await admin.query(statement);
      const before = await layout(admin);
      const rows = await digests(api);
      const cli = runCli(['compact', '--table', 'load_file'], { DATABASE_URL: asRole(api.database.url) });
      expect(await cli.exited).toBe(2);
      expect(cli.output()).toContain('compact needs the owner of load_file (VACUUM and REINDEX): connect as database.migrationUrl');
      expect(await layout(admin)).toEqual(before);
      expect(await digests(api)).toEqual(rows);
    } finally {
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE ${role}`);
      await admin.end();
    }
  });

  it('refuses a second compaction while one runs; an interrupted one is resumed by running it again', { timeout: 300_000 }, async () => {
    const first = await connect(api);
    const second = await connect(api);
    try {
      const before = await sizes(first);
      const rows = await digests(api);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started: () => void = () => undefined;
      const inBatch = new Promise<void>((resolve) => {
        started = resolve;
      });
      const interrupted = compactLedger(first, {
        tables: ['load_file'],
        batchPages: 4,
        afterBatch: async (batch) => {
          if (batch.moved === 0) return;
          started();
          await held;
          throw new Error('interrupted');
        },
      });
      await inBatch;
      await expect(compactLedger(second, { tables: ['load_file'] })).rejects.toBeInstanceOf(CompactionRefusedError);
      const busy = runCli(['compact', '--table', 'load_file'], { DATABASE_URL: api.database.url });
      expect(await busy.exited).toBe(2);
      expect(busy.output()).toContain('another `load-control compact` is running');
      release();
      await expect(interrupted).rejects.toThrow('interrupted');
      expect(await digests(api)).toEqual(rows);

      // what an interrupted REINDEX CONCURRENTLY leaves behind: an invalid index named *_ccnew (made here by a
      // concurrent build that fails)
      await expect(
        api.sql.query('CREATE UNIQUE INDEX CONCURRENTLY ix_load_file_partition_status_ccnew ON nifi_ops.load_file (run_id)'),
      ).rejects.toThrow();
      const invalid = `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                        WHERE i.indrelid = 'nifi_ops.load_file'::regclass AND NOT i.indisvalid`;
      expect((await api.sql.query(invalid)).rows).toEqual([{ relname: 'ix_load_file_partition_status_ccnew' }]);

      const cli = runCli(['compact'], { DATABASE_URL: api.database.url });
      expect(await cli.exited, cli.output()).toBe(0);
      for (const table of COMPACTED_TABLES)
        expect(cli.output()).toMatch(new RegExp(`${table}: before heap .* after heap .* moved \\d+ rows`));
      const after = await sizes(first);
      for (const table of ['load_file', 'load_event', 'load_partition'] as const) {
        expect(after[table]!.heapBytes + after[table]!.indexBytes, table).toBeLessThan(
          (before[table]!.heapBytes + before[table]!.indexBytes) * 0.7,
        );
      }
      expect(await digests(api)).toEqual(rows);
      expect((await api.sql.query(invalid)).rows).toEqual([]);
      // run again, it finds the tables compact: none grows (beyond a tail shorter than VACUUM truncates, 1/16 of
      // the table), no row changes
      const again = await compactLedger(second);
      for (const r of again) expect(r.after.heapBytes, r.before.table).toBeLessThanOrEqual(after[r.before.table]!.heapBytes * 1.07);
      expect(await digests(api)).toEqual(rows);
    } finally {
      await first.end();
      await second.end();
    }
  });
});

describe('compactedTables', () => {
  it('is every compacted table without --table, the named ones in compaction order with it', () => {
    expect(compactedTables([])).toEqual([...COMPACTED_TABLES]);
    expect(compactedTables(['load_run', 'load_file'])).toEqual(['load_file', 'load_run']);
    expect(() => compactedTables(['load_file', 'pg_class'])).toThrow('--table: pg_class is not one of');
  });
});
