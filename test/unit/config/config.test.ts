import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it, expect } from 'vitest';
import { ConfigError, describeConfig, loadConfig, type Config } from '../../../src/config/config.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const DIGEST = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
const OTHER_DIGEST = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

const tempDir = mkdtempSync(join(tmpdir(), 'lc-config-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

let fileCount = 0;
function writeConfig(yaml: string): string {
  const path = join(tempDir, `config-${++fileCount}.yaml`);
  writeFileSync(path, yaml);
  return path;
}

/** The problems a ConfigError reports; fails the test if loading succeeds or throws anything else. */
function problems(load: () => Config): readonly string[] {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

function fromYaml(yaml: string, env: Record<string, string> = {}): Config {
  return loadConfig({ configPath: writeConfig(yaml), env });
}

describe('loadConfig defaults', () => {
  it('returns the built-in defaults without file or environment', () => {
    expect(loadConfig({ env: {} })).toEqual({
      server: { port: 8080, host: '0.0.0.0', shutdownTimeout: 30_000, shutdownDelay: 0, corsOrigins: [], executionThreads: 1 },
      database: {
        url: null,
        migrationUrl: null,
        directUrl: null,
        poolSize: 10,
        txAttempts: 5,
        connectTimeout: 2_000,
        acquireTimeout: 3_000,
        statementTimeout: 5_000,
      },
      auth: { tokens: [], tokensFile: null, oidc: null },
      nifi: { receiverUrl: null, timeoutSeconds: 10 },
      recovery: {
        mode: 'FAIL',
        stale: 90 * MINUTE,
        extractQueryTimeout: 60 * MINUTE,
        runTimeout: 6 * HOUR,
        maxAttempts: 3,
        validationStale: 2 * HOUR,
        publishStale: 2 * HOUR,
        sweeperInterval: MINUTE,
      },
      dispatch: {
        maxAttempts: 20,
        backoffMin: 5_000,
        backoffMax: 5 * MINUTE,
        ackTimeout: 10 * MINUTE,
        lease: 60_000,
        pollInterval: 5_000,
        batch: 20,
      },
      backfill: { pumpInterval: 5_000 },
      cleanup: { successRetention: 3 * DAY, failedRetention: 14 * DAY, maxBatch: 200 },
      retention: { ledger: 90 * DAY, exportDir: null },
      alerts: { webhooks: [] },
      lineage: { enabled: false, url: null, namespace: 'load-control', producer: 'urn:load-control', headers: {}, jobs: {} },
      gates: { credentials: [] },
      sources: { pools: [] },
      bulk: { maxTargets: 500 },
      console: { publicUrl: null, publishChecks: [] },
      monitor: { stallAfter: 600_000 },
      resume: { snapshotHorizon: 15 * MINUTE, snapshotHorizonByJob: {} },
      logging: { level: 'info', format: 'json', requests: false, bodyMax: 2000 },
      tracing: { endpoint: null, serviceName: 'load-control', sampleRatio: 1, headers: {} },
    });
  });

  it('ignores locale variables that share the LC_ prefix', () => {
    expect(loadConfig({ env: { LC_ALL: 'C.UTF-8', LC_CTYPE: 'en_US.UTF-8', LC_TERMINAL: 'iTerm2' } }).server.port).toBe(8080);
  });
});

describe('loadConfig YAML file', () => {
  it('reads values from the file and fills the rest with defaults', () => {
    const config = fromYaml(`
server:
  port: 9090
database:
  url: postgres://lc:secret@db.example:5432/lc
  poolSize: 4
auth:
  tokens:
    - name: nifi-prod
      sha256: ${DIGEST.toUpperCase()}
      roles: [nifi]
nifi:
  receiverUrl: https://nifi.example:9443/pg05
  timeoutSeconds: 2.5
recovery:
  mode: REISSUE
  stale: PT2H
  extractQueryTimeout: 1800
cleanup:
  successRetention: P1DT12H
logging:
  level: WARN
  format: pretty
`);
    expect(config.server).toEqual({
      port: 9090,
      host: '0.0.0.0',
      shutdownTimeout: 30_000,
      shutdownDelay: 0,
      corsOrigins: [],
      executionThreads: 1,
    });
    expect(config.database).toEqual({
      url: 'postgres://lc:secret@db.example:5432/lc',
      migrationUrl: null,
      directUrl: null,
      poolSize: 4,
      txAttempts: 5,
      connectTimeout: 2_000,
      acquireTimeout: 3_000,
      statementTimeout: 5_000,
    });
    expect(config.auth.tokens).toEqual([{ name: 'nifi-prod', sha256: DIGEST, roles: ['nifi'] }]);
    expect(config.nifi).toEqual({ receiverUrl: 'https://nifi.example:9443/pg05', timeoutSeconds: 2.5 });
    expect(config.recovery).toMatchObject({ mode: 'REISSUE', stale: 2 * HOUR, extractQueryTimeout: 30 * MINUTE });
    expect(config.cleanup.successRetention).toBe(36 * HOUR);
    expect(config.logging).toEqual({ level: 'warn', format: 'pretty', requests: false, bodyMax: 2000 });
  });

  it('accepts durations as ISO-8601 or (fractional) seconds', () => {
    const config = fromYaml(`
dispatch:
  backoffMin: 0.5
  backoffMax: "90"
  ackTimeout: PT0.5S
  lease: PT1H30M
cleanup:
  failedRetention: P3D
`);
    expect(config.dispatch).toMatchObject({ backoffMin: 500, backoffMax: 90_000, ackTimeout: 500, lease: 90 * MINUTE });
    expect(config.cleanup.failedRetention).toBe(3 * DAY);
  });

  it('reads the ledger retention from the file or from LC_RETENTION__LEDGER', () => {
    expect(fromYaml('retention:\n  ledger: P30D\n').retention.ledger).toBe(30 * DAY);
    expect(fromYaml('retention:\n  ledger: P30D\n', { LC_RETENTION__LEDGER: 'P400D' }).retention.ledger).toBe(400 * DAY);
  });

  it('treats an empty file and empty sections as defaults', () => {
    expect(fromYaml('')).toEqual(loadConfig({ env: {} }));
    expect(fromYaml('server:\n  # port: 1\n').server.port).toBe(8080);
  });

  it('is selected by LC_CONFIG, and configPath wins over LC_CONFIG', () => {
    const viaEnv = writeConfig('server:\n  port: 7001\n');
    const viaOption = writeConfig('server:\n  port: 7002\n');
    expect(loadConfig({ env: { LC_CONFIG: viaEnv } }).server.port).toBe(7001);
    expect(loadConfig({ configPath: viaOption, env: { LC_CONFIG: viaEnv } }).server.port).toBe(7002);
  });

  it('refuses a missing file, naming the path', () => {
    const missing = join(tempDir, 'missing.yaml');
    expect(problems(() => loadConfig({ configPath: missing, env: {} }))).toEqual([`config: file not found: ${missing}`]);
    expect(problems(() => loadConfig({ env: { LC_CONFIG: missing } }))).toEqual([`config: file not found: ${missing}`]);
  });

  it('refuses malformed YAML and a file that is not a mapping', () => {
    expect(problems(() => fromYaml('server: [1\n'))[0]).toMatch(/invalid YAML/);
    expect(problems(() => fromYaml('server:\n  port: 1\n  port: 2\n'))[0]).toMatch(/invalid YAML/);
    expect(problems(() => fromYaml('- server\n'))[0]).toMatch(/must be a mapping of sections/);
  });
});

describe('loadConfig environment', () => {
  it('overrides single YAML keys and keeps the others', () => {
    const config = fromYaml('recovery:\n  stale: PT3H\n  maxAttempts: 7\n', {
      LC_RECOVERY__STALE: 'PT2H',
      LC_DISPATCH__BATCH: '7',
      LC_LOGGING__LEVEL: 'DEBUG',
    });
    expect(config.recovery).toMatchObject({ stale: 2 * HOUR, maxAttempts: 7 });
    expect(config.dispatch.batch).toBe(7);
    expect(config.logging.level).toBe('debug');
  });

  it('takes logging.requests as true or false, from YAML or as the words in an environment variable', () => {
    expect(fromYaml('logging:\n  requests: true\n  bodyMax: 500\n').logging).toMatchObject({ requests: true, bodyMax: 500 });
    expect(loadConfig({ env: { LC_LOGGING__REQUESTS: ' TRUE ' } }).logging.requests).toBe(true);
    expect(loadConfig({ env: { LC_LOGGING__REQUESTS: 'false' } }).logging.requests).toBe(false);
    expect(problems(() => loadConfig({ env: { LC_LOGGING__REQUESTS: 'yes' } }))).toEqual([
      'config: logging.requests: must be true or false (from LC_LOGGING__REQUESTS)',
    ]);
  });

  it('matches section and key ignoring case and underscores', () => {
    for (const variable of ['LC_RECOVERY__EXTRACT_QUERY_TIMEOUT', 'LC_RECOVERY__EXTRACTQUERYTIMEOUT', 'LC_recovery__extractQueryTimeout']) {
      expect(loadConfig({ env: { [variable]: 'PT10M' } }).recovery.extractQueryTimeout).toBe(10 * MINUTE);
    }
    expect(loadConfig({ env: { LC_NIFI__TIMEOUT_SECONDS: '2.5' } }).nifi.timeoutSeconds).toBe(2.5);
  });

  it('refuses two variables setting the same key', () => {
    expect(problems(() => loadConfig({ env: { LC_SERVER__PORT: '1', LC_server__port: '2' } }))).toEqual([
      'config: LC_server__port: server.port is already set by LC_SERVER__PORT',
    ]);
  });

  it('takes auth.tokens as a JSON array', () => {
    const tokens = JSON.stringify([{ name: 'ops', sha256: DIGEST, roles: ['operator', 'viewer'] }]);
    expect(loadConfig({ env: { LC_AUTH__TOKENS: tokens } }).auth.tokens).toEqual([
      { name: 'ops', sha256: DIGEST, roles: ['operator', 'viewer'] },
    ]);
    expect(problems(() => loadConfig({ env: { LC_AUTH__TOKENS: '[{' } }))).toEqual([
      'config: auth.tokens: must be a JSON array of {name, sha256, roles} when given as text (from LC_AUTH__TOKENS)',
    ]);
  });

  it('honours DATABASE_URL and PORT above everything else', () => {
    const config = fromYaml('server:\n  port: 9000\ndatabase:\n  url: postgres://file/db\n', {
      LC_SERVER__PORT: '9001',
      LC_DATABASE__URL: 'postgres://lc-env/db',
      PORT: '9002',
      DATABASE_URL: 'postgresql://env/db',
    });
    expect(config.server.port).toBe(9002);
    expect(config.database.url).toBe('postgresql://env/db');
  });

  it('ignores empty DATABASE_URL and PORT', () => {
    const config = loadConfig({ env: { PORT: '', DATABASE_URL: '' } });
    expect(config.server.port).toBe(8080);
    expect(config.database.url).toBeNull();
  });

  it('validates PORT like the rest, naming the variable', () => {
    expect(problems(() => loadConfig({ env: { PORT: 'http' } }))).toEqual([
      'config: server.port: must be an integer between 1 and 65535 (from PORT)',
    ]);
  });
});

describe('loadConfig refuses invalid configuration, naming the key', () => {
  it.each([
    ['an unknown section', 'servers:\n  port: 1\n', 'config: servers: unknown section'],
    ['an unknown key', 'server:\n  prot: 1\n', 'config: server.prot: unknown key'],
    ['a section that is not a mapping', 'server: 8080\n', 'config: server: must be a mapping'],
    ['a bad recovery mode', 'recovery:\n  mode: SOMETIMES\n', 'config: recovery.mode: must be one of FAIL, REISSUE (got "SOMETIMES")'],
    [
      'stale not above extractQueryTimeout',
      'recovery:\n  stale: PT30M\n',
      'config: recovery.stale: must exceed recovery.extractQueryTimeout (PT1H)',
    ],
    [
      "a stall threshold not below the sweeper's",
      'monitor:\n  stallAfter: PT2H\n',
      'config: monitor.stallAfter: must be shorter than recovery.stale (PT1H30M): a stall is flagged before the sweeper acts',
    ],
    ['a port out of range', 'server:\n  port: 70000\n', 'config: server.port: must be an integer between 1 and 65535'],
    ['a fractional count', 'dispatch:\n  batch: 1.5\n', 'config: dispatch.batch: must be an integer >= 1'],
    ['a zero count', 'cleanup:\n  maxBatch: 0\n', 'config: cleanup.maxBatch: must be an integer >= 1'],
    [
      'a malformed duration',
      'dispatch:\n  ackTimeout: PT\n',
      'config: dispatch.ackTimeout: invalid duration "PT": expected ISO-8601 (e.g. PT90M, P3D, PT1H30M) or a non-negative number of seconds',
    ],
    ['a zero duration', 'recovery:\n  runTimeout: 0\n', 'config: recovery.runTimeout: must be greater than zero'],
    [
      'a ledger retention that is no duration',
      'retention:\n  ledger: banana\n',
      'config: retention.ledger: invalid duration "banana": expected ISO-8601 (e.g. PT90M, P3D, PT1H30M) or a non-negative number of seconds',
    ],
    ['a zero ledger retention', 'retention:\n  ledger: P0D\n', 'config: retention.ledger: must be greater than zero'],
    [
      'a negative ledger retention',
      'retention:\n  ledger: -86400\n',
      'config: retention.ledger: invalid duration -86400: expected ISO-8601 (e.g. PT90M, P3D, PT1H30M) or a non-negative number of seconds',
    ],
    [
      'a timer interval too long for setTimeout',
      'dispatch:\n  pollInterval: P30D\n',
      'config: dispatch.pollInterval: must be at most P24DT20H31M23.647S (the timer limit)',
    ],
    [
      'a lease not above the NiFi timeout',
      'nifi:\n  timeoutSeconds: 60\n',
      'config: dispatch.lease: must exceed nifi.timeoutSeconds (PT1M)',
    ],
    [
      'backoffMax below backoffMin',
      'dispatch:\n  backoffMin: PT10M\n',
      'config: dispatch.backoffMax: must be at least dispatch.backoffMin (PT10M)',
    ],
    [
      'a shutdown delay not below the shutdown timeout',
      'server:\n  shutdownDelay: PT30S\n',
      'config: server.shutdownDelay: must be shorter than server.shutdownTimeout (PT30S), which it is part of',
    ],
    [
      'a negative shutdown delay',
      'server:\n  shutdownDelay: -1\n',
      'config: server.shutdownDelay: invalid duration -1: expected ISO-8601 (e.g. PT90M, P3D, PT1H30M) or a non-negative number of seconds',
    ],
    ['a non-positive NiFi timeout', 'nifi:\n  timeoutSeconds: 0\n', 'config: nifi.timeoutSeconds: must be greater than zero'],
    ['a non-HTTP receiver URL', 'nifi:\n  receiverUrl: ftp://nifi/\n', 'config: nifi.receiverUrl: must be a http or https URL'],
    ['a non-PostgreSQL database URL', 'database:\n  url: mysql://db/x\n', 'config: database.url: must be a postgres or postgresql URL'],
    [
      'a direct URL that is not PostgreSQL',
      'database:\n  directUrl: http://pgbouncer:6432/lc\n',
      'config: database.directUrl: must be a postgres or postgresql URL',
    ],
    [
      'an unknown log level',
      'logging:\n  level: verbose\n',
      'config: logging.level: must be one of trace, debug, info, warn, error, fatal (got "verbose")',
    ],
  ])('%s', (_, yaml, message) => {
    expect(problems(() => fromYaml(yaml))).toEqual([message]);
  });

  it.each([
    [
      'a bad sha256',
      [{ name: 'a', sha256: 'abc', roles: ['nifi'] }],
      'config: auth.tokens[0].sha256: must be a SHA-256 digest (64 hexadecimal characters)',
    ],
    [
      'duplicate token names',
      [
        { name: 'a', sha256: DIGEST, roles: ['nifi'] },
        { name: 'a', sha256: OTHER_DIGEST, roles: ['viewer'] },
      ],
      'config: auth.tokens[1].name: duplicate of auth.tokens[0].name',
    ],
    [
      'the same digest under two names',
      [
        { name: 'a', sha256: DIGEST, roles: ['nifi'] },
        { name: 'b', sha256: DIGEST.toUpperCase(), roles: ['viewer'] },
      ],
      'config: auth.tokens[1].sha256: duplicate of auth.tokens[0].sha256',
    ],
    [
      'an unknown role',
      [{ name: 'a', sha256: DIGEST, roles: ['admin'] }],
      'config: auth.tokens[0].roles[0]: unknown role "admin" (expected nifi, operator, viewer)',
    ],
    ['no roles', [{ name: 'a', sha256: DIGEST, roles: [] }], 'config: auth.tokens[0].roles: must list at least one role'],
    ['a repeated role', [{ name: 'a', sha256: DIGEST, roles: ['nifi', 'nifi'] }], 'config: auth.tokens[0].roles: must not repeat a role'],
    ['a missing field', [{ name: 'a', roles: ['nifi'] }], 'config: auth.tokens[0].sha256: is required'],
    ['an unknown token key', [{ name: 'a', sha256: DIGEST, roles: ['nifi'], role: 'x' }], 'config: auth.tokens[0].role: unknown key'],
    [
      'an over-long name',
      [{ name: 'n'.repeat(201), sha256: DIGEST, roles: ['nifi'] }],
      'config: auth.tokens[0].name: must be at most 200 characters',
    ],
  ])('%s', (_, tokens, message) => {
    expect(problems(() => fromYaml(JSON.stringify({ auth: { tokens } })))).toEqual([message]);
  });

  it.each([
    ['LC_SERVERS__PORT', 'config: LC_SERVERS__PORT: unknown section "SERVERS"'],
    ['LC_SERVER__PROT', 'config: LC_SERVER__PROT: unknown key "server.PROT"'],
    ['LC_SERVER_PORT', 'config: LC_SERVER_PORT: not a setting; write LC_<SECTION>__<KEY>, e.g. LC_RECOVERY__STALE'],
  ])('unknown environment setting %s', (variable, message) => {
    expect(problems(() => loadConfig({ env: { [variable]: '1' } }))).toEqual([message]);
  });

  it('names the variable an invalid value came from', () => {
    expect(problems(() => loadConfig({ env: { LC_RECOVERY__MODE: 'SOMETIMES' } }))).toEqual([
      'config: recovery.mode: must be one of FAIL, REISSUE (got "SOMETIMES") (from LC_RECOVERY__MODE)',
    ]);
  });

  it('lists every problem at once', () => {
    const found = problems(() => fromYaml('server:\n  prot: 1\n  port: 70000\nrecovery:\n  stale: PT30M\n', { LC_BOGUS__X: '1' }));
    expect(found).toEqual([
      'config: LC_BOGUS__X: unknown section "BOGUS"',
      'config: server.port: must be an integer between 1 and 65535',
      'config: server.prot: unknown key',
      'config: recovery.stale: must exceed recovery.extractQueryTimeout (PT1H)',
    ]);
    expect(() => fromYaml('server:\n  prot: 1\n')).toThrow('config: server.prot: unknown key');
  });

  it('skips a cross-field rule while one of its fields is itself invalid', () => {
    expect(problems(() => fromYaml('recovery:\n  extractQueryTimeout: soon\n'))).toEqual([
      'config: recovery.extractQueryTimeout: invalid duration "soon": expected ISO-8601 (e.g. PT90M, P3D, PT1H30M) or a non-negative number of seconds',
    ]);
  });
});

describe('resume', () => {
  it('takes a default snapshot horizon and one per job, from YAML or the environment', () => {
    const config = fromYaml('resume:\n  snapshotHorizon: PT1H\n  snapshotHorizonByJob: { ORACLE_INSP_DTL_DAILY: PT3H, SALES: 600 }\n');
    expect(config.resume).toEqual({ snapshotHorizon: HOUR, snapshotHorizonByJob: { ORACLE_INSP_DTL_DAILY: 3 * HOUR, SALES: 10 * MINUTE } });
    expect(loadConfig({ env: { LC_RESUME__SNAPSHOT_HORIZON: 'PT2H' } }).resume.snapshotHorizon).toBe(2 * HOUR);
  });

  it('refuses a job key that is not one, or a duration that is not one, naming the key', () => {
    expect(problems(() => fromYaml('resume:\n  snapshotHorizonByJob: { sales: PT1H }\n'))).toEqual([
      expect.stringMatching(/^config: resume\.snapshotHorizonByJob\.sales: must be a job key/),
    ]);
    expect(problems(() => fromYaml('resume:\n  snapshotHorizonByJob: { SALES: soon }\n'))).toEqual([
      expect.stringMatching(/^config: resume\.snapshotHorizonByJob\.SALES: /),
    ]);
  });
});

describe('sources.pools and bulk.maxTargets', () => {
  it('reads pools from YAML with the default wait, and from LC_SOURCES__POOLS as JSON', () => {
    const yaml = fromYaml(`
sources:
  pools:
    - { name: oracle-erp, maxRunning: 8, jobs: [ORACLE_A, ORACLE_B] }
    - { name: oracle-crm, maxRunning: "0", retryAfterSeconds: 5 }
bulk: { maxTargets: 50 }
`);
    expect(yaml.sources.pools).toEqual([
      { name: 'oracle-erp', maxRunning: 8, retryAfterSeconds: 30, jobs: ['ORACLE_A', 'ORACLE_B'] },
      { name: 'oracle-crm', maxRunning: 0, retryAfterSeconds: 5, jobs: [] },
    ]);
    expect(yaml.bulk.maxTargets).toBe(50);
    const env = loadConfig({ env: { LC_SOURCES__POOLS: '[{"name": "x", "maxRunning": 2, "jobs": ["J"]}]', LC_BULK__MAX_TARGETS: '7' } });
    expect(env.sources.pools).toEqual([{ name: 'x', maxRunning: 2, retryAfterSeconds: 30, jobs: ['J'] }]);
    expect(env.bulk.maxTargets).toBe(7);
  });

  it('refuses a bad name, limit, wait or job key, a pool named twice and a job in two pools, naming each', () => {
    const found = problems(() =>
      fromYaml(`
sources:
  pools:
    - { name: "bad name", maxRunning: -1, retryAfterSeconds: 0, jobs: [lower] }
    - { name: a, maxRunning: 1, jobs: [J] }
    - { name: a, maxRunning: 1, jobs: [J] }
bulk: { maxTargets: 0 }
`),
    );
    expect(found).toEqual([
      'config: sources.pools[0].name: must be 1 to 100 letters, digits, ".", "_" or "-", starting with a letter or digit',
      'config: sources.pools[0].maxRunning: must be >= 0',
      'config: sources.pools[0].retryAfterSeconds: must be >= 1',
      'config: sources.pools[0].jobs[0]: must match ^[A-Z0-9_]{1,200}$',
      'config: sources.pools[2].name: duplicate of sources.pools[1].name (a)',
      'config: sources.pools[2].jobs[0]: J is already in pool a: a job is in one pool',
      'config: bulk.maxTargets: must be an integer between 1 and 10000',
    ]);
  });
});

describe('alerts.webhooks', () => {
  const webhooks = (value: unknown) => loadConfig({ env: { LC_ALERTS__WEBHOOKS: JSON.stringify(value) } }).alerts.webhooks;

  it('reads receivers from YAML with their defaults: every kind, generic JSON, no headers, a name from the host and a digest of the URL', () => {
    const path = writeConfig(`
alerts:
  webhooks:
    - url: https://hooks.slack.example/services/T0/B0/xyz
      format: Slack
      kinds: [DISPATCH_DEAD, PUBLISH_UNKNOWN]
      headers: { X-Team: data }
    - url: http://alerts.example:9000/lc
      name: pager
`);
    const [slack, pager] = loadConfig({ configPath: path, env: {} }).alerts.webhooks;
    expect(slack).toEqual({
      name: expect.stringMatching(/^hooks\.slack\.example-[0-9a-f]{8}$/),
      url: 'https://hooks.slack.example/services/T0/B0/xyz',
      kinds: ['DISPATCH_DEAD', 'PUBLISH_UNKNOWN'],
      headers: { 'X-Team': 'data' },
      format: 'slack',
    });
    expect(pager).toEqual({ name: 'pager', url: 'http://alerts.example:9000/lc', kinds: null, headers: {}, format: 'generic' });
    // the same URL always gets the same name: the outbox knows the receiver by it
    expect(webhooks([{ url: 'https://hooks.slack.example/services/T0/B0/xyz' }])[0]!.name).toBe(slack!.name);
    expect(webhooks([{ url: 'https://hooks.slack.example/services/T0/B0/other' }])[0]!.name).not.toBe(slack!.name);
  });

  it.each([
    [[{ url: 'ftp://x.example/' }], 'config: alerts.webhooks[0].url: must be a http or https URL'],
    [[{}], 'config: alerts.webhooks[0].url: is required'],
    [[{ url: 'http://a.example', kinds: ['RUN_FAILED', 'NOPE'] }], 'config: alerts.webhooks[0].kinds[1]: unknown alert kind "NOPE"'],
    [[{ url: 'http://a.example', kinds: [] }], 'config: alerts.webhooks[0].kinds: must list at least one kind'],
    [[{ url: 'http://a.example', kinds: ['RUN_FAILED', 'RUN_FAILED'] }], 'config: alerts.webhooks[0].kinds: must not repeat a kind'],
    [[{ url: 'http://a.example', kinds: ['NO_DISPATCHER'] }], 'config: alerts.webhooks[0].kinds: must not name NO_DISPATCHER'],
    [
      [{ url: 'http://a.example', headers: { 'Idempotency-Key': 'x' } }],
      'config: alerts.webhooks[0].headers.Idempotency-Key: is set by every webhook call itself',
    ],
    [[{ url: 'http://a.example', headers: { 'Bad Name': 'x' } }], 'config: alerts.webhooks[0].headers.Bad Name: must be a header name'],
    [
      [{ url: 'http://a.example', headers: { 'X-A': 'a\r\nX-B: b' } }],
      'config: alerts.webhooks[0].headers.X-A: must not contain CR, LF or NUL',
    ],
    [[{ url: 'http://a.example', format: 'teams' }], 'config: alerts.webhooks[0].format: must be one of generic, slack'],
    [[{ url: 'http://a.example', name: 'has space' }], 'config: alerts.webhooks[0].name: must be letters'],
    [[{ url: 'http://a.example', extra: 1 }], 'config: alerts.webhooks[0].extra: unknown key'],
    [
      [
        { url: 'http://a.example/x', name: 'ops' },
        { url: 'http://b.example/y', name: 'ops' },
      ],
      'config: alerts.webhooks[1].name: duplicate of alerts.webhooks[0].name (ops)',
    ],
    [
      [{ url: 'http://a.example/x' }, { url: 'http://a.example/x' }],
      'config: alerts.webhooks[1].name: duplicate of alerts.webhooks[0].name',
    ],
    ['[not json', 'config: alerts.webhooks: must be a JSON array of {url, name, kinds, headers, format} when given as text'],
  ])('refuses %j', (value, expected) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    const found = problems(() => loadConfig({ env: { LC_ALERTS__WEBHOOKS: text } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(expected);
    expect(found[0]).toContain('(from LC_ALERTS__WEBHOOKS)');
  });
});

describe('lineage', () => {
  it('reads the endpoint, namespace, headers and each job’s datasets from YAML, and takes the switch from the environment', () => {
    const path = writeConfig(`
lineage:
  url: http://marquez.example:5000/api/v1/lineage
  namespace: dwh-loads
  headers: { Authorization: Bearer marquez-key }
  jobs:
    ORACLE_INSP_DTL_DAILY:
      source: oracle://oracle.example:1521/ORCLPDB1
      target: hive://metastore.example:9083
      targetTable: dw.insp_dtl
`);
    const { lineage } = loadConfig({ configPath: path, env: { LC_LINEAGE__ENABLED: 'true' } });
    expect(lineage).toEqual({
      enabled: true,
      url: 'http://marquez.example:5000/api/v1/lineage',
      namespace: 'dwh-loads',
      producer: 'urn:load-control',
      headers: { Authorization: 'Bearer marquez-key' },
      jobs: {
        ORACLE_INSP_DTL_DAILY: {
          source: 'oracle://oracle.example:1521/ORCLPDB1',
          sourceTable: null,
          target: 'hive://metastore.example:9083',
          targetTable: 'dw.insp_dtl',
          partitionColumn: 'business_date',
        },
      },
    });
    expect(describeConfig(loadConfig({ configPath: path, env: {} })).lineage).toMatchObject({ headers: { Authorization: '***' } });
  });

  it.each([
    [{ LC_LINEAGE__ENABLED: 'true' }, 'config: lineage.url: is required when lineage.enabled is true'],
    [{ LC_LINEAGE__ENABLED: 'yes' }, 'config: lineage.enabled: must be true or false'],
    [{ LC_LINEAGE__URL: 'kafka://broker:9092' }, 'config: lineage.url: must be a http or https URL'],
    [
      { LC_LINEAGE__JOBS: JSON.stringify({ J: { source: 'oracle://db:1521' } }) },
      'config: lineage.jobs.J.source: must be oracle://host:port/SERVICE_NAME',
    ],
    [
      { LC_LINEAGE__JOBS: JSON.stringify({ J: { target: 'hive://metastore' } }) },
      'config: lineage.jobs.J.target: must be hive://host:port',
    ],
    [
      { LC_LINEAGE__JOBS: JSON.stringify({ J: { targetTable: 'insp_dtl' } }) },
      'config: lineage.jobs.J.targetTable: must be database.table',
    ],
    [{ LC_LINEAGE__JOBS: JSON.stringify({ J: { table: 'x.y' } }) }, 'config: lineage.jobs.J.table: unknown key'],
    [{ LC_LINEAGE__JOBS: '{not json' }, 'config: lineage.jobs: must be a JSON object of job keys to'],
  ])('refuses %j', (env, expected) => {
    const found = problems(() => loadConfig({ env }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(expected);
  });
});

describe('gates.credentials', () => {
  it('turns bearerToken and basic into the Authorization header of their origin, keeps airflowToken’s user, and describeConfig shows no secret', () => {
    const config = fromYaml(`
gates:
  credentials:
    - origin: https://airflow.example:8080
      bearerToken: eyJ.secret
    - origin: http://dagster.example
      basic: { username: lc, password: "p:ss" }
      headers: { X-Team: data }
    - origin: https://acme.dagster.cloud
      headers: { Dagster-Cloud-Api-Token: user:secret }
    - origin: https://airflow2.example
      airflowToken: { username: lc, password: af-secret }
`);
    expect(config.gates.credentials).toEqual([
      { origin: 'https://airflow.example:8080', headers: { Authorization: 'Bearer eyJ.secret' }, airflowToken: null },
      {
        origin: 'http://dagster.example',
        headers: { 'X-Team': 'data', Authorization: `Basic ${Buffer.from('lc:p:ss').toString('base64')}` },
        airflowToken: null,
      },
      { origin: 'https://acme.dagster.cloud', headers: { 'Dagster-Cloud-Api-Token': 'user:secret' }, airflowToken: null },
      { origin: 'https://airflow2.example', headers: {}, airflowToken: { username: 'lc', password: 'af-secret' } },
    ]);
    const described = JSON.stringify(describeConfig(config));
    for (const secret of ['eyJ.secret', 'user:secret', Buffer.from('lc:p:ss').toString('base64'), 'af-secret'])
      expect(described).not.toContain(secret);
    expect(describeConfig(config).gates).toEqual({
      credentials: [
        { origin: 'https://airflow.example:8080', headers: ['Authorization'], airflowToken: null },
        { origin: 'http://dagster.example', headers: ['X-Team', 'Authorization'], airflowToken: null },
        { origin: 'https://acme.dagster.cloud', headers: ['Dagster-Cloud-Api-Token'], airflowToken: null },
        { origin: 'https://airflow2.example', headers: [], airflowToken: { username: 'lc', password: '***' } },
      ],
    });
  });

  it.each([
    [[{ origin: 'https://airflow.example/api' }], 'config: gates.credentials[0].origin: must be an origin'],
    [[{ origin: 'ftp://airflow.example' }], 'config: gates.credentials[0].origin: must be an origin'],
    [
      [{ origin: 'https://a.example', bearerToken: 't', basic: { username: 'u', password: 'p' } }],
      'must give at most one of bearerToken, basic and airflowToken',
    ],
    [
      [{ origin: 'https://a.example', basic: { username: 'u', password: 'p' }, airflowToken: { username: 'u', password: 'p' } }],
      'must give at most one of bearerToken, basic and airflowToken',
    ],
    [
      [{ origin: 'https://a.example', basic: { username: 'u:x', password: 'p' } }],
      'config: gates.credentials[0].basic.username: must not contain ":"',
    ],
    [[{ origin: 'https://a.example', bearerToken: 'a\nb' }], 'config: gates.credentials[0].bearerToken: must not contain CR, LF or NUL'],
    [
      [{ origin: 'https://a.example', headers: { authorization: 'x' } }],
      'config: gates.credentials[0].headers.authorization: is set by the call itself',
    ],
    [
      [{ origin: 'https://a.example', headers: { 'X-Dispatch-Id': 'x' } }],
      'config: gates.credentials[0].headers.X-Dispatch-Id: is set by the call itself',
    ],
    [
      [{ origin: 'https://a.example' }, { origin: 'https://a.example' }],
      'config: gates.credentials[1].origin: duplicate of gates.credentials[0].origin',
    ],
  ])('refuses %j', (value, expected) => {
    const found = problems(() => loadConfig({ env: { LC_GATES__CREDENTIALS: JSON.stringify(value) } }));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(expected);
    expect(found[0]).toContain('(from LC_GATES__CREDENTIALS)');
  });
});

describe('loadConfig tracing', () => {
  it('reads the exporter endpoint, service name, sample ratio and headers from the file', () => {
    const config = fromYaml(`
tracing:
  endpoint: http://otel-collector:4318/v1/traces
  serviceName: load-control-eu
  sampleRatio: 0.25
  headers: { x-api-key: abc123 }
`);
    expect(config.tracing).toEqual({
      endpoint: 'http://otel-collector:4318/v1/traces',
      serviceName: 'load-control-eu',
      sampleRatio: 0.25,
      headers: { 'x-api-key': 'abc123' },
    });
  });

  it('takes every key from LC_TRACING__ variables, the headers as a JSON object', () => {
    const config = loadConfig({
      env: {
        LC_TRACING__ENDPOINT: 'https://collector.example/v1/traces',
        LC_TRACING__SAMPLE_RATIO: '0.5',
        LC_TRACING__SERVICE_NAME: 'lc',
        LC_TRACING__HEADERS: '{"Authorization":"Basic eDp5"}',
      },
    });
    expect(config.tracing).toEqual({
      endpoint: 'https://collector.example/v1/traces',
      serviceName: 'lc',
      sampleRatio: 0.5,
      headers: { Authorization: 'Basic eDp5' },
    });
  });

  it('refuses an endpoint that is not an HTTP URL, a ratio outside 0..1, and headers that are not headers', () => {
    expect(
      problems(() =>
        loadConfig({
          env: {
            LC_TRACING__ENDPOINT: 'grpc://collector:4317',
            LC_TRACING__SAMPLE_RATIO: '1.5',
            LC_TRACING__SERVICE_NAME: '',
            LC_TRACING__HEADERS: '{"bad header":"x","x-ok":"a\\nb"}',
          },
        }),
      ),
    ).toEqual([
      'config: tracing.endpoint: must be a http or https URL (from LC_TRACING__ENDPOINT)',
      'config: tracing.serviceName: must not be empty (from LC_TRACING__SERVICE_NAME)',
      'config: tracing.sampleRatio: must be between 0 and 1 (from LC_TRACING__SAMPLE_RATIO)',
      'config: tracing.headers.x-ok: must not hold a line break (from LC_TRACING__HEADERS)',
      'config: tracing.headers.bad header: must be an HTTP header name (from LC_TRACING__HEADERS)',
    ]);
    expect(problems(() => loadConfig({ env: { LC_TRACING__HEADERS: '[1' } }))).toEqual([
      'config: tracing.headers: must be a JSON object of header names to values when given as text (from LC_TRACING__HEADERS)',
    ]);
    expect(problems(() => fromYaml('tracing:\n  sampleRatio: half\n'))).toEqual([
      'config: tracing.sampleRatio: must be a number between 0 and 1',
    ]);
  });
});

describe('describeConfig', () => {
  const config = loadConfig({
    env: {
      DATABASE_URL: 'postgres://lc:s3cret@db.example:5432/lc?sslmode=require',
      LC_DATABASE__DIRECT_URL: 'postgres://lc:direct-s3cret@pg-primary.example:5432/lc',
      LC_NIFI__RECEIVER_URL: 'https://pg05:pw@nifi.example/receive',
      LC_AUTH__TOKENS: JSON.stringify([{ name: 'nifi-prod', sha256: DIGEST, roles: ['nifi'] }]),
      LC_TRACING__ENDPOINT: 'https://otel:collectorpw@collector.example/v1/traces',
      LC_TRACING__HEADERS: '{"x-api-key":"collector-key-123"}',
    },
  });

  it("hides passwords, token digests and the trace exporter's header values", () => {
    const described = describeConfig(config);
    const text = JSON.stringify(described);
    expect(text).not.toContain('s3cret');
    expect(described.database).toMatchObject({ directUrl: 'postgres://lc:***@pg-primary.example:5432/lc' });
    expect(text).not.toContain(':pw@');
    expect(text).not.toContain(DIGEST);
    expect(text).not.toContain('collectorpw');
    expect(text).not.toContain('collector-key-123');
    expect(described.tracing).toMatchObject({ endpoint: 'https://otel:***@collector.example/v1/traces', headers: { 'x-api-key': '***' } });
    expect(described.database).toMatchObject({ url: 'postgres://lc:***@db.example:5432/lc?sslmode=require' });
    expect(described.nifi).toMatchObject({ receiverUrl: 'https://pg05:***@nifi.example/receive' });
    expect(described.auth).toEqual({ tokens: [{ name: 'nifi-prod', roles: ['nifi'] }], tokensFile: null, oidc: null });
    expect(described.recovery).toEqual(config.recovery);
  });

  it('shows of an alert webhook its name, origin, kinds, format and header names only', () => {
    const withWebhook = loadConfig({
      env: {
        LC_ALERTS__WEBHOOKS: JSON.stringify([
          {
            url: 'https://hooks.slack.example/services/T0/B0/s3cretpath',
            format: 'slack',
            headers: { Authorization: 'Bearer hook-token' },
          },
        ]),
      },
    });
    const described = describeConfig(withWebhook);
    const text = JSON.stringify(described);
    expect(text).not.toContain('s3cretpath');
    expect(text).not.toContain('hook-token');
    expect(described.alerts).toEqual({
      webhooks: [
        {
          name: withWebhook.alerts.webhooks[0]!.name,
          origin: 'https://hooks.slack.example',
          kinds: null,
          headers: ['Authorization'],
          format: 'slack',
        },
      ],
    });
  });

  it('leaves the configuration untouched', () => {
    describeConfig(config);
    expect(config.database.url).toBe('postgres://lc:s3cret@db.example:5432/lc?sslmode=require');
    expect(config.auth.tokens[0]?.sha256).toBe(DIGEST);
  });
});

describe('loadConfig hardening keys', () => {
  it('reads server.tls, nifi.tls, CORS origins, the shutdown timeout and delay and the database timeouts', () => {
    const config = fromYaml(`
server:
  tls: { certFile: /etc/lc/server.crt, keyFile: /etc/lc/server.key, clientCaFile: /etc/lc/ca.crt, requireClientCert: true }
  shutdownTimeout: PT45S
  shutdownDelay: PT2S
  corsOrigins: [https://console.example:8443]
database:
  migrationUrl: postgres://owner@db.example/lc
  directUrl: postgresql://lc@pg-primary.example:5432/lc
  connectTimeout: 1
  acquireTimeout: PT2S
  statementTimeout: PT4S
nifi:
  tls: { caFile: /etc/lc/nifi-ca.crt, certFile: /etc/lc/worker.crt, keyFile: /etc/lc/worker.key }
`);
    expect(config.server.tls).toEqual({
      certFile: '/etc/lc/server.crt',
      keyFile: '/etc/lc/server.key',
      clientCaFile: '/etc/lc/ca.crt',
      requireClientCert: true,
    });
    expect(config.server.shutdownTimeout).toBe(45 * 1000);
    expect(config.server.shutdownDelay).toBe(2 * 1000);
    expect(config.server.corsOrigins).toEqual(['https://console.example:8443']);
    expect(config.database).toMatchObject({
      migrationUrl: 'postgres://owner@db.example/lc',
      directUrl: 'postgresql://lc@pg-primary.example:5432/lc',
      connectTimeout: 1000,
      acquireTimeout: 2000,
      statementTimeout: 4000,
    });
    expect(config.nifi.tls).toEqual({ caFile: '/etc/lc/nifi-ca.crt', certFile: '/etc/lc/worker.crt', keyFile: '/etc/lc/worker.key' });
  });

  it('takes the structured keys as JSON from the environment', () => {
    const config = loadConfig({
      env: {
        LC_SERVER__TLS: '{"certFile":"/c.crt","keyFile":"/c.key"}',
        LC_SERVER__CORS_ORIGINS: '["http://localhost:5173"]',
        LC_NIFI__TLS: '{"caFile":"/ca.crt"}',
      },
    });
    expect(config.server.tls).toEqual({ certFile: '/c.crt', keyFile: '/c.key', requireClientCert: false });
    expect(config.server.corsOrigins).toEqual(['http://localhost:5173']);
    expect(config.nifi.tls).toEqual({ caFile: '/ca.crt' });
  });

  it.each([
    [
      'a client certificate required without a CA',
      'server:\n  tls: { certFile: /c, keyFile: /k, requireClientCert: true }\n',
      'config: server.tls.clientCaFile: requireClientCert needs clientCaFile',
    ],
    ['a TLS section without its key file', 'server:\n  tls: { certFile: /c }\n', 'config: server.tls.keyFile: is required'],
    ['an unknown TLS key', 'server:\n  tls: { certFile: /c, keyFile: /k, ciphers: x }\n', 'config: server.tls.ciphers: unknown key'],
    [
      'a worker certificate without its key',
      'nifi:\n  tls: { certFile: /c }\n',
      'config: nifi.tls.keyFile: certFile and keyFile go together',
    ],
    [
      'an origin with a path',
      'server:\n  corsOrigins: [https://a.example/x]\n',
      'config: server.corsOrigins[0]: must be an origin such as https://console.example:8443',
    ],
    ['a zero statement timeout', 'database:\n  statementTimeout: 0\n', 'config: database.statementTimeout: must be greater than zero'],
  ])('refuses %s', (_name, yaml, expected) => {
    expect(problems(() => fromYaml(yaml))).toContain(expected);
  });
});

describe('auth.oidc', () => {
  const oidc = { issuer: 'https://idp.example/realms/lc', audience: 'load-control' };

  it('takes the provider from the environment as JSON, with defaults, and hides its client secret when described', () => {
    const env = { LC_AUTH__OIDC: JSON.stringify({ ...oidc, clientId: 'console', clientSecret: 'hush', publicUrl: 'https://lc.example' }) };
    const config = loadConfig({ env });
    expect(config.auth.oidc).toEqual({
      ...oidc,
      clientId: 'console',
      clientSecret: 'hush',
      publicUrl: 'https://lc.example',
      rolesClaim: 'roles',
      roleMapping: {},
      clockSkew: 30_000,
      jwksRefetchInterval: 60_000,
      scopes: 'openid profile email',
      sessionTtl: 8 * HOUR,
      sessionIdle: 30 * MINUTE,
    });
    expect(JSON.stringify(describeConfig(config))).not.toContain('hush');
  });

  it.each([
    [{ audience: 'x' }, 'config: auth.oidc.issuer: is required (from LC_AUTH__OIDC)'],
    [{ ...oidc, issuer: 'ftp://idp' }, 'config: auth.oidc.issuer: must be a http or https URL (from LC_AUTH__OIDC)'],
    [{ ...oidc, audience: '' }, 'config: auth.oidc.audience: must not be empty (from LC_AUTH__OIDC)'],
    [
      { ...oidc, roleMapping: { admins: ['root'] } },
      'config: auth.oidc.roleMapping.admins[0]: unknown role "root" (expected nifi, operator, viewer) (from LC_AUTH__OIDC)',
    ],
    [
      { ...oidc, clientId: 'console' },
      'config: auth.oidc.publicUrl: clientId needs publicUrl (the redirect URI is <publicUrl>/auth/callback) (from LC_AUTH__OIDC)',
    ],
    [{ ...oidc, clockSkew: 'soon' }, expect.stringMatching(/^config: auth\.oidc\.clockSkew: /)],
    [{ ...oidc, extra: 1 }, 'config: auth.oidc.extra: unknown key (from LC_AUTH__OIDC)'],
  ])('refuses %j', (value, message) => {
    expect(() => loadConfig({ env: { LC_AUTH__OIDC: JSON.stringify(value) } })).toThrow(expect.objectContaining({ problems: [message] }));
  });
});
