// The dashboard's Notifications in a real browser: the latest alert webhooks with their delivery, by receiver
// name — never the URL or the headers, which may hold secrets.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { failCreatedRun, createRun } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { testWorker, workerConfig, type TestWorkerParts } from '../support/worker.js';
import { ensureConsoleBuilt, openBrowser, type Browser } from './browser.js';

const SECRET = 'Bearer browser-hook-secret';

let api: TestApi;
let nifi: Receiver;
let hook: Receiver;
let worker: TestWorkerParts;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
  [nifi, hook] = await Promise.all([startReceiver(), startReceiver()]);
  worker = testWorker(api, {
    ...workerConfig(api, nifi),
    alerts: { webhooks: [{ name: 'ops-hook', url: hook.url, kinds: null, headers: { Authorization: SECRET }, format: 'generic' }] },
  });
  browser = await openBrowser();
  page = browser.page;
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await worker?.close();
  await Promise.all([nifi?.close(), hook?.close()]);
  await api?.close();
});

async function failedRun(): Promise<string> {
  const { runId } = await createRun(api);
  await failCreatedRun(api, runId);
  return runId;
}

describe('the dashboard', () => {
  it('lists the latest alert notifications with their delivery, naming the receiver and nothing of its URL or headers', async () => {
    // the receiver's first cycle is its baseline
    await worker.sweeper.cycle();
    const delivered = await failedRun();
    await worker.sweeper.cycle();
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);
    const retried = await failedRun();
    await worker.sweeper.cycle();
    hook.script({ status: 503, body: 'hook busy' });
    expect(await worker.dispatcher.dispatchOnce()).toBe(1);

    await page.goto(`${api.url}/`);
    await page.getByLabel('Token').fill(TOKENS.viewer);
    await page.keyboard.press('Enter');
    const table = page.getByRole('region', { name: 'Notifications' }).locator('table');
    await table.waitFor({ timeout: 20_000 });
    const row = (runId: string) => table.locator('tr', { has: page.getByRole('link', { name: `Run ${runId}` }) });
    await expect
      .poll(() => row(retried).locator('td').allTextContents())
      .toEqual(['PENDING', 'ops-hook', 'RUN FAILED', expect.any(String), '1', '503', expect.any(String), 'hook busy']);
    expect(await row(delivered).locator('td').allTextContents()).toEqual([
      'ACKED',
      'ops-hook',
      'RUN FAILED',
      expect.any(String),
      '1',
      '202',
      expect.any(String),
      '—',
    ]);
    const html = await page.content();
    expect(html).not.toContain(SECRET);
    expect(html).not.toContain(hook.url);
    await browser.screenshot('notifications-dashboard');
  });
});
