// console.publicUrl (the deep links of webhooks) and console.publishChecks (the PUBLISH_UNKNOWN decision kit).
import { describe, expect, it } from 'vitest';
import { ConfigError, consolePublicUrl, loadConfig } from '../../../src/config/config.js';

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('the configuration was accepted');
}

const OIDC = JSON.stringify({
  issuer: 'https://idp.example/realms/data',
  audience: 'load-control',
  clientId: 'load-control-console',
  publicUrl: 'https://lc.example:8443',
});

describe('console.publicUrl', () => {
  it('is console.publicUrl without a trailing slash, else the sign-in’s auth.oidc.publicUrl, else none', () => {
    expect(consolePublicUrl(loadConfig({ env: { LC_CONSOLE__PUBLIC_URL: 'https://console.example/lc/' } }))).toBe(
      'https://console.example/lc',
    );
    expect(consolePublicUrl(loadConfig({ env: { LC_AUTH__OIDC: OIDC } }))).toBe('https://lc.example:8443');
    expect(consolePublicUrl(loadConfig({ env: { LC_AUTH__OIDC: OIDC, LC_CONSOLE__PUBLIC_URL: 'https://other.example' } }))).toBe(
      'https://other.example',
    );
    expect(consolePublicUrl(loadConfig({ env: {} }))).toBeNull();
  });

  it('must be a http or https URL', () => {
    expect(problems({ LC_CONSOLE__PUBLIC_URL: 'ftp://x' })).toEqual([expect.stringContaining('console.publicUrl')]);
  });
});

describe('console.publishChecks', () => {
  it('takes a list of {job, target, query}, target optional', () => {
    const checks = [{ job: 'ORDERS_*', query: 'SELECT count(*) FROM dwh.orders' }];
    expect(loadConfig({ env: { LC_CONSOLE__PUBLISH_CHECKS: JSON.stringify(checks) } }).console.publishChecks).toEqual([
      { job: 'ORDERS_*', target: null, query: 'SELECT count(*) FROM dwh.orders' },
    ]);
  });

  it('refuses a job that is no job key or pattern, and a check without a query, naming the key', () => {
    expect(problems({ LC_CONSOLE__PUBLISH_CHECKS: JSON.stringify([{ job: 'orders daily', query: 'x' }]) })).toEqual([
      expect.stringContaining('console.publishChecks[0].job'),
    ]);
    expect(problems({ LC_CONSOLE__PUBLISH_CHECKS: JSON.stringify([{ job: 'ORDERS' }]) })).toEqual([
      expect.stringContaining('console.publishChecks[0].query'),
    ]);
  });
});
