// `npm run demo` (scripts/demo.ts) against a fresh `start` (no NiFi: no nifi.receiverUrl): every kind of state the
// console shows, a DEAD call included, made through
// the API within a minute; a second demo on the same instance; and no demo on an instance that does not say it is a
// development one, unless --yes.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken, tokenConfigEntry } from '../../src/auth/tokens.js';
import { JOB_MATRIX, JOBS } from '../../web/src/api/operations.js';
import { documentText } from '../../schema/documents/graphql.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort, runCli, type CliProcess } from '../support/cli.js';
import { until } from '../support/until.js';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const token = generateToken();

let database: TestDatabase;
let instance: CliProcess;
let base: string;

beforeAll(async () => {
  database = await createTestDatabase();
  const entry = tokenConfigEntry('demo-operator', ['operator', 'nifi'], token);
  const configPath = join(mkdtempSync(join(tmpdir(), 'lc-demo-')), 'config.yaml');
  writeFileSync(configPath, `auth:\n  tokens:\n    - { name: ${entry.name}, sha256: ${entry.sha256}, roles: [operator, nifi] }\n`);
  const port = await freePort();
  instance = runCli(['start', '--config', configPath], {
    DATABASE_URL: database.url,
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
  });
  base = `http://127.0.0.1:${port}`;
  await until('readiness', async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200);
});
afterAll(async () => {
  instance?.kill('SIGTERM');
  await instance?.exited;
  await database?.drop();
});

function demo(args: string[]) {
  return exec(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', '--url', base, ...args], {
    cwd: root,
    env: { ...process.env, LC_TOKEN: token },
    timeout: 120_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

async function gql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data: T; errors?: unknown };
  expect(body.errors).toBeUndefined();
  return body.data;
}

describe('npm run demo', () => {
  it('refuses an instance that is not a development one without --yes, before writing anything', async () => {
    const refused = await demo(['--pace', '0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/does not say it is a development instance .* Give --yes/);
    expect((await gql(`{ runs(first: 1) { nodes { runId } } }`)).runs.nodes).toEqual([]);
  });

  it('fills the instance with every kind of state through its API, and can be run again', async () => {
    const began = Date.now();
    const first = await demo(['--yes', '--pace', '0']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(Date.now() - began).toBeLessThan(60_000);
    expect(first.stdout).toMatch(/DEAD \(410 Gone\)/);

    const today = new Date().toISOString().slice(0, 10);
    const statuses = async () =>
      (await gql(`{ runs(filter: { jobKeyContains: "DEMO_" }, first: 200) { nodes { jobKey businessKey status } } }`)).runs.nodes as Array<{
        jobKey: string;
        businessKey: string;
        status: string;
      }>;
    const runs = await statuses();
    expect(new Set(runs.map((r) => r.status))).toEqual(new Set(['SUCCESS', 'FAILED_EXTRACT', 'PUBLISH_UNKNOWN', 'EXTRACTING']));
    expect(
      runs
        .filter((r) => r.businessKey === today)
        .map((r) => `${r.jobKey} ${r.status}`)
        .sort(),
    ).toEqual([
      'DEMO_CUSTOMERS SUCCESS',
      'DEMO_ORDERS SUCCESS',
      'DEMO_PAYMENTS PUBLISH_UNKNOWN',
      'DEMO_REFUNDS FAILED_EXTRACT',
      'DEMO_SALES_MART EXTRACTING',
    ]);
    const readiness = await gql(`query($d: Date!) { readiness(consumer: "demo_sales_mart", businessDate: $d) { ready } }`, { d: today });
    expect(readiness.readiness.ready).toBe(true);
    const gate = await gql(`{ gate(consumer: "demo_sales_mart") { dispatches(last: 50) { status lastHttpStatus } } }`);
    expect(gate.gate.dispatches).toContainEqual({ status: 'DEAD', lastHttpStatus: 410 });
    const summary = await gql(`{ monitorSummary(alertLimit: 100) { alerts { kind } } }`);
    expect(summary.monitorSummary.alerts.map((a: { kind: string }) => a.kind)).toEqual(
      expect.arrayContaining(['PUBLISH_UNKNOWN', 'RUN_FAILED', 'DISPATCH_DEAD']),
    );
    // what the console's Jobs page and matrix read
    const jobs = await gql(documentText(JOBS), { jobKeyContains: 'DEMO_' });
    expect(jobs.jobs.nodes.map((j: { jobKey: string }) => j.jobKey)).toEqual([
      'DEMO_CUSTOMERS',
      'DEMO_ORDERS',
      'DEMO_PAYMENTS',
      'DEMO_REFUNDS',
      'DEMO_SALES_MART',
    ]);
    const matrix = await gql(documentText(JOB_MATRIX), { consumer: 'demo_sales_mart', days: 5 });
    expect(matrix.jobMatrix.consumerReadiness).toEqual([true, true, true, true, true]);

    const again = await demo(['--yes', '--pace', '0']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Ended 2 run\(s\) an earlier demo left active/);
    expect(again.stdout).toMatch(/History: already there/);
    const after = await statuses();
    expect(after.filter((r) => r.businessKey === today && r.status === 'PUBLISH_UNKNOWN')).toHaveLength(1);
  });
});
