// The console pages an operator works from (issue 18, points 4-7), in Chromium against a real API and worker, at
// 1280×800 and 390×844: the runs list with its filters in the URL and a job's history, the run page (stages, progress,
// dispatch history, other attempts, the PUBLISH_UNKNOWN panel and what follows PUBLISHED, a large run's partition
// table), live readiness with every gate and each job's attempts — and axe-core on every page, on a populated ledger.
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { startHeartbeat, type Heartbeat } from '../../src/worker/heartbeat.js';
import type { Worker } from '../../src/worker/worker.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import {
  CLAIM_PUBLISH,
  FAIL_RUN,
  REPORT_PUBLISH_RESULT,
  chunkInput,
  claim,
  completeRun,
  createRun,
  report,
  startRun,
  toPublished,
  toStagingValidated,
} from '../support/fixtures.js';
import { defineGate, observed, toSuccess, unique } from '../support/gate-fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { accessibilityViolations, ensureConsoleBuilt, openBrowser, startConsoleWorker, type Browser } from './browser.js';

let api: TestApi;
let receiver: Receiver;
let worker: Worker;
let heartbeat: Heartbeat;
let browser: Browser;
let page: Page;

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
  receiver = await startReceiver();
  receiver.setDefault(400); // NiFi refuses: dispatches die at once, with their HTTP status
  worker = startConsoleWorker(api, receiver.url);
  heartbeat = startHeartbeat({
    db: api.db,
    log: createLogger({ level: 'fatal', format: 'json' }, 'test-heartbeat'),
    role: 'start',
    dispatcher: true,
    sweeper: true,
    registry: new Registry(),
  });
  browser = await openBrowser();
  page = browser.page;
  await page.goto(`${api.url}/`);
  await page.getByLabel('Token').fill(TOKENS.operator);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await heartbeat?.stop();
  await worker?.stop();
  await receiver?.close();
  await api?.close();
});

async function open(path: string) {
  await page.goto(`${api.url}${path}`);
  await page.locator('main h1').first().waitFor();
}

const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
const runRows = () => page.locator('tr[data-run]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')));
const query = () => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));

/**
 * axe-core's WCAG 2 A/AA rules on the page as it stands, at both sizes: none may fail, and on a phone nothing but a
 * table's own region scrolls sideways. A screenshot of each.
 */
async function expectAccessible(name: string) {
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    expect({ page: name, size: size.width, violations: await accessibilityViolations(page) }).toEqual({
      page: name,
      size: size.width,
      violations: [],
    });
    expect({ page: name, size: size.width, overflow: await overflow() }).toEqual({ page: name, size: size.width, overflow: 0 });
    await browser.screenshot(`axe-${name.replace(/[^a-z0-9]+/gi, '-')}-${size.width}`);
  }
  await page.setViewportSize(DESKTOP);
}

