// Issue 32, points 4 and 6, in Chromium at 1280×800 and 390×844: the Jobs page (last run, last success, duration
// trend, success rate; live), the job × business-date matrix (cells link to runs, by keyboard), the run page's event
// filters and older pages, the sign-in page's hint on a development instance, and GraphiQL with the console's token.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCEL_RUN } from '../../schema/documents/operator.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { createRun, failCreatedRun, startRun, toPublished } from '../support/fixtures.js';
import { toSuccess, unique } from '../support/gate-fixtures.js';
import { accessibilityViolations, ensureConsoleBuilt, openBrowser, openSignedInBrowser, type Browser } from './browser.js';

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };
const DEV_TOKENS_FILE = '.data/dev-tokens.json';

let api: TestApi;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true, devTokensFile: DEV_TOKENS_FILE });
  browser = await openSignedInBrowser(TOKENS.operator);
  page = browser.page;
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

async function open(target: Page, path: string) {
  await target.goto(`${api.url}${path}`);
  await target.locator('main h1').first().waitFor();
}

const overflow = (target: Page) => target.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/** axe-core at both sizes, nothing but a table's own region scrolling sideways, and a screenshot of each. */
async function expectAccessible(name: string, target: Page = page, screenshot: Browser = browser) {
  for (const size of [DESKTOP, PHONE]) {
    await target.setViewportSize(size);
    expect({ page: name, size: size.width, violations: await accessibilityViolations(target) }).toEqual({
      page: name,
      size: size.width,
      violations: [],
    });
    expect({ page: name, size: size.width, overflow: await overflow(target) }).toEqual({ page: name, size: size.width, overflow: 0 });
    await screenshot.screenshot(`jobs-${name}-${size.width}`, target);
  }
  await target.setViewportSize(DESKTOP);
}

const RECORD_EVENT = `mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`;

describe('the Jobs page and the matrix', { timeout: 120_000 }, () => {
  it('lists every job with its last run and success, duration trend and success rate, live; a job’s matrix links to its runs', async () => {
    const job = unique('JOBS_PAGE').toUpperCase();
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const success = await toPublished(api, [3, 4], { create: { jobKey: job, businessKey: yesterday } });
    await toSuccess(api, success.runId);
    const failed = await createRun(api, { jobKey: job, businessKey: today });
    await failCreatedRun(api, failed.runId);

    await open(page, '/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
    await expect.poll(() => page.title()).toBe('Jobs · Load Control');
    const row = page.locator(`tr[data-job="${job}"]`);
    await row.waitFor();
    await expect.poll(() => row.innerText()).toMatch(/FAILED MANIFEST/);
    expect(await row.innerText()).toContain('50%');
    expect(await row.innerText()).toContain(yesterday);
    const trend = row.getByRole('img');
    expect(await trend.getAttribute('aria-label')).toMatch(/^Durations of the last 2 runs, oldest first: shortest \d+:\d\d:\d\d, median/);
    await page.locator('main').getByText('Live', { exact: true }).waitFor();

    // a new run of the job: the row follows without a reload
    const running = await startRun(api, [5], { create: { jobKey: job, businessKey: `${today}-b` } });
    await expect.poll(() => row.innerText(), { timeout: 15_000 }).toMatch(/EXTRACTING/);
    await expectAccessible('jobs');

    // the job's page: the matrix over business dates, each cell the latest attempt, a run's cell a link
    await row.getByRole('link', { name: job }).click();
    await page.getByRole('heading', { name: `Runs of ${job}` }).waitFor();
    const matrix = page.getByRole('region', { name: 'Jobs by business date', exact: true });
    const cell = matrix.getByRole('link', { name: new RegExp(`^${job} on ${today}: FAILED MANIFEST\\s*, attempt 1 of 1$`) });
    await cell.waitFor();
    expect(await matrix.getByRole('link', { name: new RegExp(`^${job} on ${yesterday}: SUCCESS\\s*, attempt 1 of 1$`) }).count()).toBe(1);
    await expectAccessible('job-matrix');
    // by keyboard: focus the cell and follow it
    await cell.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/runs/${failed.runId}`);
    expect(running.runId).toBeTruthy();
  });
});

describe('the run page’s events', { timeout: 120_000 }, () => {
  it('are filtered by level, kind, partition and operator actions, and paged back to the oldest', async () => {
    const run = await startRun(api, [1, 1, 1]);
    for (let i = 0; i < 60; i++) {
      const input = { runId: run.runId, level: i % 20 === 0 ? 'WARN' : 'INFO', name: 'CHUNK_WRITTEN', partitionId: `000${i % 3}` };
      expect((await api.gql(RECORD_EVENT, { input })).body.errors).toBeUndefined();
    }
    const cancelled = await api.gql(
      CANCEL_RUN,
      { input: { runId: run.runId, reason: 'checking the event filters' } },
      { token: 'operator' },
    );
    expect(cancelled.body.errors).toBeUndefined();
    const total = (await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1`, [run.runId])).rows[0].n;

    await open(page, `/runs/${run.runId}`);
    const events = page.getByRole('region', { name: 'Events' }).or(page.locator('section[aria-labelledby="events-title"]'));
    const items = events.locator('ol.timeline > li');
    await expect.poll(() => items.count()).toBe(50);
    expect(await items.first().innerText()).toMatch(/RUN_CANCELLED/);
    await events.getByRole('button', { name: 'Older events' }).click();
    await expect.poll(() => items.count()).toBe(total - 50);
    expect(await events.getByRole('button', { name: 'Older events' }).count()).toBe(0);
    await events.getByRole('button', { name: 'Newer events' }).click();
    await expect.poll(() => items.count()).toBe(50);

    const form = page.getByRole('search', { name: 'Filter events' });
    await form.getByLabel('Operator actions only').check();
    await form.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => items.allInnerTexts()).toEqual([expect.stringMatching(/RUN_CANCELLED[\s\S]*by alice-operator/)]);
    await form.getByLabel('Operator actions only').uncheck();
    await form.getByLabel('Level').selectOption('WARN');
    await form.getByLabel('Kind').fill('chunk_written');
    await form.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => items.count()).toBe(3);
    await form.getByLabel('Level').selectOption('');
    await form.getByLabel('Partition').fill('0000');
    await form.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => items.count()).toBe(20);
    await expectAccessible('run-events');
    await form.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => items.count()).toBe(50);
  });
});

