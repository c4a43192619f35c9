// A person signs in to the console in Chromium through the provider's own login page (oidc-provider's), sees
// the console with the role their group maps to and their name in the header, cancels a run as an operator (the
// event records the session and their subject), and signs out, here and at the provider. The session lives in
// PostgreSQL: an operator can end it, after which the cookie is refused; a cookie request that changes state
// without the session's CSRF token is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/support.js';
import { ensureConsoleBuilt, openBrowser, type Browser } from '../browser/browser.js';
import { startTestApiProcess, type TestApiProcess } from '../support/api-process.js';
import { startRun } from '../support/fixtures.js';
import { startTestProvider, type TestProvider } from '../support/oidc-provider.js';

let provider: TestProvider;
let api: TestApiProcess;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  provider = await startTestProvider({
    clients: [
      {
        id: 'load-control-console',
        secret: 'console-secret',
        grant: 'authorization_code',
        redirectUris: [`${publicUrl}/auth/callback`],
        postLogoutRedirectUris: [`${publicUrl}/`],
      },
    ],
    accounts: {
      alice: { name: 'Alice Operator', email: 'alice@example.com', groups: ['lc-operators', 'staff'] },
      mallory: { name: 'Mallory', email: 'mallory@example.com', groups: ['staff'] },
    },
  });
  const oidc = {
    issuer: provider.issuer,
    audience: provider.settings.audience,
    clientId: 'load-control-console',
    clientSecret: 'console-secret',
    publicUrl,
    rolesClaim: 'groups',
    roleMapping: { 'lc-operators': ['operator', 'viewer'] },
    scopes: 'openid profile email groups',
  };
  api = await startTestApiProcess({ port, env: { LC_AUTH__OIDC: JSON.stringify(oidc) } });
  browser = await openBrowser();
});
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await provider?.stop();
});

