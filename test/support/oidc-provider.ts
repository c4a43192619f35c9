// Starts test/support/oidc-provider-process.ts (a real OpenID Provider) as a child process and stops, restarts
// (another key, a client less) and asks it for tokens over HTTP, as a NiFi node or a script would.
import { type ChildProcess, spawn } from 'node:child_process';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { freePort } from '../../bench/support.js';

interface ProviderClient {
  id: string;
  secret: string;
  grant: 'client_credentials' | 'authorization_code';
  /** client_credentials: the roles its tokens carry (the `roles` claim). */
  roles?: string[];
  redirectUris?: string[];
  postLogoutRedirectUris?: string[];
}

export interface ProviderSettings {
  issuer: string;
  port: number;
  audience: string;
  clients: ProviderClient[];
  /** Signing keys, the first one signs. */
  keys: JWK[];
  /** login → claims of the person (name, email, groups). */
  accounts: Record<string, Record<string, unknown>>;
  /** Seconds an access token lives. */
  accessTokenTtl: number;
}

export interface TestProvider {
  issuer: string;
  settings: ProviderSettings;
  /** A client_credentials access token (a JWT for the audience). */
  clientToken(clientId: string): Promise<string>;
  /** The token endpoint's answer, for refusals. */
  tokenRequest(clientId: string, secret: string): Promise<Response>;
  /** How many times the provider's keys were fetched since it started. */
  jwksFetches(): Promise<number>;
  /** Stops and starts it again on the same port with changed settings (new keys, a client removed). */
  restart(change: (settings: ProviderSettings) => ProviderSettings): Promise<void>;
  stop(): Promise<void>;
}

/** A new RSA signing key as a private JWK with its kid. */
export async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

async function launch(settings: ProviderSettings): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./oidc-provider-process.ts', import.meta.url).pathname], {
    env: { ...process.env, OIDC_PROVIDER_SETTINGS: JSON.stringify(settings), NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // its own warnings about development-only features (the in-memory store, devInteractions) are what a test wants
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString().replace(/^oidc-provider WARNING: .*\n?/gm, '');
    if (text) process.stderr.write(text);
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the OpenID provider exited (${code}) before it listened`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) resolve();
    });
  });
  child.removeAllListeners('exit');
  return child;
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

export async function startTestProvider(options: Partial<Omit<ProviderSettings, 'issuer' | 'port'>> = {}): Promise<TestProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  let settings: ProviderSettings = {
    issuer,
    port,
    audience: 'https://load-control.test/api',
    clients: [],
    keys: [await signingKey('key-1')],
    accounts: {},
    accessTokenTtl: 300,
    ...options,
  };
  let child = await launch(settings);
  const tokenRequest = (clientId: string, secret: string) =>
    fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret, scope: 'api' }),
    });
  return {
    issuer,
    get settings() {
      return settings;
    },
    tokenRequest,
    async clientToken(clientId) {
      const client = settings.clients.find((c) => c.id === clientId);
      const res = await tokenRequest(clientId, client?.secret ?? '');
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || !body.access_token) throw new Error(`no token for ${clientId}: ${res.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async jwksFetches() {
      return ((await (await fetch(`${issuer}/test/counts`)).json()) as { jwksFetches: number }).jwksFetches;
    },
    async restart(change) {
      await stopProcess(child);
      settings = change(settings);
      child = await launch(settings);
    },
    stop: () => stopProcess(child),
  };
}