describe('the runs list', { timeout: 120_000 }, () => {
  it('searches job and business key by substring, filters by status and start date, sorts and pages, all in the URL', async () => {
    const job = unique('PAGES_ALPHA').toUpperCase();
    const other = unique('PAGES_BETA').toUpperCase();
    const mine: string[] = [];
    for (let i = 0; i < 52; i++)
      mine.push((await createRun(api, { jobKey: job, businessKey: `2026-11-${String((i % 28) + 1).padStart(2, '0')}-${i}` })).runId);
    const beta = await createRun(api, { jobKey: other, businessKey: 'beta-key-1' });
    const failed = await createRun(api, { jobKey: job, businessKey: 'failing-key' });
    await api.gql(FAIL_RUN, {
      input: {
        runId: failed.runId,
        expectedStatus: 'CREATED',
        failStatus: 'FAILED_MANIFEST',
        errorStage: 'MANIFEST',
        errorCode: 'E_MANIFEST',
      },
    });

    await open('/');
    // lower case finds the upper-case job key: a substring, in any case
    await page.getByLabel('Job contains').fill(job.slice(6).toLowerCase());
    await expect.poll(query, { timeout: 20_000 }).toEqual({ job: job.slice(6).toLowerCase() });
    // the list says it is updating until the filter's own answer is shown
    await page.locator('.runs-shown[aria-busy="false"]').waitFor({ timeout: 20_000 });
    expect(await runRows()).toHaveLength(50);
    expect(await runRows()).not.toContain(beta.runId);
    // newest first: the failed run was created last
    expect((await runRows())[0]).toBe(failed.runId);
    await browser.screenshot('runs-search-job');

    // the next page continues with the cursor in the URL; back returns to the first
    await page.getByRole('link', { name: 'Next page' }).click();
    await expect.poll(() => runRows()).toHaveLength(3);
    expect((await query()).after).toBeTruthy();
    expect(await runRows()).not.toContain(failed.runId);
    await page.goBack();
    await expect.poll(async () => (await runRows())[0]).toBe(failed.runId);

    // status, then oldest first; a reload keeps both
    await page.getByLabel('Status').selectOption('FAILED_MANIFEST');
    await expect.poll(() => runRows()).toEqual([failed.runId]);
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Business key contains').fill('2026-11-01-');
    await page.getByLabel('Order').selectOption('oldest');
    await expect.poll(query).toEqual({ job: job.slice(6).toLowerCase(), key: '2026-11-01-', order: 'oldest' });
    await expect.poll(() => runRows()).toEqual([mine[0], mine[28]]);
    await page.reload();
    await expect.poll(() => runRows(), { timeout: 20_000 }).toEqual([mine[0], mine[28]]);
    expect(await page.getByLabel('Business key contains').inputValue()).toBe('2026-11-01-');
    expect(await page.getByLabel('Order').inputValue()).toBe('oldest');

    // a start range: from tomorrow nothing, from yesterday until today everything
    const day = (offset: number) => {
      const d = new Date(Date.now() + offset * 86_400_000);
      return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
    };
    await page.getByLabel('Started from').fill(day(1));
    await expect.poll(() => page.getByText('No runs match.').count()).toBe(1);
    await page.getByLabel('Started from').fill(day(-1));
    await page.getByLabel('Started until').fill(day(0));
    await expect.poll(() => runRows()).toEqual([mine[0], mine[28]]);
    expect(await query()).toMatchObject({ from: day(-1), to: day(0) });
    await browser.screenshot('runs-filters-in-url');
    await expectAccessible('runs list, filtered');
  });

  it('finds a run by the first digits of its id, lists a dashboard count when clicked, and titles every page', async () => {
    const job = unique('PAGES_ID').toUpperCase();
    const run = await createRun(api, { jobKey: job });
    await open('/');
    await expect.poll(() => page.title()).toBe('Dashboard · Load Control');

    // too few digits are not asked for, and say why; eight find the run (the API's runIdPrefix)
    await page.getByLabel('Run id starts with').fill(run.runId.slice(0, 3));
    await page.getByText('At least 4 hexadecimal digits of the id.').waitFor();
    await page.getByLabel('Run id starts with').fill(run.runId.slice(0, 8).toUpperCase());
    await expect.poll(query, { timeout: 20_000 }).toEqual({ id: run.runId.slice(0, 8).toUpperCase() });
    await expect.poll(() => runRows(), { timeout: 20_000 }).toEqual([run.runId]);
    await browser.screenshot('runs-by-id');

    // a count is the list of its runs
    await open('/');
    await page
      .getByRole('link', { name: /^CREATED [\d,]+$/ })
      .first()
      .click();
    await expect.poll(query).toEqual({ status: 'CREATED' });
    await expect.poll(async () => (await runRows()).length, { timeout: 20_000 }).toBeGreaterThan(0);
    const statuses = await page.locator('tr[data-run] .badge').allTextContents();
    expect(new Set(statuses.map((t) => t.trim()))).toEqual(new Set(['CREATED']));

    await open(`/runs/${run.runId}`);
    await expect.poll(() => page.title()).toBe(`${job} / ${run.businessKey} (run ${run.runId.slice(0, 8)}) · Load Control`);
    await open('/readiness');
    await expect.poll(() => page.title()).toBe('Readiness · Load Control');
    await open(`/jobs/${encodeURIComponent(job)}`);
    await expect.poll(() => page.title()).toBe(`Runs of ${job} · Load Control`);
    await open('/no/such/page');
    await expect.poll(() => page.title()).toBe('Page not found · Load Control');
  });

  it("shows one job's history, and on a phone cards with the status first and nothing scrolling sideways", async () => {
    const job = unique('PAGES_HISTORY').toUpperCase();
    const first = await createRun(api, { jobKey: job, businessKey: 'a-long-business-key-that-would-not-fit-a-phone-row-2026-11-30' });
    await api.gql(FAIL_RUN, {
      input: {
        runId: first.runId,
        expectedStatus: 'CREATED',
        failStatus: 'FAILED_MANIFEST',
        errorStage: 'MANIFEST',
        errorCode: 'E_MANIFEST',
      },
    });
    const second = await createRun(api, { jobKey: job, businessKey: 'a-long-business-key-that-would-not-fit-a-phone-row-2026-11-30' });
    await createRun(api, { jobKey: unique('PAGES_OTHER').toUpperCase() });

    await open(`/?job=${encodeURIComponent(job.toLowerCase())}`);
    await page.getByRole('link', { name: job }).first().click();
    await page.getByRole('heading', { name: `Runs of ${job}` }).waitFor();
    await expect.poll(() => runRows(), { timeout: 20_000 }).toEqual([second.runId, first.runId]);
    await browser.screenshot('job-history');
    await expectAccessible('job history');

    await page.setViewportSize(PHONE);
    try {
      await page.reload();
      const cards = page.locator('[data-run-card]');
      await expect.poll(() => cards.count(), { timeout: 20_000 }).toBe(2);
      expect(await page.locator('.runs-table').isVisible()).toBe(false);
      // the status is the first thing on each card
      expect(await cards.first().locator('.run-card-head > *').first().textContent()).toBe('CREATED');
      expect(await cards.nth(1).locator('.run-card-head > *').first().textContent()).toBe('FAILED MANIFEST');
      expect(await overflow()).toBeLessThanOrEqual(0);
      await browser.screenshot('phone-job-history-cards');
      await open('/');
      await page.locator('[data-run-card]').first().waitFor({ timeout: 20_000 });
      expect(await overflow()).toBeLessThanOrEqual(0);
      await browser.screenshot('phone-dashboard-cards');
    } finally {
      await page.setViewportSize(DESKTOP);
    }
  });
});