/** From the console's sign-in page through the provider's login and consent pages, back to the console. */
async function signInAs(login: string) {
  const { page } = browser;
  await page.goto(`${api.url}/`);
  await page.getByRole('link', { name: "Sign in with your organization's account" }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.locator('button[type=submit]').click();
  // the provider asks once for consent to share the profile with the console
  const consent = page.locator('button[type=submit]', { hasText: /continue/i });
  await Promise.race([consent.waitFor({ timeout: 10_000 }).then(() => consent.click()), page.waitForURL(`${api.url}/**`)]).catch(
    () => undefined,
  );
}

const sessionCookie = async () => (await browser.context.cookies(api.url)).find((c) => c.name === 'lc_session');

describe('console sign-in through the OpenID provider', () => {
  it('signs a person in with the mapped role, lets them act as an operator, and signs them out here and at the provider', async () => {
    const run = await startRun(api, [5, 5]);
    const { page } = browser;
    await signInAs('alice');
    await page.waitForURL(`${api.url}/`);
    await expect
      .poll(() => page.locator('.identity').textContent(), { timeout: 20_000 })
      .toBe('Signed in as Alice Operator <alice@example.com> (operator, viewer)');
    const cookie = await sessionCookie();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    await browser.screenshot('idp-01-signed-in');

    await page.goto(`${api.url}/runs/${run.runId}`);
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    const cancel = page.getByRole('dialog', { name: 'Cancel run' });
    await cancel.getByLabel(/Reason/).fill('source system is being restored');
    await cancel.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('.page-head .badge').textContent(), { timeout: 20_000 }).toBe('CANCELLED');
    const { rows } = await api.sql.query(
      `SELECT actor, actor_auth, actor_issuer, actor_subject FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'RUN_CANCELLED'`,
      [run.runId],
    );
    expect(rows).toEqual([
      { actor: 'Alice Operator <alice@example.com>', actor_auth: 'SESSION', actor_issuer: provider.issuer, actor_subject: 'alice' },
    ]);

    await page.getByRole('button', { name: 'Sign out' }).click();
    // RP-initiated logout: the provider's end-session page, then back to the console's sign-in page
    await page.waitForURL((url) => url.origin === provider.issuer);
    await browser.screenshot('idp-02-provider-logout');
    const confirm = page.locator('button[type=submit], button[autofocus]').first();
    if (await confirm.count()) await confirm.click();
    await page.waitForURL(`${api.url}/`);
    await page.getByRole('link', { name: "Sign in with your organization's account" }).waitFor();
    const { rows: ended } = await api.sql.query(
      `SELECT ended_at IS NOT NULL AS ended FROM nifi_ops.lc_console_session WHERE subject = 'alice'`,
    );
    expect(ended).toEqual([{ ended: true }]);
    // the old cookie is refused, as every serve process would refuse it
    const replay = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Cookie: `lc_session=${cookie!.value}` },
      body: JSON.stringify({ query: '{ me { name } }' }),
    });
    expect(replay.status).toBe(401);
  });

  it('refuses a cookie request that changes state without the CSRF token, and a session an operator ended', async () => {
    await browser.context.clearCookies();
    await signInAs('alice');
    await browser.page.waitForURL(`${api.url}/`);
    const cookie = `lc_session=${(await sessionCookie())!.value}`;
    const info = (await (await fetch(`${api.url}/auth/session`, { headers: { Cookie: cookie } })).json()) as {
      session: { csrfToken: string; name: string };
    };
    const post = (headers: Record<string, string>) =>
      fetch(`${api.url}/graphql`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Cookie: cookie, ...headers },
        body: JSON.stringify({ query: '{ me { name authenticatedBy } }' }),
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ 'X-CSRF-Token': 'forged' })).status).toBe(401);
    // sign-out is state-changing too: without the token it is refused and the session stays
    const forgedLogout = await fetch(`${api.url}/auth/logout`, { method: 'POST', headers: { Cookie: cookie } });
    expect([forgedLogout.status, ((await forgedLogout.json()) as { code: string }).code]).toEqual([403, 'FORBIDDEN']);
    const wrongMethod = await fetch(`${api.url}/auth/logout`, { headers: { Cookie: cookie } });
    expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([405, 'POST']);
    const ok = await post({ 'X-CSRF-Token': info.session.csrfToken });
    expect(await ok.json()).toEqual({ data: { me: { name: 'Alice Operator <alice@example.com>', authenticatedBy: 'SESSION' } } });

    const sessions = await api.gql<{ consoleSessions: Array<{ sessionId: string; subject: string; roles: string[] }> }>(
      '{ consoleSessions { sessionId subject roles } }',
      {},
      { token: 'operator' },
    );
    const live = sessions.body.data!.consoleSessions.filter((s) => s.subject === 'alice');
    expect(live).toHaveLength(1);
    expect(live[0]!.roles).toEqual(['operator', 'viewer']);
    const end = async () =>
      api.gql<{ endConsoleSession: { changed: boolean } }>(
        'mutation($i: EndConsoleSessionInput!) { endConsoleSession(input: $i) { changed } }',
        { i: { sessionId: live[0]!.sessionId, reason: 'laptop reported stolen' } },
        { token: 'operator' },
      );
    expect((await end()).body.data!.endConsoleSession).toEqual({ changed: true });
    expect((await end()).body.data!.endConsoleSession).toEqual({ changed: false });
    expect((await post({ 'X-CSRF-Token': info.session.csrfToken })).status).toBe(401);
    const { rows } = await api.sql.query(
      `SELECT actor, message, details->>'subject' AS subject FROM nifi_ops.load_event WHERE event_name = 'CONSOLE_SESSION_ENDED'`,
    );
    expect(rows).toEqual([{ actor: 'alice-operator', message: 'laptop reported stolen', subject: 'alice' }]);
    // the console, on its next request, shows the sign-in page again
    await browser.page.reload();
    await browser.page.getByRole('link', { name: "Sign in with your organization's account" }).waitFor();
  });

  it('refuses a person whose claims grant no role, and a callback without a sign-in under way', async () => {
    await browser.context.clearCookies();
    await signInAs('mallory');
    await expect.poll(() => browser.page.textContent('body'), { timeout: 20_000 }).toContain('no claim of theirs grants a role');
    expect(await sessionCookie()).toBeUndefined();
    const stray = await fetch(`${api.url}/auth/callback?code=abc&state=xyz`);
    expect([stray.status, ((await stray.json()) as { code: string }).code]).toEqual([400, 'BAD_REQUEST']);
  });
});
