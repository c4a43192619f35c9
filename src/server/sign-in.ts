// People sign in to the console through the OpenID provider (authorization code with PKCE, openid-client) and
// get a server-side session: a random secret in an HttpOnly, SameSite=Lax cookie (Secure behind https), its
// row in PostgreSQL (src/domain/sessions/), so every serve process knows it and an operator can end it. A
// state-changing request made with the cookie must carry the session's X-CSRF-Token, which only a page of this
// origin can read (GET /auth/session).
import { timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import * as client from 'openid-client';
import { nameFromClaims, rolesFromClaims } from '../auth/principal.js';
import { discoverProvider, type OidcConfig, ProviderUnavailableError } from '../auth/provider.js';
import type { Db } from '../db/client.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { inTransaction } from '../db/transaction.js';
import { type LiveSession, signOutConsoleSession, startConsoleSession, touchConsoleSession } from '../domain/sessions/console-sessions.js';
import type { Logger } from '../logging/logger.js';
import type { CredentialedRequest, SessionAuthenticate } from './auth.js';
import { sendJson } from './graphql-endpoint.js';

const SESSION_COOKIE = 'lc_session';
const SIGN_IN_COOKIE = 'lc_signin';
/** How long a person may take at the provider's login page. */
const SIGN_IN_SECONDS = 600;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function cookie(req: CredentialedRequest, name: string): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=') || null;
  }
  return null;
}