describe('the run page', { timeout: 120_000 }, () => {
  it('shows the stages with durations, the dispatch history with HTTP status and error, and the other attempts', async () => {
    const businessKey = `2026-11-${randomUUID().slice(0, 6)}`;
    const job = unique('PAGES_RUN').toUpperCase();
    const earlier = await createRun(api, { jobKey: job, businessKey });
    await api.gql(FAIL_RUN, {
      input: {
        runId: earlier.runId,
        expectedStatus: 'CREATED',
        failStatus: 'FAILED_MANIFEST',
        errorStage: 'MANIFEST',
        errorCode: 'E_MANIFEST',
      },
    });
    const run = await toPublished(api, [3, 4], { create: { jobKey: job, businessKey } });
    await toSuccess(api, run.runId);

    await open(`/runs/${run.runId}`);
    const stages = page.getByRole('list', { name: 'Stages' });
    await stages.waitFor();
    expect(
      await stages
        .locator('[data-stage]')
        .evaluateAll((items) => items.map((i) => [i.getAttribute('data-stage'), i.getAttribute('data-state')])),
    ).toEqual([
      ['Created', 'done'],
      ['Extracted', 'done'],
      ['Stage validated', 'done'],
      ['Published', 'done'],
      ['Success', 'done'],
    ]);
    expect(await stages.locator('[data-stage="Success"]').textContent()).toMatch(/took \d+:\d\d:\d\d/);

    const attempts = page.getByRole('region', { name: 'Other attempts' });
    await attempts.getByRole('link', { name: `Run ${earlier.runId}` }).click();
    await page.getByRole('list', { name: 'Stages' }).locator('[data-state="stopped"]').waitFor();
    expect(await page.locator('[data-stage="Extracted"]').textContent()).toContain('not reached: FAILED MANIFEST');
    await page.getByRole('link', { name: `Run ${run.runId}` }).waitFor();
    await browser.screenshot('run-failed-attempt');
    await page.goBack();
    await stages.waitFor();
    await browser.screenshot('run-stages');
    await expectAccessible('run page, succeeded');

    // a call NiFi refused: its HTTP status, when it died and the whole error
    const dead = await completeRun(api);
    await expect
      .poll(
        async () => (await api.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE run_id = $1', [dead.runId])).rows[0]?.status,
        {
          timeout: 20_000,
        },
      )
      .toBe('DEAD');
    await open(`/runs/${dead.runId}`);
    const dispatch = page.locator(`tr[data-dispatch="${dead.dispatchId}"]`);
    await expect.poll(() => dispatch.getByTestId('http-status').textContent(), { timeout: 20_000 }).toBe('400');
    expect(await dispatch.textContent()).toContain('dead 20');
    const { rows } = await api.sql.query('SELECT last_error FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [dead.dispatchId]);
    expect(await dispatch.locator('td.message').textContent()).toBe(rows[0].last_error);
    await browser.screenshot('run-dispatch-history');
  });

  it('shows extraction progress as chunks arrive, with a rate', async () => {
    const run = await startRun(api, [10, 10, 10, 10]);
    await open(`/runs/${run.runId}`);
    const progress = page.getByTestId('progress');
    await expect.poll(() => progress.textContent(), { timeout: 20_000 }).toContain('0 of 40 rows');
    const { claimToken } = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', claimToken, 0, 2, 5));
    // a chunk counts before its partition finishes
    await expect
      .poll(() => progress.textContent(), { timeout: 20_000 })
      .toMatch(/^12% · 5 of 40 rows · partitions 0 of 4 · [\d,]+ rows\/s · about \d+:\d\d:\d\d left$/);
    await browser.screenshot('run-progress');
    await expectAccessible('run page, extracting');
  });

  it('shows what resolving PUBLISH_UNKNOWN needs, the full error text, and the next step once resolved as PUBLISHED', async () => {
    const run = await toStagingValidated(api);
    await open('/');
    await expect.poll(() => page.locator('main .live').first().textContent(), { timeout: 20_000 }).toBe('Live');
    const publishToken = randomUUID();
    await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
    const message =
      `HiveServer2 closed the connection while INSERT OVERWRITE was running; ${'the driver could not tell whether it committed. '.repeat(3)}`.trim();
    const unknown = await api.gql(REPORT_PUBLISH_RESULT, {
      input: { runId: run.runId, publishToken, outcome: 'PUBLISH_UNKNOWN', message, queryId: 'hive_20261130_0042_abc' },
    });
    expect(unknown.body.errors).toBeUndefined();

    // the alert's whole message, not its first 80 characters
    const alert = page
      .getByRole('region', { name: /^Alerts/ })
      .locator('tr', { has: page.getByRole('link', { name: `Run ${run.runId}` }) })
      .filter({ hasText: 'PUBLISH UNKNOWN' });
    await alert.waitFor({ timeout: 20_000 });
    expect(await alert.locator('td.message').textContent()).toBe(message);
    // the toast, in the page's flow: no button lies under it
    const toast = page.locator('[data-toast="PUBLISH_UNKNOWN"]');
    await toast.waitFor({ timeout: 20_000 });
    expect(await toast.locator('.message').textContent()).toBe(message);
    expect(
      await page.evaluate(() => {
        const box = document.querySelector('.toasts')!.getBoundingClientRect();
        return [...document.querySelectorAll('main button')].filter((b) => {
          const r = b.getBoundingClientRect();
          return r.width > 0 && r.left < box.right && r.right > box.left && r.top < box.bottom && r.bottom > box.top;
        }).length;
      }),
    ).toBe(0);
    await browser.screenshot('dashboard-toast-full-alert');
    await expectAccessible('dashboard');

    await alert.getByRole('link', { name: `Run ${run.runId}` }).click();
    const panel = page.getByRole('region', { name: 'Publish outcome unknown' });
    await panel.waitFor();
    const text = await panel.textContent();
    expect(text).toContain(publishToken);
    expect(text).toContain('hive_20261130_0042_abc');
    expect(text).toContain(message);
    expect(text).toMatch(/Unknown since.+\(\d+:\d\d:\d\d after the claim\)/);
    // who raised it, in PG-50's words; no check configured for this job
    expect(await panel.getByTestId('raised-by').textContent()).toBe('PG-50 (nifi-cluster)');
    expect(text).toContain('PG-50 said');
    expect(await panel.getByTestId('publish-target').textContent()).toBe('not configured for this job (console.publishChecks)');
    // the counts of every stage side by side, and the STAGING metrics
    expect(await panel.getByRole('table', { name: 'Row counts by stage' }).locator('tbody td').allTextContents()).toEqual([
      '7',
      '7',
      '7',
      '—',
    ]);
    const metrics = panel.getByRole('table', { name: 'Metrics by stage' });
    expect(await metrics.locator('tr', { hasText: 'STAGE_COUNT' }).textContent()).toContain('7 (PASS)');
    expect(await metrics.locator('tr', { hasText: 'DUP_PK_COUNT' }).textContent()).toContain('0 (PASS)');
    await browser.screenshot('run-publish-unknown');
    await expectAccessible('run page, PUBLISH_UNKNOWN');

    await page.getByRole('button', { name: 'Resolve PUBLISH_UNKNOWN…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Resolve PUBLISH_UNKNOWN' });
    await dialog.getByRole('radio', { name: /PUBLISHED — the target has the data/ }).check();
    await dialog.getByLabel('Reason (at least 5 characters)').fill('the target partition holds 7 rows');
    await expectAccessible('resolve dialog');
    await dialog.getByRole('button', { name: 'Continue…' }).click();
    await page.getByRole('dialog', { name: 'Confirm the resolution' }).getByRole('button', { name: 'Resolve as PUBLISHED' }).click();

    const next = page.getByRole('region', { name: 'Next: target validation' });
    await next.waitFor({ timeout: 20_000 });
    expect(await next.textContent()).toContain('resolved as PUBLISHED by alice-operator: the target partition holds 7 rows');
    expect(await next.textContent()).toContain('markSuccess');
    // Cancel stays, but no longer as a lone red button
    expect(await page.getByRole('button', { name: 'Cancel run…' }).getAttribute('class')).toBeNull();
    expect(await page.getByRole('region', { name: 'Publish outcome unknown' }).count()).toBe(0);
    // its alert cleared: so did the toast (the page was never reloaded)
    await expect.poll(() => toast.count(), { timeout: 20_000 }).toBe(0);
    await browser.screenshot('run-published-next-step');
  });

  it('collapses a large run into a summary bar and a filterable, paged table', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 450 }, () => 2),
    );
    for (const pid of ['0007', '0107']) {
      const { claimToken } = await claim(api, run.runId, pid);
      await report(api, chunkInput(run, pid, claimToken, 0, 1, 2));
    }
    // one chunk of two: its row counts in the progress before the partition finishes
    const { claimToken } = await claim(api, run.runId, '0200');
    await report(api, chunkInput(run, '0200', claimToken, 0, 2, 1));
    await open(`/runs/${run.runId}`);
    await page.getByTestId('partition-range').waitFor({ timeout: 20_000 });
    expect(await page.locator('[data-partition]').count()).toBe(0);
    expect((await page.locator('[data-status-count]').allTextContents()).sort()).toEqual(['PENDING: 447', 'RUNNING: 1', 'SUCCESS: 2']);
    expect(await page.getByTestId('progress').textContent()).toMatch(/^0% · 5 of 900 rows · partitions 2 of 450/);
    expect(await page.getByTestId('partition-range').textContent()).toBe('Partitions 1–50 of 450');
    // the page is about one screen, not thousands of pixels of cells
    expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(6000);

    await page.getByRole('button', { name: 'Next partitions' }).click();
    await expect.poll(() => page.getByTestId('partition-range').textContent()).toBe('Partitions 51–100 of 450');
    await page.getByLabel('Partition status').selectOption('SUCCESS');
    await expect.poll(() => page.getByTestId('partition-range').textContent()).toBe('Partitions 1–2 of 2');
    await page.getByLabel('Partition status').selectOption('');
    await page.getByLabel('Partition id contains').fill('107');
    await expect.poll(() => page.getByTestId('partition-range').textContent()).toBe('Partitions 1–1 of 1');
    await page.getByRole('button', { name: 'Partition 0107: SUCCESS' }).click();
    await page.getByRole('heading', { name: 'Partition 0107' }).waitFor();
    await browser.screenshot('run-large-table');
    await expectAccessible('run page, 450 partitions');
  });
});

