// Alert hygiene, the PUBLISH_UNKNOWN decision kit and phone cards (issue 32, points 3, 5 and 7), in Chromium at 1280×800
// and 390×844 against a real API: alerts grouped by cause with filters, acknowledge and snooze; one toast per group
// with "Dismiss all", at most two on a phone; the run page's kit; alerts, readiness and partitions as cards on a phone,
// nothing scrolling sideways. axe-core on every view.
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { sweepStalePublishing } from '../../src/domain/sweeper/stale-publishing.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { CLAIM_PUBLISH, createRun, failCreatedRun, REPORT_PUBLISH_RESULT, startRun, toStagingValidated } from '../support/fixtures.js';
import { defineGate, unique } from '../support/gate-fixtures.js';
import { accessibilityViolations, ensureConsoleBuilt, openSignedInBrowser, SIZES, type Browser, type Size } from './browser.js';

let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi(
    {
      console: {
        publicUrl: null,
        publishChecks: [
          {
            job: 'KIT_*',
            target: 'dwh.orders PARTITION (business_date = {businessKey})',
            query: "SELECT count(*) FROM dwh.orders WHERE business_date = '{businessKey}' -- expect {expectedRows}",
          },
        ],
      },
    },
    { realtime: true },
  );
  browser = await openSignedInBrowser(TOKENS.operator);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

const opened: Page[] = [];
afterEach(async () => {
  for (const page of opened.splice(0)) if (!page.isClosed()) await page.close();
});

async function pageAt(size: Size, path: string): Promise<Page> {
  const page = await browser.context.newPage();
  opened.push(page);
  await page.setViewportSize({ width: size.width, height: size.height });
  await page.goto(`${api.url}${path}`);
  return page;
}

async function failures(jobKey: string, n: number): Promise<string[]> {
  const runIds: string[] = [];
  for (let i = 0; i < n; i++) {
    const { runId } = await createRun(api, { jobKey });
    await failCreatedRun(api, runId);
    runIds.push(runId);
  }
  return runIds;
}

/** How far the page is wider than the viewport: 0 when nothing scrolls sideways. */
const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

async function expectClean(page: Page, size: Size, name: string) {
  expect({ name, violations: await accessibilityViolations(page) }).toEqual({ name, violations: [] });
  expect({ name, sideways: await sideways(page) }).toEqual({ name, sideways: 0 });
  await browser.screenshot(`${name}-${size.name}`, page);
}

const groupRow = (page: Page, groupKey: string) => page.locator(`[data-group="${groupKey}"]`).filter({ has: page.locator('td') });

describe('alert groups on the dashboard', { timeout: 120_000 }, () => {
  for (const size of SIZES) {
    it(`lists one row per cause with its count, filters by kind and level, acknowledges and snoozes (${size.name})`, async () => {
      const job = unique('ALERTS_JOB').toUpperCase();
      const other = unique('ALERTS_OTHER').toUpperCase();
      await failures(job, 6);
      await failures(other, 1);
      const key = `RUN_FAILED:JOB:${job}`;
      const otherKey = `RUN_FAILED:JOB:${other}`;
      const page = await pageAt(size, '/');
      const row = groupRow(page, key);
      await expect.poll(() => row.locator('td.num').first().textContent(), { timeout: 20_000 }).toBe('6');
      expect(await row.textContent()).toContain(`job ${job}`);
      expect(await groupRow(page, otherKey).count()).toBe(1);
      if (size.name === 'phone') {
        // a card: every cell on its own line under its header's name
        expect(await row.evaluate((tr) => getComputedStyle(tr).display)).toBe('block');
      }
      await expectClean(page, size, 'alerts-groups');

      // filters: a kind with none of these, then the level of both
      await page.getByLabel('Kind').selectOption('RUN_STALE');
      await expect.poll(() => groupRow(page, key).count()).toBe(0);
      await page.getByLabel('Kind').selectOption('RUN_FAILED');
      await page.getByLabel('Level').selectOption('ERROR');
      await expect.poll(() => groupRow(page, key).count()).toBe(1);
      await page.getByLabel('Level').selectOption('WARN');
      await expect.poll(() => groupRow(page, key).count()).toBe(0);
      await page.getByLabel('Level').selectOption('');
      await page.getByLabel('Kind').selectOption('');

      // acknowledge with a note: shown with who and when, audited
      await row.getByRole('button', { name: /^Acknowledge/ }).click();
      const ack = page.getByRole('dialog', { name: 'Acknowledge alert group' });
      await ack.getByLabel(/Note/).fill(`source being migrated, ticket OPS-${size.width}`);
      expect(await accessibilityViolations(page)).toEqual([]);
      await browser.screenshot(`alerts-acknowledge-dialog-${size.name}`, page);
      await ack.getByRole('button', { name: 'Acknowledge' }).click();
      await expect
        .poll(() => row.textContent(), { timeout: 20_000 })
        .toMatch(new RegExp(`Acknowledged\\s*by alice-operator at .+source being migrated, ticket OPS-${size.width}`));
      expect(await row.getByRole('button', { name: /^Acknowledge/ }).count()).toBe(0);
      const { rows } = await api.sql.query(
        `SELECT actor, message FROM nifi_ops.load_event WHERE event_name = 'ALERT_GROUP_ACKNOWLEDGED' AND details->>'groupKey' = $1`,
        [key],
      );
      expect(rows).toEqual([{ actor: 'alice-operator', message: `source being migrated, ticket OPS-${size.width}` }]);
      await expectClean(page, size, 'alerts-acknowledged');

      // a new failure of the job raises the group again
      await failures(job, 1);
      await expect.poll(() => row.textContent(), { timeout: 20_000 }).toContain('1 new');

      // snooze: hidden by default, shown with "show snoozed"
      await row.getByRole('button', { name: /^Snooze/ }).click();
      const snooze = page.getByRole('dialog', { name: 'Snooze alert group' });
      await snooze.getByLabel('For').selectOption('24');
      await snooze.getByLabel(/Note/).fill('migration window until tomorrow');
      expect(await accessibilityViolations(page)).toEqual([]);
      await browser.screenshot(`alerts-snooze-dialog-${size.name}`, page);
      await snooze.getByRole('button', { name: 'Snooze' }).click();
      await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(0);
      await page.getByLabel(/Show snoozed/).check();
      await expect
        .poll(() => row.textContent(), { timeout: 20_000 })
        .toMatch(/Snoozed\s*until .+ by alice-operator: migration window until tomorrow/);
      await expectClean(page, size, 'alerts-show-snoozed');
    });
  }
});

