// A job's pause and the backfills in a real browser against a real API (with realtime) and a real worker: the pause
// banner with who, why and since when, Pause/Resume for an operator only; the backfill form's dry run before the start,
// a backfill's dates and its actions — each page checked by axe-core at 1280×800 and 390×844.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../src/worker/worker.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { unique } from '../support/gate-fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { accessibilityViolations, type Browser, ensureConsoleBuilt, openBrowser, SIZES, startConsoleWorker } from './browser.js';

let api: TestApi;
let receiver: Receiver;
let worker: Worker;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
  receiver = await startReceiver();
  worker = startConsoleWorker(api, receiver.url);
  browser = await openBrowser();
  page = browser.page;
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await receiver?.close();
  await api?.close();
});

async function signIn(token: string) {
  await page.goto(`${api.url}/backfills`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Token').fill(token);
  await page.keyboard.press('Enter');
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

async function expectAccessible(name: string) {
  for (const size of SIZES) {
    await page.setViewportSize(size);
    expect({ page: name, size: size.width, violations: await accessibilityViolations(page) }).toEqual({
      page: name,
      size: size.width,
      violations: [],
    });
    expect({ page: name, size: size.width, overflow: await overflow() }).toEqual({ page: name, size: size.width, overflow: 0 });
    await browser.screenshot(`backfills-${name}-${size.width}`);
  }
  await page.setViewportSize(SIZES[0]);
}

async function giveReason(confirm: string, reason: string) {
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Reason (recorded in the event log)').fill(reason);
  await dialog.getByRole('button', { name: confirm }).click();
  await dialog.waitFor({ state: 'detached' });
}

describe('pausing a job and its backfills in the console', { timeout: 120_000 }, () => {
  it('pauses a job from its runs page, plans and starts a backfill, pauses it; a viewer sees no buttons', async () => {
    const jobKey = unique('CONSOLE_BF')
      .toUpperCase()
      .replace(/[^A-Z0-9_]/g, '_');
    await signIn(TOKENS.operator);

    await page.goto(`${api.url}/jobs/${jobKey}`);
    await page.getByRole('button', { name: 'Pause job' }).click();
    await giveReason('Pause job', 'source database maintenance');
    const banner = page.getByTestId('job-paused');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('by alice-operator: source database maintenance');
    await expectAccessible('job-paused');

    await page.getByRole('link', { name: `Backfills of ${jobKey}` }).click();
    await page.getByLabel('From').fill('2026-05-01');
    await page.getByLabel('To').fill('2026-05-04');
    await page.getByLabel('At most at once').fill('2');
    await page.getByRole('button', { name: 'Plan' }).click();
    await page.getByRole('heading', { name: 'Dry run: 4 of 4 dates would start' }).waitFor();
    await expectAccessible('plan');
    await page.getByRole('button', { name: 'Start backfill of 4 dates' }).click();

    // the job is paused: the backfill holds its dates
    await page.getByRole('heading', { name: new RegExp(`^Backfill of ${jobKey}`) }).waitFor();
    expect(await page.getByTestId('backfill-progress').textContent()).toBe('0 succeeded, 0 running, 4 queued, 0 failed, 0 skipped of 4');
    await page.getByRole('button', { name: 'Pause' }).click();
    await giveReason('Pause', 'hold it until the weekend');
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    expect(await page.locator('tr[data-date="2026-05-01"]').textContent()).toContain('QUEUED');
    await expectAccessible('backfill');

    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_backfill WHERE job_key = $1', [jobKey]);
    expect(rows).toEqual([{ status: 'PAUSED' }]);

    // a viewer reads the same pages without an operator's buttons
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(TOKENS.viewer);
    await page.goto(`${api.url}/jobs/${jobKey}`);
    await page.getByTestId('job-paused').waitFor();
    expect(await page.getByRole('button', { name: 'Resume job' }).count()).toBe(0);
    await page.goto(`${api.url}/backfills?job=${jobKey}`);
    await page.locator('tr[data-backfill]').first().waitFor();
    expect(await page.getByRole('button', { name: 'Plan' }).count()).toBe(0);
  });
});