describe('readiness', { timeout: 120_000 }, () => {
  it('lists every gate, keeps a checked date live and shows each required job’s attempts', async () => {
    const D = '2026-11-30';
    const consumer = unique('PAGES_REPORTS');
    const [ledger, fx] = [unique('PAGES_LEDGER'), unique('PAGES_FX')];
    await defineGate(api, consumer, [ledger, fx]);
    await observed(api, { jobId: ledger, businessDate: D, attempt: 1, state: 'FAILED', runId: 'ledger-1' });
    await observed(api, { jobId: ledger, businessDate: D, attempt: 2, state: 'SUCCEEDED', runId: 'ledger-2' });
    await observed(api, { jobId: fx, businessDate: D, attempt: 1, state: 'RUNNING', runId: 'fx-1' });

    await open('/readiness');
    await page.getByLabel('Business date').fill(D);
    const gateRow = page.locator(`tr[data-gate="${consumer}"]`);
    await gateRow.waitFor({ timeout: 20_000 });
    expect(await gateRow.textContent()).toContain(ledger);
    expect(await gateRow.textContent()).toContain(fx);
    await gateRow.getByRole('link', { name: `Check on ${D}` }).click();
    await expect.poll(query).toEqual({ consumer, date: D });
    const result = page.getByRole('heading', { name: new RegExp(`${consumer} on ${D}`) });
    await expect.poll(() => result.textContent(), { timeout: 20_000 }).toContain('NOT READY');
    await expect.poll(() => page.locator('main .live').textContent(), { timeout: 20_000 }).toBe('Live');
    const attempts = (job: string) => page.getByRole('list', { name: `Attempts of ${job}` }).locator('li');
    await expect
      .poll(() => attempts(ledger).allTextContents())
      .toEqual([expect.stringMatching(/^#1 FAILED ledger-1/), expect.stringMatching(/^#2 SUCCEEDED ledger-2/)]);
    await browser.screenshot('readiness-attempts');

    // fx succeeds: the page follows without a click, its attempts included
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 7));
    await observed(api, { jobId: fx, businessDate: D, attempt: 1, state: 'SUCCEEDED', runId: 'fx-1' });
    await expect.poll(async () => (await result.textContent())?.includes('NOT READY'), { timeout: 20_000 }).toBe(false);
    await expect.poll(() => attempts(fx).allTextContents()).toEqual([expect.stringMatching(/^#1 SUCCEEDED fx-1/)]);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(7);
    // the URL holds what was checked: a reload shows it again
    await page.reload();
    await expect.poll(() => result.textContent(), { timeout: 20_000 }).toContain(': READY');
    await browser.screenshot('readiness-live-ready');
    await expectAccessible('readiness');

    await gateRow.getByRole('link', { name: consumer, exact: true }).click();
    await page
      .getByRole('heading', { name: new RegExp(consumer) })
      .first()
      .waitFor();
    await expectAccessible('gate page');
  });
});

describe('every other page', { timeout: 120_000 }, () => {
  it('passes axe-core: sign-in, a run with a grid and a dead call, not found', async () => {
    const run = await completeRun(api, [2, 2, 2]);
    await open(`/runs/${run.runId}`);
    await page.locator('[data-partition]').first().waitFor({ timeout: 20_000 });
    await expectAccessible('run page, grid');
    await open('/runs/not-a-run');
    await page.getByRole('heading', { name: 'Run not found' }).waitFor();
    await expectAccessible('run not found');
    await open('/nowhere');
    await expectAccessible('page not found');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expectAccessible('sign in');
    await page.getByLabel('Token').fill(TOKENS.operator);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  });
});
