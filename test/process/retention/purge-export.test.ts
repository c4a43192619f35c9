// `load-control purge --export DIR` killed mid-way (SIGKILL while a batch holds its exported rows, fsynced but not yet
// committed: the fault point purge_export_before_commit), then run again: no row is deleted without its export. Then
// `load-control import-archive` reads every archive back, one copy of each row, and refuses a corrupt one.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findArchives, readArchivedRows, verifyArchive } from '../../../src/domain/retention/purge-archive.js';
import { PURGED_TABLES } from '../../../src/domain/retention/purge.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { runCli } from '../../support/cli.js';
import { completeRun } from '../../support/fixtures.js';
import { until } from '../../support/until.js';

let api: TestApi;
const exportDir = mkdtempSync(join(tmpdir(), 'lc-purge-export-'));
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
  rmSync(exportDir, { recursive: true, force: true });
});

const cli = (args: string[]) => runCli(args, { DATABASE_URL: api.database.url, LC_LOGGING__LEVEL: 'warn' });

async function cancelledLongAgo() {
  const run = await completeRun(api, [3, 4]);
  const res = await api.gql(
    `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus } }`,
    { input: { runId: run.runId, reason: 'superseded' } },
    { token: 'operator' },
  );
  expect(res.body.data!.cancelRun.runStatus).toBe('CANCELLED');
  await api.sql.query(
    `UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '100 days', started_at = started_at - interval '100 days'
      WHERE run_id = $1`,
    [run.runId],
  );
  return run.runId as string;
}

/** Every detail row of the runs, keyed by table and the row's JSON text as PostgreSQL writes it. */
async function ledgerRows(runIds: string[]): Promise<Set<string>> {
  const rows = new Set<string>();
  for (const table of PURGED_TABLES) {
    const result = await api.sql.query(`SELECT to_jsonb(t)::text AS row FROM nifi_ops.${table} t WHERE run_id = ANY($1::uuid[])`, [runIds]);
    for (const r of result.rows) rows.add(`${table} ${r.row}`);
  }
  return rows;
}

/** Every row any archive under exportDir holds, the same way. */
async function archivedRows(): Promise<Set<string>> {
  const rows = new Set<string>();
  for (const dir of await findArchives(exportDir)) {
    for (const batch of (await verifyArchive(dir)).batches) {
      for (const table of PURGED_TABLES) {
        // normalised through PostgreSQL's jsonb text, as ledgerRows reads them
        const lines = await readArchivedRows(batch.dir, batch.manifest.tables[table]);
        for (const line of lines) rows.add(`${table} ${(await api.sql.query('SELECT $1::jsonb::text AS t', [line])).rows[0].t}`);
      }
    }
  }
  return rows;
}

async function setFaultPoints(setting: string) {
  const admin = new pg.Client({ connectionString: api.database.url });
  await admin.connect();
  try {
    await admin.query(
      `ALTER DATABASE ${admin.escapeIdentifier(api.database.name)} SET load_control.fault_points = ${admin.escapeLiteral(setting)}`,
    );
  } finally {
    await admin.end();
  }
}

describe('purge --export killed mid-way, then run again', () => {
  it('leaves no row deleted without its export; import-archive reads them back once, and refuses a corrupt archive', async () => {
    const runIds = [await cancelledLongAgo(), await cancelledLongAgo(), await cancelledLongAgo()];
    const before = await ledgerRows(runIds);
    expect(before.size).toBeGreaterThan(0);

    // the first batch's files are fsynced, then its session sleeps before the commit: killed there
    await setFaultPoints('purge_export_before_commit=4');
    const killed = cli(['purge', '--export', exportDir]);
    const firstBatch = () => {
      const archives = existsSync(exportDir) ? readdirSync(exportDir).filter((name) => name.startsWith('purge-')) : [];
      return archives.length === 1 && existsSync(join(exportDir, archives[0]!, 'batch-000001', 'manifest.json'));
    };
    await until('the first batch exported', firstBatch, 60_000);
    killed.kill('SIGKILL');
    expect(await killed.exited).toBeNull();
    await setFaultPoints('');
    // the killed client's backend sleeps on with the run locked, and rolls back once it finds its client gone
    await api.sql.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%fault_point%'`,
    );
    expect(await ledgerRows(runIds)).toEqual(before);
    const [interrupted] = await findArchives(exportDir);
    expect((await verifyArchive(interrupted!)).manifest).toBeNull();

    const rerun = cli(['purge', '--export', exportDir]);
    expect(await rerun.exited, rerun.output()).toBe(0);
    expect(rerun.output()).toMatch(/purged 3 runs ended before \S+ in 3 batches/);
    expect(rerun.output()).toMatch(/exported to \S+purge-\S+: 3 batches, \d+ bytes/);
    expect((await ledgerRows(runIds)).size).toBe(0);
    // every row that was in the ledger is in an archive; the killed batch's rows are in two
    const archived = await archivedRows();
    expect([...before].filter((row) => !archived.has(row))).toEqual([]);
    expect(archived.size).toBe(before.size);

    const imported = cli(['import-archive', exportDir, '--schema', 'audit']);
    expect(await imported.exited, imported.output()).toBe(0);
    expect(imported.output()).toMatch(/INTERRUPTED \(no manifest\.json: its purge did not finish\)/);
    for (const table of PURGED_TABLES) {
      const count = [...before].filter((row) => row.startsWith(`${table} `)).length;
      expect(imported.output()).toMatch(new RegExp(`audit\\.${table}: \\d+ rows read, ${count} new`));
      const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM audit.${table}`);
      expect(rows[0].n).toBe(count);
    }

    const [, complete] = await findArchives(exportDir);
    const file = join(complete!, 'batch-000002', 'load_event.jsonl.gz');
    const data = readFileSync(file);
    data[20] = data[20]! ^ 0x01;
    writeFileSync(file, data);
    const refused = cli(['import-archive', exportDir, '--schema', 'audit_again']);
    expect(await refused.exited).toBe(2);
    expect(refused.output()).toContain(`import-archive: refused: ${file}: checksum mismatch`);
    const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'audit_again'`);
    expect(rows[0].n).toBe(0);
  }, 240_000);
});
