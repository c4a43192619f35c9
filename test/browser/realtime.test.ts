// The console's realtime in Chromium, at 1280×800 and 390×844: three tabs at once each on one event stream and all
// live; a database outage shown as stale (never as zeros) and recovered from; a token removed server-side signs out.
import type { Page, Request } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { createApiMetrics } from '../../src/server/metrics.js';
import { createApiServer } from '../../src/server/app.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { chunkInput, claim, createRun, report, startRun } from '../support/fixtures.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/until.js';
import { ensureConsoleBuilt, openSignedInBrowser, SIZES, type Browser, type Size } from './browser.js';

let proxy: TcpProxy;
let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  const server = new URL(inject('testAdminDatabaseUrl'));
  proxy = await startTcpProxy(server.hostname, Number(server.port || 5432));
  // the API and its realtime reach the database through the proxy, so that the test can cut it off
  api = await startTestApi(
    { database: { connectTimeout: 2000, acquireTimeout: 4000, statementTimeout: 8000 } },
    { realtime: true, databasePort: proxy.port },
  );
  // every tab of this context is signed in as the operator ("keep me signed in")
  browser = await openSignedInBrowser(TOKENS.operator);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
  await proxy?.close();
});

/** The requests of a tab that open an event stream: graphql-sse's GET on /graphql/stream, or SSE on /graphql. */
function streamsOf(page: Page): string[] {
  const streams: string[] = [];
  page.on('request', (request: Request) => {
    const path = new URL(request.url()).pathname;
    if (path === '/graphql/stream' && request.method() === 'GET') streams.push('single');
    else if (path === '/graphql' && (request.headers().accept ?? '').includes('text/event-stream')) streams.push('distinct');
  });
  return streams;
}

const liveState = (page: Page) => page.locator('[data-live]').first();

/** A run's row in the runs list (a table on a desktop, cards on a phone), whichever the layout shows. */
const runEntry = (page: Page, runId: string) => page.locator(`[data-run="${runId}"]:visible, [data-run-card="${runId}"]:visible`).first();

/** Tabs opened by a test, closed after it whatever its outcome: a tab left open holds its connections. */
const opened: Page[] = [];
afterEach(async () => {
  for (const page of opened.splice(0)) if (!page.isClosed()) await page.close();
});

async function openTab(path: string, size: Size) {
  const page = await browser.context.newPage();
  opened.push(page);
  await page.setViewportSize({ width: size.width, height: size.height });
  const streams = streamsOf(page);
  await page.goto(`${api.url}${path}`);
  return { page, streams };
}

describe('three tabs at once', () => {
  for (const size of SIZES) {
    it(`two dashboards and a run page, then three run pages, all load and stay live on one stream each (${size.name})`, async () => {
      const run = await startRun(
        api,
        Array.from({ length: 30 }, () => 4),
      );
      const before = api.server!.eventStreams!.streamCount();
      let round = 0;
      for (const paths of [
        ['/', '/', `/runs/${run.runId}`],
        [`/runs/${run.runId}`, `/runs/${run.runId}`, `/runs/${run.runId}`],
      ]) {
        const tabs = [];
        for (const path of paths) tabs.push(await openTab(path, size));
        for (const { page } of tabs) await expect.poll(() => liveState(page).getAttribute('data-live'), { timeout: 20_000 }).toBe('live');
        expect(api.server!.eventStreams!.streamCount()).toBe(before + 3);
        // live indeed: a new run reaches the dashboards, a claim and a chunk the run pages
        const fresh = await createRun(api);
        const partitionId = String(round++).padStart(4, '0');
        const { claimToken } = await claim(api, run.runId, partitionId);
        await report(api, chunkInput(run, partitionId, claimToken, 0, 2, 2));
        for (const [i, { page }] of tabs.entries()) {
          if (paths[i] === '/') await runEntry(page, fresh.runId).waitFor({ timeout: 20_000 });
          else
            await page.locator(`[data-partition="${partitionId}"][aria-label$="RUNNING, 1 chunks received"]`).waitFor({ timeout: 20_000 });
        }
        await browser.screenshot(`realtime-three-tabs-${paths[0] === '/' ? 'dashboards' : 'runs'}-${size.name}`, tabs[2]!.page);
        for (const { streams } of tabs) expect(streams).toEqual(['single']);
        for (const { page } of tabs) await page.close();
        await until('the streams to close', () => api.server!.eventStreams!.streamCount() === before, 20_000);
      }
    }, 120_000);
  }
});

