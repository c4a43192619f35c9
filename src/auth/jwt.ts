import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import { type Principal, nameFromClaims, rolesFromClaims } from './principal.js';
import { discoverProvider, type OidcConfig, ProviderUnavailableError } from './provider.js';

/** Signatures with a public key only: a token signed with a shared secret, or with `none`, is never accepted. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** How long the provider's keys are used before they are fetched again even when every token's key is among them. */
const JWKS_MAX_AGE_MS = 10 * 60 * 1000;

/** Three base64url parts: what a JWS compact serialization looks like (a static token has no dot). */
export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

export type VerifyJwt = (token: string) => Promise<Principal | null>;

/**
 * Checks a provider's JWT (issuer, audience, expiry within the clock skew, signature by one of the provider's
 * keys) and maps its roles claim. The keys (jose's remote JWK set) are cached; a token with a key id not among
 * them fetches them again, at most once per jwksRefetchInterval, so rotation is followed and a flood of unknown
 * key ids costs the provider nothing more. Throws ProviderUnavailableError when the provider cannot be reached.
 */
export function createJwtVerifier(oidc: OidcConfig): VerifyJwt {
  let keys: Promise<ReturnType<typeof createRemoteJWKSet>> | null = null;
  const keySet = () => {
    keys ??= discoverProvider(oidc).then(
      (provider) => {
        const jwksUri = provider.serverMetadata().jwks_uri;
        if (!jwksUri) throw new ProviderUnavailableError(`the OpenID provider ${oidc.issuer} publishes no jwks_uri`);
        return createRemoteJWKSet(new URL(jwksUri), { cooldownDuration: oidc.jwksRefetchInterval, cacheMaxAge: JWKS_MAX_AGE_MS });
      },
      (error: unknown) => {
        keys = null; // asked again by the next token
        throw error;
      },
    );
    return keys;
  };
  return async (token) => {
    const jwks = await keySet();
    try {
      const { payload } = await jwtVerify(token, jwks, {
        issuer: oidc.issuer,
        audience: oidc.audience,
        clockTolerance: oidc.clockSkew / 1000,
        algorithms: ALGORITHMS,
        requiredClaims: ['sub', 'exp'],
      });
      return {
        name: nameFromClaims(payload),
        roles: rolesFromClaims(payload, oidc.rolesClaim, oidc.roleMapping),
        method: 'JWT',
        issuer: oidc.issuer,
        subject: payload.sub!,
      };
    } catch (error) {
      if (error instanceof errors.JWKSTimeout || !(error instanceof errors.JOSEError)) {
        throw new ProviderUnavailableError(`the OpenID provider's keys could not be fetched: ${(error as Error).message}`, {
          cause: error,
        });
      }
      return null;
    }
  };
}
