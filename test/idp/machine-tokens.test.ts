// Machines: JWT bearer tokens issued by a real OpenID Provider (oidc-provider, a process of its own) to clients
// by the client-credentials grant, used against a `serve` process. Hostile tokens are refused 401 with nothing
// changed; a flood of unknown key ids costs the provider at most one key fetch per refetch interval; a key
// rotated in at the provider is followed; a client disabled at the provider stops working once its token expires.
import { randomUUID } from 'node:crypto';
import { decodeProtectedHeader, importJWK, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApiProcess, type TestApiProcess } from '../support/api-process.js';
import { CREATE_RUN, HDFS_ROOT, JOB } from '../support/fixtures.js';
import { signingKey, startTestProvider, type TestProvider } from '../support/oidc-provider.js';
import { until } from '../support/until.js';

const REFETCH_SECONDS = 3;
const TOKEN_TTL_SECONDS = 4;
let provider: TestProvider;
let api: TestApiProcess;

beforeAll(async () => {
  provider = await startTestProvider({
    accessTokenTtl: TOKEN_TTL_SECONDS,
    clients: [
      { id: 'nifi-node', secret: 'nifi-secret', grant: 'client_credentials', roles: ['lc-nifi'] },
      { id: 'reporting', secret: 'reporting-secret', grant: 'client_credentials', roles: ['viewer'] },
      { id: 'retired-node', secret: 'retired-secret', grant: 'client_credentials', roles: ['lc-nifi'] },
    ],
  });
  const oidc = {
    issuer: provider.issuer,
    audience: provider.settings.audience,
    rolesClaim: 'roles',
    roleMapping: { 'lc-nifi': ['nifi'] },
    clockSkew: 1,
    jwksRefetchInterval: REFETCH_SECONDS,
  };
  api = await startTestApiProcess({ env: { LC_AUTH__OIDC: JSON.stringify(oidc) } });
});
afterAll(async () => {
  await api?.close();
  await provider?.stop();
});