describe('a database outage', () => {
  it('shows the pages as stale, never as zeros, and recovers to live with fresh data and no banner', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 12 }, () => 4),
    );
    const dashboard = await openTab('/', SIZES[0]);
    const runPage = await openTab(`/runs/${run.runId}`, SIZES[0]);
    const phone = await openTab(`/runs/${run.runId}`, SIZES[1]);
    const tabs = [dashboard, runPage, phone];
    for (const { page } of tabs) await expect.poll(() => liveState(page).getAttribute('data-live'), { timeout: 20_000 }).toBe('live');
    await runEntry(dashboard.page, run.runId).waitFor();

    await proxy.cut();
    try {
      for (const { page } of tabs) {
        await expect.poll(() => liveState(page).getAttribute('data-live'), { timeout: 20_000 }).toBe('stale');
        expect(await liveState(page).textContent()).toMatch(/^Stale since \d/);
        // the last data stays, marked stale
      }
      await runPage.page.locator('[data-partition="0000"]').waitFor();
      await browser.screenshot('realtime-outage-run-stale-desktop', runPage.page);
      await browser.screenshot('realtime-outage-run-stale-phone', phone.page);
      // changed while the API cannot hear it (direct SQL, not through the proxy): only a re-read can show it
      await api.sql.query(`UPDATE nifi_ops.load_run SET status = 'FAILED_EXTRACT', error_code = 'OUTAGE' WHERE run_id = $1`, [run.runId]);

      // a reload during the outage: no counts or lists that look real
      await dashboard.page.reload();
      await dashboard.page.getByRole('alert').first().waitFor({ timeout: 20_000 });
      await dashboard.page.getByText('Counts unavailable until the API answers again.').waitFor();
      expect(await dashboard.page.getByText('No active runs.').isVisible()).toBe(false);
      expect(await dashboard.page.getByText('No runs match.').isVisible()).toBe(false);
      expect(await dashboard.page.getByRole('heading', { name: 'Active runs' }).isVisible()).toBe(false);
      expect(await dashboard.page.getByRole('heading', { name: /^Alerts/ }).textContent()).toBe('Alerts (—)');
      await browser.screenshot('realtime-outage-dashboard-reloaded-desktop', dashboard.page);
    } finally {
      await proxy.restore();
    }
    for (const { page } of tabs) await expect.poll(() => liveState(page).getAttribute('data-live'), { timeout: 40_000 }).toBe('live');
    // every view read again: the change made meanwhile shows, and the banner is gone with its cause
    await expect.poll(() => dashboard.page.getByRole('alert').count(), { timeout: 20_000 }).toBe(0);
    await runEntry(dashboard.page, run.runId).filter({ hasText: 'FAILED EXTRACT' }).waitFor({ timeout: 20_000 });
    expect(await dashboard.page.getByText('Counts unavailable until the API answers again.').count()).toBe(0);
    for (const { page } of [runPage, phone])
      await page.locator('.page-head').filter({ hasText: 'FAILED EXTRACT' }).waitFor({ timeout: 20_000 });
    // and stays live: a new run reaches the dashboard
    const fresh = await createRun(api);
    await runEntry(dashboard.page, fresh.runId).waitFor({ timeout: 20_000 });
    await browser.screenshot('realtime-outage-recovered-desktop', dashboard.page);
    await browser.screenshot('realtime-outage-recovered-phone', phone.page);
    for (const { page } of tabs) await page.close();
  }, 180_000);
});

describe('a token removed on the server', () => {
  for (const size of SIZES) {
    it(`signs the tab out with a message when its stream is refused 401 (${size.name})`, async () => {
      const log = createLogger({ level: 'fatal', format: 'json' }, 'test');
      const serve = (tokens: typeof api.config.auth.tokens, port: number) => {
        const server = createApiServer({
          config: { ...api.config, auth: { ...api.config.auth, tokens } },
          db: api.db,
          log,
          metrics: createApiMetrics(),
          realtime: api.realtime,
        });
        return server.listen(port, '127.0.0.1').then(({ port: bound }) => ({ server, port: bound }));
      };
      const first = await serve(api.config.auth.tokens, 0);
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.goto(`http://127.0.0.1:${first.port}/`);
      await expect.poll(() => liveState(page).getAttribute('data-live'), { timeout: 20_000 }).toBe('live');
      // the operator's token is taken out of the configuration and the API restarted on the same port
      await first.server.close();
      const second = await serve(
        api.config.auth.tokens.filter((t) => t.name !== 'alice-operator'),
        first.port,
      );
      try {
        await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: 30_000 });
        await page.getByRole('status').filter({ hasText: 'The token is no longer accepted: sign in again.' }).waitFor();
        await browser.screenshot(`realtime-signed-out-${size.name}`, page);
      } finally {
        await page.close();
        await second.server.close();
      }
    }, 60_000);
  }
});
