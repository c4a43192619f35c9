// A real OpenID Provider (panva's certified `oidc-provider`) as a process of its own on a loopback port, for the
// idp tier: Load Control talks to it over HTTP as to any provider. Started by test/support/oidc-provider.ts with
// its settings in OIDC_PROVIDER_SETTINGS; its own login page (devInteractions: any login, any password) signs
// people in. GET /test/counts answers how many times its keys (jwks) were fetched, for the refetch bound.
import http from 'node:http';
import Provider from 'oidc-provider';
import type { ProviderSettings } from './oidc-provider.js';

const settings = JSON.parse(process.env.OIDC_PROVIDER_SETTINGS!) as ProviderSettings;
let jwksFetches = 0;

const provider = new Provider(settings.issuer, {
  clients: settings.clients.map((c) =>
    c.grant === 'client_credentials'
      ? { client_id: c.id, client_secret: c.secret, grant_types: ['client_credentials'], response_types: [], redirect_uris: [] }
      : {
          client_id: c.id,
          client_secret: c.secret,
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: c.redirectUris ?? [],
          post_logout_redirect_uris: c.postLogoutRedirectUris ?? [],
        },
  ),
  jwks: { keys: settings.keys },
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => ({ sub: id, ...(settings.accounts[id] ?? { name: id }) }),
  }),
  claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
  scopes: ['openid', 'profile', 'email', 'groups'],
  // the console reads the person's groups from the ID token, as Keycloak and Entra ID are set up to send them
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  ttl: {
    AccessToken: settings.accessTokenTtl,
    ClientCredentials: settings.accessTokenTtl,
    IdToken: 3600,
    Grant: 3600,
    Session: 3600,
    Interaction: 600,
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => settings.audience,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'api',
        audience: settings.audience,
        accessTokenFormat: 'jwt',
        accessTokenTTL: settings.accessTokenTtl,
      }),
    },
  },
  // a machine's roles, as Keycloak's client roles or Entra ID's app roles put them in its token
  extraTokenClaims: (_ctx, token) => {
    const client = settings.clients.find((c) => c.id === (token as { clientId?: string }).clientId);
    return client?.roles ? { roles: client.roles } : undefined;
  },
});
provider.on('server_error', (_ctx, error) => console.error(error));

const callback = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url === '/test/counts') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ jwksFetches }));
    return;
  }
  if (req.url?.startsWith('/jwks')) jwksFetches++;
  callback(req, res);
});
server.listen(settings.port, '127.0.0.1', () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