describe('signing in and GraphiQL', { timeout: 120_000 }, () => {
  it('says where the development tokens are on a development instance, and only there', async () => {
    const signedOut = await openBrowser();
    try {
      await open(signedOut.page, '/');
      const hint = signedOut.page.getByTestId('dev-tokens-hint');
      await hint.waitFor();
      expect(await hint.innerText()).toContain(DEV_TOKENS_FILE);
      await expectAccessible('sign-in-dev', signedOut.page, signedOut);
      const production = await startTestApi();
      try {
        await signedOut.page.goto(`${production.url}/`);
        await signedOut.page.getByRole('heading', { name: 'Sign in' }).waitFor();
        await signedOut.page.waitForLoadState('networkidle');
        expect(await signedOut.page.getByTestId('dev-tokens-hint').count()).toBe(0);
      } finally {
        await production.close();
      }
    } finally {
      await signedOut.close();
    }
  });

  it('sends the console’s token from GraphiQL, and offers an Authorization template without a sign-in', async () => {
    const introspection = (target: Page) =>
      target.waitForRequest((r) => r.url().endsWith('/graphql') && r.method() === 'POST', { timeout: 60_000 });
    await open(page, '/jobs');
    const signedIn = introspection(page);
    await page.goto(`${api.url}/graphql`);
    expect((await signedIn).headers().authorization).toBe(`Bearer ${TOKENS.operator}`);
    await page.getByText('Headers', { exact: true }).first().waitFor();
    await browser.screenshot('jobs-graphiql-1280');

    const signedOut = await openBrowser();
    try {
      const template = introspection(signedOut.page);
      await signedOut.page.goto(`${api.url}/graphql`);
      expect((await template).headers().authorization).toMatch(/^Bearer <a token: load-control token NAME ROLES/);
    } finally {
      await signedOut.close();
    }
  });
});