describe('toasts', { timeout: 120_000 }, () => {
  for (const size of SIZES) {
    it(`shows one toast per group with how many came, at most two on a phone, and dismisses them all (${size.name})`, async () => {
      const page = await pageAt(size, '/');
      await expect.poll(() => page.locator('main .live').first().textContent(), { timeout: 20_000 }).toBe('Live');
      const jobs = [0, 1, 2].map((i) => unique(`TOASTS_${i}`).toUpperCase());
      await failures(jobs[0]!, 4);
      await failures(jobs[1]!, 1);
      await failures(jobs[2]!, 1);
      const toasts = page.locator('.toast');
      const first = page.locator(`.toast[data-group="RUN_FAILED:JOB:${jobs[0]}"]`);
      const groupsOfToasts = () => toasts.evaluateAll((items) => items.map((i) => i.getAttribute('data-group')));
      if (size.name === 'phone') {
        await expect
          .poll(() => page.locator('.toasts-more').textContent(), { timeout: 20_000 })
          .toMatch(/1 more alert group: see the alerts/);
        expect(await toasts.count()).toBe(2);
      } else {
        await expect
          .poll(async () => (await groupsOfToasts()).filter((g) => jobs.some((j) => g?.endsWith(j))).length, { timeout: 20_000 })
          .toBe(3);
        // one per group, however many of its alerts came
        expect(new Set(await groupsOfToasts()).size).toBe(await toasts.count());
        await expect.poll(() => first.textContent()).toMatch(new RegExp(`Run failed — job ${jobs[0]}( · \\d new)?`));
        expect(await first.locator('.message').textContent()).toBe('BAD_PLAN no plan');
      }
      expect(await accessibilityViolations(page)).toEqual([]);
      expect(await sideways(page)).toBe(0);
      await browser.screenshot(`alerts-toasts-${size.name}`, page);
      await page.getByRole('button', { name: 'Dismiss all' }).click();
      await expect.poll(() => toasts.count()).toBe(0);
    });
  }
});

