import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it, expect } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../../src/config/config.js';
import { formatTokenEntry, generateToken, hashToken, tokenConfigEntry } from '../../../src/auth/tokens.js';

const tempDir = mkdtempSync(join(tmpdir(), 'lc-tokens-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

function writeTemp(text: string): string {
  const path = join(tempDir, 'config.yaml');
  writeFileSync(path, text);
  return path;
}

describe('hashToken', () => {
  it('is the SHA-256 hex digest', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('generateToken', () => {
  it('returns lc_ and 32 random bytes in base64url', () => {
    const token = generateToken();
    expect(token).toMatch(/^lc_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token.slice(3), 'base64url')).toHaveLength(32);
  });

  it('does not repeat', () => {
    const tokens = new Set(Array.from({ length: 200 }, generateToken));
    expect(tokens.size).toBe(200);
  });
});

describe('tokenConfigEntry', () => {
  it('holds the digest, not the token', () => {
    expect(tokenConfigEntry('nifi-prod', ['nifi'], 'abc')).toEqual({
      name: 'nifi-prod',
      sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      roles: ['nifi'],
    });
  });

  it('drops repeated roles', () => {
    expect(tokenConfigEntry('ops', ['operator', 'viewer', 'operator'], 'x').roles).toEqual(['operator', 'viewer']);
  });

  it('refuses unknown roles, no roles, bad names and empty tokens', () => {
    expect(() => tokenConfigEntry('ops', ['operator', 'admin'], 'x')).toThrow(/unknown role "admin"/);
    expect(() => tokenConfigEntry('ops', [], 'x')).toThrow(/at least one role/);
    expect(() => tokenConfigEntry('', ['nifi'], 'x')).toThrow(/name/);
    expect(() => tokenConfigEntry('n'.repeat(201), ['nifi'], 'x')).toThrow(/name/);
    expect(() => tokenConfigEntry('ops', ['nifi'], '')).toThrow(/empty/);
  });
});

describe('formatTokenEntry', () => {
  it('renders a YAML list item that parses back to the entry', () => {
    const entry = tokenConfigEntry('ci: "deploy" #1', ['nifi', 'operator'], generateToken());
    expect(parse(formatTokenEntry(entry))).toEqual([entry]);
  });

  it('is accepted by the configuration when placed under auth.tokens', () => {
    const token = generateToken();
    const entry = tokenConfigEntry('nifi', ['nifi'], token);
    const snippet = formatTokenEntry(entry).replace(/^/gm, '    ');
    const config = loadConfig({ env: {}, configPath: writeTemp(`auth:\n  tokens:\n${snippet}`) });
    expect(config.auth.tokens).toEqual([{ name: 'nifi', sha256: hashToken(token), roles: ['nifi'] }]);
  });
});
