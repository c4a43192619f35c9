// `npm run demo:gate` (scripts/demo-gate.ts) prints the article's four lines, the same on every run.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => database?.drop());

it('prints exactly the four lines of the article, run after run', async () => {
  const env = { ...process.env, DATABASE_URL: database.url };
  for (let i = 0; i < 2; i++) {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/demo-gate.ts'], { cwd: root, env, timeout: 60_000 });
    expect(stdout).toBe(
      'Backfill completed today: false\nRequired business date ready: true\nFirst publication: true\nSame publication retried: false\n',
    );
  }
});
