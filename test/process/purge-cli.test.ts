// `load-control purge` as an operator runs it, against a real database.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applicationGrants } from '../../src/db/grants.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { runCli } from '../support/cli.js';
import { createLoginRole } from '../support/database.js';
import { completeRun } from '../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const TABLES = ['load_file', 'load_partition', 'load_validation', 'load_dispatch', 'load_event'];
const DAY = 86_400_000;
// every command is a process of its own (tsx compiles the CLI at start): seconds each on a busy machine

async function purgeCli(args: string[], env: Record<string, string> = {}) {
  const child = runCli(['purge', ...args], { DATABASE_URL: api.database.url, LC_LOGGING__LEVEL: 'warn', ...env });
  const code = await child.exited;
  return { code, output: child.output() };
}

/** A run with files, partitions, a dispatch, metrics and events, cancelled `days` ago. */
async function cancelledDaysAgo(days: number) {
  const run = await completeRun(api, [3, 4]);
  const res = await api.gql(
    `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus } }`,
    { input: { runId: run.runId, reason: 'superseded' } },
    { token: 'operator' },
  );
  expect(res.body.data!.cancelRun.runStatus).toBe('CANCELLED');
  await api.sql.query(
    `UPDATE nifi_ops.load_run SET completed_at = completed_at - $2 * interval '1 day', started_at = started_at - $2 * interval '1 day'
      WHERE run_id = $1`,
    [run.runId, days],
  );
  return run;
}

async function rows(runId: string): Promise<string> {
  const counts: string[] = [];
  for (const table of TABLES) {
    const {
      rows: [row],
    } = await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.${table} WHERE run_id = $1`, [runId]);
    counts.push(`${table}=${row.n}`);
  }
  return counts.join(' ');
}

const purgedAt = async (runId: string) =>
  (await api.sql.query('SELECT purged_at FROM nifi_ops.load_run WHERE run_id = $1', [runId])).rows[0].purged_at as Date | null;

describe('load-control purge', () => {
  it('prints what would go with --dry-run and changes nothing, then purges past retention.ledger, then before --before', async () => {
    const old = await cancelledDaysAgo(100);
    const recent = await cancelledDaysAgo(30);
    const oldRows = await rows(old.runId);
    const recentRows = await rows(recent.runId);
    expect(oldRows).toMatch(/^load_file=2 load_partition=2 load_validation=[1-9]\d* load_dispatch=1 load_event=[1-9]\d*$/);

    const dry = await purgeCli(['--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.output).toMatch(
      new RegExp(`would purge run ${old.runId} ORACLE_INSP_DTL_DAILY ${old.businessKey} CANCELLED ended \\S+: ${oldRows}\\n`),
    );
    expect(dry.output).toMatch(new RegExp(`dry run: 1 runs ended before \\S+ would lose ${oldRows}; nothing was changed`));
    expect(dry.output).not.toContain(recent.runId);
    expect([await rows(old.runId), await purgedAt(old.runId)]).toEqual([oldRows, null]);

    const purged = await purgeCli([]);
    expect(purged.code).toBe(0);
    expect(purged.output).toContain(`purged run ${old.runId} ORACLE_INSP_DTL_DAILY ${old.businessKey} CANCELLED`);
    expect(purged.output).toMatch(new RegExp(`purged 1 runs ended before \\S+ in 1 batches: deleted ${oldRows}`));
    expect(await rows(old.runId)).toBe('load_file=0 load_partition=0 load_validation=0 load_dispatch=0 load_event=0');
    expect(await purgedAt(old.runId)).toBeInstanceOf(Date);
    expect([await rows(recent.runId), await purgedAt(recent.runId)]).toEqual([recentRows, null]);

    const tenDaysAgo = new Date(Date.now() - 10 * DAY).toISOString().slice(0, 10);
    const explicit = await purgeCli(['--before', tenDaysAgo]);
    expect(explicit.code).toBe(0);
    expect(explicit.output).toContain(`purged 1 runs ended before ${tenDaysAgo}T00:00:00.000Z in 1 batches: deleted ${recentRows}`);
    expect(await purgedAt(recent.runId)).toBeInstanceOf(Date);

    const again = await purgeCli(['--before', `${tenDaysAgo}T06:00:00+02:00`]);
    expect(again.output).toContain(`purged 0 runs ended before ${tenDaysAgo}T04:00:00.000Z in 0 batches: deleted load_file=0`);
  }, 180_000);

  it('refuses a --before that is no date with exit code 2 and says why', async () => {
    const { code, output } = await purgeCli(['--before', 'banana']);
    expect(code).toBe(2);
    expect(output).toContain('--before: "banana" is not an ISO date (2026-09-01) or timestamp with offset (2026-09-01T06:00:00Z)');
  });

  it('refuses a bad retention.ledger with the configuration error', async () => {
    const { code, output } = await purgeCli(['--dry-run'], { LC_RETENTION__LEDGER: 'banana' });
    expect(code).toBe(2);
    expect(output).toContain('config: retention.ledger: invalid duration "banana"');
    expect(output).toContain('(from LC_RETENTION__LEDGER)');
  });

  it('purges as an application role that has only the grants of `load-control grants`', async () => {
    const run = await cancelledDaysAgo(100);
    const admin = new pg.Client({ connectionString: api.database.url });
    await admin.connect();
    const { name: role, url: asRole } = await createLoginRole(admin, 'lc_purge');
    try {
      for (const statement of await applicationGrants(admin, role)) await admin.query(statement);
      const purged = await purgeCli([], { DATABASE_URL: asRole(api.database.url) });
      expect(purged.code).toBe(0);
      expect(purged.output).toContain(`purged run ${run.runId}`);
      expect(await purgedAt(run.runId)).toBeInstanceOf(Date);
    } finally {
      // the role's grants go with the test database; it owns nothing else
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE ${role}`);
      await admin.end();
    }
  }, 120_000);
});