const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export interface SignIn {
  /** The session cookie's principal; null without the cookie. */
  authenticate: SessionAuthenticate;
  /** Answers /auth/… (session, login, callback, logout); false for any other path. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, path: string): boolean;
}

export function createSignIn(
  oidc: OidcConfig & { clientId: string; publicUrl: string },
  db: Db,
  log: Logger,
  devTokensFile: string | null,
): SignIn {
  const publicUrl = oidc.publicUrl.replace(/\/$/, '');
  const redirectUri = `${publicUrl}/auth/callback`;
  const secure = new URL(publicUrl).protocol === 'https:' ? '; Secure' : '';
  let provider: Promise<client.Configuration> | null = null;
  const discovered = () => {
    provider ??= discoverProvider(oidc).catch((error: unknown) => {
      provider = null;
      throw error;
    });
    return provider;
  };

  const liveSession = (req: CredentialedRequest): Promise<LiveSession | null> | null => {
    const secret = cookie(req, SESSION_COOKIE);
    return secret ? touchConsoleSession(db.prisma, secret, oidc.sessionIdle) : null;
  };

  const authenticate: SessionAuthenticate = (req) => {
    const session = liveSession(req);
    if (!session) return null;
    return session.then((live) => {
      if (!live) return null;
      if (SAFE_METHODS.has(req.method ?? 'GET')) return live.principal;
      const sent = req.headers['x-csrf-token'];
      return typeof sent === 'string' && sameText(sent, live.csrfToken) ? live.principal : null;
    });
  };

  const failed = (res: http.ServerResponse, error: unknown) => {
    if (error instanceof ProviderUnavailableError) {
      log.warn({ err: error }, 'oidc_provider_unavailable');
      return sendJson(res, 503, { code: 'SERVICE_UNAVAILABLE', message: 'the identity provider cannot be reached; retry later' });
    }
    if (
      error instanceof client.ClientError ||
      error instanceof client.ResponseBodyError ||
      error instanceof client.AuthorizationResponseError
    ) {
      log.warn({ err: error }, 'oidc_sign_in_refused');
      return sendJson(res, 400, { code: 'BAD_REQUEST', message: `sign-in failed: ${error.message}; start again from the console` });
    }
    if (isDatabaseUnavailable(error))
      return sendJson(res, 503, { code: 'SERVICE_UNAVAILABLE', message: 'database unavailable, retry later' });
    log.error({ err: error }, 'oidc_sign_in_failed');
    sendJson(res, 500, { code: 'INTERNAL', message: 'Internal server error' });
  };

  async function login(res: http.ServerResponse): Promise<void> {
    const config = await discovered();
    const pending = { verifier: client.randomPKCECodeVerifier(), state: client.randomState(), nonce: client.randomNonce() };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: oidc.scopes,
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    const value = Buffer.from(JSON.stringify(pending)).toString('base64url');
    res.writeHead(302, {
      Location: url.href,
      'Set-Cookie': `${SIGN_IN_COOKIE}=${value}; Path=/auth/callback; Max-Age=${SIGN_IN_SECONDS}; HttpOnly; SameSite=Lax${secure}`,
      'Cache-Control': 'no-store',
    });
    res.end();
  }

  async function callback(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const saved = cookie(req, SIGN_IN_COOKIE);
    let pending: { verifier: string; state: string; nonce: string } | null = null;
    try {
      pending = saved ? JSON.parse(Buffer.from(saved, 'base64url').toString('utf8')) : null;
    } catch {
      pending = null;
    }
    if (!pending || typeof pending.verifier !== 'string' || typeof pending.state !== 'string' || typeof pending.nonce !== 'string') {
      return sendJson(res, 400, {
        code: 'BAD_REQUEST',
        message: 'no sign-in under way here (or it took too long): start again from the console',
      });
    }
    const config = await discovered();
    const tokens = await client.authorizationCodeGrant(config, new URL(req.url ?? '/', publicUrl), {
      pkceCodeVerifier: pending.verifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    const roles = rolesFromClaims(claims, oidc.rolesClaim, oidc.roleMapping);
    const name = nameFromClaims(claims);
    const clearSignIn = `${SIGN_IN_COOKIE}=; Path=/auth/callback; Max-Age=0; HttpOnly; SameSite=Lax${secure}`;
    if (roles.length === 0) {
      res.setHeader('Set-Cookie', clearSignIn);
      return sendJson(res, 403, {
        code: 'FORBIDDEN',
        message: `${name} is signed in at the provider, but no claim of theirs grants a role here`,
      });
    }
    const session = await inTransaction(db, (tx) =>
      startConsoleSession(tx, {
        name,
        issuer: oidc.issuer,
        subject: claims.sub,
        roles,
        idToken: tokens.id_token ?? null,
        ttlMs: oidc.sessionTtl,
      }),
    );
    log.info({ sessionId: session.sessionId, subject: claims.sub, name, roles }, 'console_session_started');
    res.writeHead(302, {
      Location: '/',
      'Set-Cookie': [
        clearSignIn,
        `${SESSION_COOKIE}=${session.secret}; Path=/; Max-Age=${Math.floor(oidc.sessionTtl / 1000)}; HttpOnly; SameSite=Lax${secure}`,
      ],
      'Cache-Control': 'no-store',
    });
    res.end();
  }

  async function sessionInfo(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const live = await liveSession(req);
    sendJson(
      res,
      200,
      {
        signIn: true,
        session: live && { name: live.principal.name, roles: live.principal.roles, csrfToken: live.csrfToken },
        devTokensFile,
      },
      { 'Cache-Control': 'no-store' },
    );
  }

  async function logout(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const secret = cookie(req, SESSION_COOKIE);
    const principal = await authenticate(req);
    if (!secret || !principal) {
      return sendJson(res, 403, { code: 'FORBIDDEN', message: 'sign-out needs the session cookie and its X-CSRF-Token' });
    }
    const ended = await inTransaction(db, (tx) => signOutConsoleSession(tx, secret));
    const config = await discovered().catch(() => null);
    const endSessionUrl =
      config?.serverMetadata().end_session_endpoint && ended
        ? client.buildEndSessionUrl(config, {
            post_logout_redirect_uri: `${publicUrl}/`,
            ...(ended.idToken ? { id_token_hint: ended.idToken } : {}),
          }).href
        : null;
    sendJson(res, 200, { endSessionUrl }, { 'Set-Cookie': `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure}` });
  }

  const routes: Record<string, { method: string; run: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> }> = {
    '/auth/session': { method: 'GET', run: sessionInfo },
    '/auth/login': { method: 'GET', run: (_req, res) => login(res) },
    '/auth/callback': { method: 'GET', run: callback },
    '/auth/logout': { method: 'POST', run: logout },
  };

  return {
    authenticate,
    handle(req, res, path) {
      const route = routes[path];
      if (!route) return false;
      if (req.method !== route.method) {
        sendJson(res, 405, { code: 'METHOD_NOT_ALLOWED', message: `${path} takes ${route.method}` }, { Allow: route.method });
        return true;
      }
      route.run(req, res).catch((error: unknown) => failed(res, error));
      return true;
    },
  };
}

/**
 * Without console sign-in (no auth.oidc.clientId): the console offers tokens only, and says where `start`'s
 * development tokens are when it made them (devTokensFile; null otherwise).
 */
export function answerWithoutSignIn(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  path: string,
  devTokensFile: string | null,
): boolean {
  if (path !== '/auth/session') return false;
  if (req.method !== 'GET') sendJson(res, 405, { code: 'METHOD_NOT_ALLOWED', message: `${path} takes GET` }, { Allow: 'GET' });
  else sendJson(res, 200, { signIn: false, session: null, devTokensFile }, { 'Cache-Control': 'no-store' });
  return true;
}
