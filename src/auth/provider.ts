import * as client from 'openid-client';
import type { Config } from '../config/config.js';

export type OidcConfig = NonNullable<Config['auth']['oidc']>;

/** The provider could not be asked (discovery or its keys): the request is answered 503, not 401. */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

/**
 * The provider's discovery document, through openid-client. A plain-http issuer is allowed only because the
 * configuration names one (a provider on a loopback address, say); openid-client refuses it otherwise.
 */
export async function discoverProvider(oidc: OidcConfig): Promise<client.Configuration> {
  const issuer = new URL(oidc.issuer);
  const clientAuth = oidc.clientSecret ? client.ClientSecretPost(oidc.clientSecret) : client.None();
  try {
    return await client.discovery(issuer, oidc.clientId ?? oidc.audience, undefined, clientAuth, {
      execute: issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [],
      timeout: 5,
    });
  } catch (error) {
    throw new ProviderUnavailableError(`the OpenID provider ${oidc.issuer} could not be discovered: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
