// Revocation without a restart: `serve` reads static tokens from auth.tokensFile and reads the file again when it
// changes (written in place or replaced by a rename) and on SIGHUP; a token removed from it stops working within
// 5 s, and a file that will not do leaves the tokens in force as they were.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { hashToken } from '../../src/auth/tokens.js';
import { startTestApiProcess, type TestApiProcess } from '../support/api-process.js';
import { until } from '../support/until.js';

const dir = mkdtempSync(join(tmpdir(), 'lc-tokens-'));
const file = join(dir, 'tokens.yaml');
const entry = (name: string) => ({ name, sha256: hashToken(`${name}-secret`), roles: ['viewer'] });
const write = (names: string[], path = file) => writeFileSync(path, stringify(names.map(entry)));
let api: TestApiProcess;

beforeAll(async () => {
  write(['kept', 'revoked']);
  api = await startTestApiProcess({ env: { LC_AUTH__TOKENS_FILE: file } });
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

const status = async (name: string) =>
  (await api.gql('{ me { name } }', {}, { token: null, headers: { Authorization: `Bearer ${name}-secret` } })).status;

describe('auth.tokensFile in a running serve', () => {
  it('stops a removed token within 5 s and takes a new one, written in place or replaced by a rename', async () => {
    expect([await status('kept'), await status('revoked'), await status('added')]).toEqual([200, 200, 401]);
    write(['kept']);
    await until('the removed token to be refused', async () => (await status('revoked')) === 401, 5_000);
    expect(await status('kept')).toBe(200);

    write(['kept', 'added'], `${file}.new`);
    renameSync(`${file}.new`, file);
    await until('the added token to be accepted', async () => (await status('added')) === 200, 5_000);
  });

  it('keeps the tokens in force when the file will not do, and re-reads it on SIGHUP', async () => {
    writeFileSync(file, '- name: broken\n  sha256: not-a-digest\n  roles: [viewer]\n');
    process.kill(api.pid(), 'SIGHUP');
    // nothing to wait for but the next poll: the file was seen and refused, the old tokens still work
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect([await status('kept'), await status('added')]).toEqual([200, 200]);
    write(['added']);
    process.kill(api.pid(), 'SIGHUP');
    await until('the file to be read again', async () => (await status('kept')) === 401, 5_000);
    expect(await status('added')).toBe(200);
  });
});
