// Bearer tokens and the root-field role check alone, through yoga.fetch on a small schema (no database).
// The 401 for a request without a valid token is the HTTP layer's: see graphql-endpoint.test.ts.
import { beforeEach, describe, expect, it } from 'vitest';
import { hashToken } from '../../../src/auth/tokens.js';
import { ACTORS, capturingLogger, executed, post, smallYoga } from '../../support/small-api.js';
import { loadStaticTokens } from '../../../src/auth/static-tokens.js';
import { createAuthenticator, useRootFieldAuth } from '../../../src/server/auth.js';
import { useErrorEnvelope } from '../../../src/server/error-envelope.js';
import { useRequestId } from '../../../src/server/request-id.js';

const yoga = smallYoga([useRequestId(), useRootFieldAuth(), useErrorEnvelope(capturingLogger().log)]);
beforeEach(() => {
  executed.length = 0;
});

describe('createAuthenticator', () => {
  const tokens = loadStaticTokens(
    {
      tokens: [
        { name: 'nifi-cluster', sha256: hashToken('nifi-token'), roles: ['nifi'] },
        { name: 'alice', sha256: hashToken('alice-token'), roles: ['operator', 'viewer'] },
      ],
      tokensFile: null,
    },
    capturingLogger().log,
  );
  const authenticate = (authorization: string | null) =>
    createAuthenticator(tokens)({ headers: authorization === null ? {} : { authorization } });

  it('knows a configured token by its digest and gives its name and roles', () => {
    const asToken = { method: 'TOKEN', issuer: null, subject: null };
    expect(authenticate('Bearer nifi-token')).toEqual({ name: 'nifi-cluster', roles: ['nifi'], ...asToken });
    expect(authenticate('bearer   alice-token ')).toEqual({ name: 'alice', roles: ['operator', 'viewer'], ...asToken });
  });

  it.each([
    ['no header', null],
    ['an unknown token', 'Bearer not-a-token'],
    ['another scheme', 'Basic dXNlcjpwdw=='],
    ['a scheme without a token', 'Bearer'],
    ['two tokens', 'Bearer nifi-token alice-token'],
    ['the digest instead of the token', `Bearer ${hashToken('nifi-token')}`],
  ])('refuses %s', (_name, authorization) => {
    expect(authenticate(authorization)).toBeNull();
  });
});

describe('root-field roles', () => {
  it('lets a role declared on the field through and refuses any other with 403 FORBIDDEN, before anything runs', async () => {
    expect((await post(yoga, '{ operatorOnly }', { actor: ACTORS.operator })).body).toEqual({ data: { operatorOnly: 'granted' } });
    for (const actor of [ACTORS.viewer, ACTORS.nifi]) {
      const res = await post(yoga, '{ operatorOnly }', { actor });
      expect([res.status, res.code, res.headers.get('x-error-code')], actor.name).toEqual([403, 'FORBIDDEN', 'FORBIDDEN']);
      expect(res.body.data, actor.name).toBeUndefined();
    }
    expect(executed).toEqual(['operatorOnly']);
  });

  it('needs the role of every root field selected, through aliases and fragments too', async () => {
    const documents = [
      '{ hello operatorOnly }',
      '{ hello granted: operatorOnly }',
      '{ hello ...F } fragment F on Query { operatorOnly }',
      '{ hello ... on Query { operatorOnly } }',
    ];
    for (const document of documents) {
      expect((await post(yoga, document, { actor: ACTORS.viewer })).status, document).toBe(403);
      expect((await post(yoga, document, { actor: ACTORS.operator })).status, document).toBe(200);
    }
  });

  it("refuses mutations by role: a viewer cannot act, an operator cannot do the flow's work", async () => {
    expect((await post(yoga, 'mutation { act }', { actor: ACTORS.nifi })).body).toEqual({ data: { act: 1 } });
    for (const actor of [ACTORS.viewer, ACTORS.operator]) expect((await post(yoga, 'mutation { act }', { actor })).status).toBe(403);
    expect(executed).toEqual(['act']);
  });

  it('decides before validation and variable coercion: the wrong role learns nothing about its input', async () => {
    const document = 'mutation($i: Int!) { act(input: $i, noSuchArgument: 1) { noSuchField } }';
    expect((await post(yoga, document, { actor: ACTORS.viewer, variables: { i: 'not an int' } })).status).toBe(403);
    const allowed = await post(yoga, document, { actor: ACTORS.nifi, variables: { i: 'not an int' } });
    expect([allowed.status, allowed.code]).toEqual([400, 'BAD_REQUEST']);
  });

  it('refuses a request with no actor with 401 UNAUTHENTICATED — introspection too — and never caches a refusal', async () => {
    for (const document of ['{ hello }', '{ __schema { queryType { name } } }', '{ __typename }']) {
      const res = await post(yoga, document, { actor: null });
      expect([res.status, res.code, res.headers.get('www-authenticate')], document).toEqual([401, 'UNAUTHENTICATED', 'Bearer']);
    }
    const introspection = await post(yoga, '{ __schema { queryType { name } } }', { actor: ACTORS.viewer });
    expect(introspection.body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
    // Yoga caches validation per document: the same document alternates between refused and allowed
    expect((await post(yoga, '{ hello }', { actor: null })).status).toBe(401);
    expect((await post(yoga, '{ hello }', { actor: ACTORS.viewer })).status).toBe(200);
    expect((await post(yoga, '{ hello }', { actor: null })).status).toBe(401);
    expect((await post(yoga, '{ operatorOnly }', { actor: ACTORS.viewer })).status).toBe(403);
    expect((await post(yoga, '{ operatorOnly }', { actor: ACTORS.operator })).status).toBe(200);
    expect((await post(yoga, '{ operatorOnly }', { actor: ACTORS.viewer })).status).toBe(403);
  });
});

describe('mutations select exactly one root field', () => {
  it.each([
    ['two root fields', 'mutation { act second: act }'],
    ['a second root field in a named fragment', 'mutation { act ...M } fragment M on Mutation { second: act }'],
    ['both root fields in a fragment', 'mutation { ...M } fragment M on Mutation { act second: act }'],
    ['a second root field in an inline fragment', 'mutation { act ... on Mutation { second: act } }'],
  ])('refuses %s with 400 BAD_REQUEST and executes none of it', async (_name, document) => {
    const res = await post(yoga, document, { actor: ACTORS.nifi });
    expect([res.status, res.code]).toEqual([400, 'BAD_REQUEST']);
    expect(res.body.errors![0]!.message).toBe('a mutation request must have exactly one root field; this one selects 2');
    expect(executed).toEqual([]);
  });

  it('counts one field spread twice as one, as execution merges it', async () => {
    const res = await post(yoga, 'mutation { act ...M } fragment M on Mutation { act }', { actor: ACTORS.nifi });
    expect(res.body).toEqual({ data: { act: 1 } });
  });
});
