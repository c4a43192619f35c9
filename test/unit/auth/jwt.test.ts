// The verifier when the provider cannot be asked: a JWT is answered 503 (try again), never 401 or 500; a token
// that is not a JWT never reaches the provider.
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../bench/support.js';
import { createJwtVerifier, looksLikeJwt } from '../../../src/auth/jwt.js';
import { ProviderUnavailableError } from '../../../src/auth/provider.js';
import { loadConfig } from '../../../src/config/config.js';

describe('createJwtVerifier', () => {
  it('throws ProviderUnavailableError when the issuer cannot be reached', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const { oidc } = loadConfig({ env: { LC_AUTH__OIDC: JSON.stringify({ issuer, audience: 'api' }) } }).auth;
    const verify = createJwtVerifier(oidc!);
    await expect(verify('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).rejects.toBeInstanceOf(ProviderUnavailableError);
  });

  it('tells a JWT from a static token by its shape', () => {
    expect(looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).toBe(true);
    expect(looksLikeJwt('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.')).toBe(true);
    expect(looksLikeJwt('lc_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG')).toBe(false);
    expect(looksLikeJwt('a.b')).toBe(false);
  });
});