const bearer = (token: string) => ({ token: null, headers: { Authorization: `Bearer ${token}` } });
const me = (token: string) => api.gql<{ me: { name: string; roles: string[] } }>('{ me { name roles } }', {}, bearer(token));
const createRun = (token: string) =>
  api.gql<{ createRun: { runId: string } }>(
    CREATE_RUN,
    { input: { jobKey: JOB, businessKey: `BK_${randomUUID().slice(0, 8)}`, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_' } },
    bearer(token),
  );
const runCount = async () => Number((await api.sql.query('SELECT count(*) AS n FROM nifi_ops.load_run')).rows[0].n);

/** A token signed with the provider's own signing key, with claims of the test's choosing. */
async function forged(claims: Record<string, unknown>, options: { issuer?: string; audience?: string; expiresIn?: string | number } = {}) {
  const jwk = provider.settings.keys[0]!;
  return new SignJWT({ roles: ['lc-nifi'], client_id: 'nifi-node', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: jwk.kid! })
    .setIssuer(options.issuer ?? provider.issuer)
    .setAudience(options.audience ?? provider.settings.audience)
    .setSubject('nifi-node')
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '5m')
    .sign(await importJWK(jwk, 'RS256'));
}

describe('client-credentials tokens against serve', () => {
  it("are accepted with the roles the provider's claim maps to, and the client's name", async () => {
    const token = await provider.clientToken('nifi-node');
    expect((await me(token)).body.data!.me).toEqual({ name: 'nifi-node', roles: ['nifi'] });
    const created = await createRun(token);
    expect(created.status).toBe(200);
    expect(created.body.data!.createRun.runId).toMatch(/^[0-9a-f-]{36}$/);
    // a claim value that is a role's own name grants it; the role decides what the token may call
    const viewer = await provider.clientToken('reporting');
    expect((await me(viewer)).body.data!.me.roles).toEqual(['viewer']);
    expect([(await createRun(viewer)).status, (await createRun(viewer)).code]).toEqual([403, 'FORBIDDEN']);
  });

  it('refuses expired, wrong-audience, wrong-issuer, unsigned and tampered tokens with 401, and changes nothing', async () => {
    const genuine = await provider.clientToken('nifi-node');
    const [header, payload, signature] = genuine.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    const tampered = [header, Buffer.from(JSON.stringify({ ...claims, roles: ['operator'] })).toString('base64url'), signature].join('.');
    const hostile = {
      expired: await forged({}, { expiresIn: Math.floor(Date.now() / 1000) - 60 }),
      'wrong audience': await forged({}, { audience: 'https://another-api.test' }),
      'wrong issuer': await forged({}, { issuer: 'https://evil.test' }),
      'alg none': new UnsecuredJWT({ roles: ['lc-nifi'] })
        .setIssuer(provider.issuer)
        .setAudience(provider.settings.audience)
        .setSubject('nifi-node')
        .setExpirationTime('5m')
        .encode(),
      'tampered signature': `${header}.${payload}.${signature!.slice(0, -4)}${signature!.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`,
      'tampered claims': tampered,
    };
    const before = await runCount();
    for (const [name, token] of Object.entries(hostile)) {
      const res = await createRun(token);
      expect([res.status, res.code, res.headers.get('www-authenticate')], name).toEqual([401, 'UNAUTHENTICATED', 'Bearer']);
      expect(res.body.data, name).toBeUndefined();
    }
    expect(await runCount()).toBe(before);
    expect((await createRun(genuine)).status).toBe(200);
  });

  it('answers a flood of tokens with unknown key ids 401, costing the provider at most one key fetch per interval', async () => {
    const stranger = await signingKey('not-the-providers');
    const key = await importJWK(stranger, 'RS256');
    const flood = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        new SignJWT({ roles: ['lc-nifi'] })
          .setProtectedHeader({ alg: 'RS256', kid: `unknown-${i}` })
          .setIssuer(provider.issuer)
          .setAudience(provider.settings.audience)
          .setSubject('intruder')
          .setExpirationTime('5m')
          .sign(key),
      ),
    );
    const before = await runCount();
    const fetchesBefore = await provider.jwksFetches();
    const started = Date.now();
    // 120 requests: at most one fetch for each refetch interval they span
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(flood.map((token) => createRun(token)));
      expect(answers.map((a) => a.status)).toEqual(flood.map(() => 401));
    }
    const intervals = Math.floor((Date.now() - started) / 1000 / REFETCH_SECONDS) + 1;
    expect((await provider.jwksFetches()) - fetchesBefore).toBeLessThanOrEqual(intervals);
    expect(await runCount()).toBe(before);
  });

  it('follows a key rotated in at the provider, and keeps accepting the old key while the provider publishes it', async () => {
    const old = await provider.clientToken('nifi-node');
    const rotated = await signingKey('key-2');
    await provider.restart((s) => ({ ...s, keys: [rotated, ...s.keys] }));
    const fresh = await provider.clientToken('nifi-node');
    expect(decodeProtectedHeader(fresh).kid).toBe('key-2');
    // refused at most until the next refetch is allowed, then accepted
    await until('the rotated key to be fetched', async () => (await me(fresh)).status === 200, (REFETCH_SECONDS + 3) * 1000);
    expect((await me(old)).status).toBe(200);
  });

  it('stops a client disabled at the provider once its last token expires', async () => {
    const last = await provider.clientToken('retired-node');
    await provider.restart((s) => ({ ...s, clients: s.clients.filter((c) => c.id !== 'retired-node') }));
    expect((await provider.tokenRequest('retired-node', 'retired-secret')).status).toBe(401);
    // the token it already has stays good until it expires, plus the allowed clock skew (the README says so)
    expect((await me(last)).status).toBe(200);
    await until('the retired token to expire', async () => (await me(last)).status === 401, (TOKEN_TTL_SECONDS + 1 + 3) * 1000);
    expect((await me(await provider.clientToken('nifi-node'))).status).toBe(200);
  });
});