describe('the PUBLISH_UNKNOWN decision kit', { timeout: 120_000 }, () => {
  for (const size of SIZES) {
    it(`shows who raised it, PG-50's details, the target and its check to copy, and chooses no outcome (${size.name})`, async () => {
      const run = await toStagingValidated(api, [3, 4], { create: { jobKey: 'KIT_ORDERS' } });
      const publishToken = randomUUID();
      await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
      const res = await api.gql(REPORT_PUBLISH_RESULT, {
        input: {
          runId: run.runId,
          publishToken,
          outcome: 'PUBLISH_UNKNOWN',
          errorCode: 'HS2_TIMEOUT',
          message: 'HiveServer2 did not answer within 600 s',
          queryId: 'hive_20261203_0042',
          details: { hiveServer: 'hs2-02.example', operationHandle: 'op-7f3a' },
        },
      });
      expect(res.body.errors).toBeUndefined();
      const page = await pageAt(size, `/runs/${run.runId}`);
      const panel = page.getByRole('region', { name: 'Publish outcome unknown' });
      await panel.waitFor({ timeout: 20_000 });
      expect(await panel.getByTestId('raised-by').textContent()).toBe('PG-50 (nifi-cluster)');
      expect(await panel.getByTestId('publish-target').textContent()).toBe(`dwh.orders PARTITION (business_date = ${run.businessKey})`);
      const text = await panel.textContent();
      expect(text).toContain('PG-50 saidHS2_TIMEOUT HiveServer2 did not answer within 600 s');
      expect(text).toContain('"operationHandle": "op-7f3a"');
      expect(text).toContain('hive_20261203_0042');
      expect(await panel.getByTestId('copy-text').textContent()).toBe(
        `SELECT count(*) FROM dwh.orders WHERE business_date = '${run.businessKey}' -- expect 7`,
      );
      await expectClean(page, size, 'kit-pg50');

      await page.getByRole('button', { name: 'Resolve PUBLISH_UNKNOWN…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Resolve PUBLISH_UNKNOWN' });
      expect(await dialog.getByRole('radio').evaluateAll((radios) => radios.map((r) => (r as HTMLInputElement).checked))).toEqual([
        false,
        false,
      ]);
      await dialog.getByLabel('Reason (at least 5 characters)').fill('checked the partition by hand');
      await dialog.getByRole('button', { name: 'Continue…' }).click();
      await expect.poll(() => dialog.getByRole('alert').textContent()).toBe('Choose what happened: PUBLISHED or FAILED_PUBLISH.');
      expect(await accessibilityViolations(page)).toEqual([]);
      await browser.screenshot(`kit-resolve-no-default-${size.name}`, page);
      await page.keyboard.press('Escape');
    });

    it(`says the sweeper raised a stale publish, never as PG-50's words (${size.name})`, async () => {
      const run = await toStagingValidated(api, [3, 4], { create: { jobKey: 'KIT_STALE' } });
      await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken: randomUUID() } });
      await api.sql.query(`UPDATE nifi_ops.load_run SET publish_started_at = clock_timestamp() - interval '3 hours' WHERE run_id = $1`, [
        run.runId,
      ]);
      await inTransaction(api.db, (tx) => sweepStalePublishing(tx, { recovery: api.config.recovery, dispatch: api.config.dispatch }));
      const page = await pageAt(size, `/runs/${run.runId}`);
      const panel = page.getByRole('region', { name: 'Publish outcome unknown' });
      await panel.waitFor({ timeout: 20_000 });
      expect(await panel.getByTestId('raised-by').textContent()).toBe('the sweeper (no result from PG-50)');
      const text = await panel.textContent();
      expect(text).not.toContain('PG-50 said');
      expect(text).toMatch(/The sweeper saidPUBLISH_STALE no publish result within/);
      expect(text).toContain('PG-50 never reported how the publish ended');
      await expectClean(page, size, 'kit-sweeper');
    });
  }
});

describe('phone cards', { timeout: 120_000 }, () => {
  for (const size of SIZES) {
    it(`shows readiness and a large run’s partitions as cards on a phone, rows on a desktop, nothing scrolling sideways (${size.name})`, async () => {
      const display = size.name === 'phone' ? 'block' : 'table-row';
      const consumer = unique('cards_mart');
      const job = unique('CARDS_UP').toUpperCase();
      await defineGate(api, consumer, [job]);
      const readiness = await pageAt(size, `/readiness?consumer=${consumer}&date=2026-11-02`);
      const jobRow = readiness.locator(`tr[data-job="${job}"]`);
      await jobRow.waitFor({ timeout: 20_000 });
      expect(await jobRow.evaluate((tr) => getComputedStyle(tr).display)).toBe(display);
      await expectClean(readiness, size, 'cards-readiness');

      // beyond 400 partitions the run page lists them in a table: cards on a phone
      const run = await startRun(
        api,
        Array.from({ length: 401 }, () => 1),
      );
      const runPage = await pageAt(size, `/runs/${run.runId}`);
      const partitionRow = runPage.locator('tr[data-partition-row="0000"]');
      await partitionRow.waitFor({ timeout: 20_000 });
      expect(await partitionRow.evaluate((tr) => getComputedStyle(tr).display)).toBe(display);
      await expectClean(runPage, size, 'cards-partitions');
    });
  }
});
