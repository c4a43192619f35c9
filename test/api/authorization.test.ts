// Every root field × {no token, viewer, nifi, operator}: 401 without a token, 403 without the role,
// and past auth otherwise (the probes carry no arguments, so an allowed caller gets a 400 from validation).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLObjectType } from 'graphql';
import type { Role } from '../../src/config/config.js';
import { buildSchema } from '../../src/graphql/schema.js';
import { startTestApi, type TestApi, type TokenName } from '../support/api.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const schema = buildSchema();
const rootFields = (['query', 'mutation', 'subscription'] as const).flatMap((kind) => {
  const type: GraphQLObjectType | null | undefined =
    kind === 'query' ? schema.getQueryType() : kind === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  return Object.values(type?.getFields() ?? {}).map((field) => ({
    kind,
    name: field.name,
    roles: (field.extensions as { roles?: Role[] }).roles,
  }));
});

const TOKEN_ROLES: Record<TokenName, Role> = { nifi: 'nifi', operator: 'operator', viewer: 'viewer' };

describe('authorization matrix', () => {
  it('every root field declares the roles that may call it', () => {
    expect(rootFields.filter((f) => !f.roles?.length).map((f) => f.name)).toEqual([]);
  });

  it('queries are open to every role but the list of people signed in (operators only); viewer tokens cannot mutate', () => {
    const peoples = new Set(['consoleSessions']);
    for (const f of rootFields.filter((r) => r.kind === 'query')) {
      expect(f.roles, f.name).toEqual(peoples.has(f.name) ? ['operator'] : ['nifi', 'operator', 'viewer']);
    }
    for (const f of rootFields.filter((r) => r.kind === 'mutation')) expect(f.roles).not.toContain('viewer');
  });

  it.each(rootFields.filter((f) => f.kind !== 'subscription').map((f) => [f.kind, f.name, f.roles] as const))(
    '%s %s',
    async (kind, name, roles) => {
      const query = `${kind} { ${name} { __typename } }`;
      const anonymous = await api.gql(query, {}, { token: null });
      expect([anonymous.status, anonymous.code]).toEqual([401, 'UNAUTHENTICATED']);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      for (const token of Object.keys(TOKEN_ROLES) as TokenName[]) {
        const res = await api.gql(query, {}, { token });
        if (roles!.includes(TOKEN_ROLES[token])) {
          expect(res.status, `${token} may call ${name}`).not.toBe(401);
          expect(res.status, `${token} may call ${name}`).not.toBe(403);
        } else {
          expect([res.status, res.code], `${token} may not call ${name}`).toEqual([403, 'FORBIDDEN']);
        }
      }
    },
  );

  it('decides auth before input validation: an invalid body without a token is 401, with the wrong role 403', async () => {
    const query = 'mutation($i: CreateRunInput!) { createRun(input: $i) { runId } }';
    const bad = { i: { jobKey: 'bad key' } };
    expect((await api.gql(query, bad, { token: null })).status).toBe(401);
    expect((await api.gql(query, bad, { token: 'viewer' })).status).toBe(403);
    expect((await api.gql(query, bad, { token: 'nifi' })).status).toBe(400);
  });

  it('refuses an unknown token with 401 and never caches an auth refusal for the next caller', async () => {
    const query = '{ runs(first: 1) { nodes { runId } } }';
    const wrong = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer not-a-token' },
      body: JSON.stringify({ query }),
    });
    expect(wrong.status).toBe(401);
    expect((await api.gql(query, {}, { token: null })).status).toBe(401);
    expect((await api.gql(query, {}, { token: 'viewer' })).status).toBe(200);
    expect((await api.gql(query, {}, { token: null })).status).toBe(401);
  });
});

describe('console sign-in without auth.oidc', () => {
  it('tells the console to offer tokens only, and sends no one to a provider', async () => {
    const session = await fetch(`${api.url}/auth/session`);
    expect([session.status, await session.json()]).toEqual([200, { signIn: false, session: null, devTokensFile: null }]);
    expect((await fetch(`${api.url}/auth/session`, { method: 'POST' })).status).toBe(405);
    const login = await fetch(`${api.url}/auth/login`, { redirect: 'manual' });
    expect(login.status).not.toBe(302);
  });
});

describe('me', () => {
  it("names the token's holder and the roles it grants, for every role", async () => {
    const seen: Record<string, unknown> = {};
    for (const token of ['nifi', 'operator', 'viewer'] as const) {
      seen[token] = (await api.gql<{ me: { name: string; roles: string[] } }>('{ me { name roles } }', {}, { token })).body.data?.me;
    }
    expect(seen).toEqual({
      nifi: { name: 'nifi-cluster', roles: ['nifi'] },
      operator: { name: 'alice-operator', roles: ['operator'] },
      viewer: { name: 'victor-viewer', roles: ['viewer'] },
    });
    expect((await api.gql('{ me { name } }', {}, { token: null })).status).toBe(401);
  });
});
