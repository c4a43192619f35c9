// The bulk bar of a job's runs and the source pools panel, in Chromium at 1280×800 and 390×844 against a real API:
// a preview lists the targets, the confirmation names their count and asks why, the apply shows what became of
// them; the dashboard shows each pool's use and an operator changes its limit there. Checked with axe.
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFINE_POOL, ASSIGN_JOB_TO_POOL } from '../../schema/documents/operator.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { claim, createRun, startRun, toPublishUnknown } from '../support/fixtures.js';
import { accessibilityViolations, ensureConsoleBuilt, openSignedInBrowser, SIZES, type Browser } from './browser.js';

let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
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

async function statuses(jobKey: string): Promise<string[]> {
  const { rows } = await api.sql.query(`SELECT status FROM nifi_ops.load_run WHERE job_key = $1 ORDER BY business_key`, [jobKey]);
  return rows.map((r) => r.status);
}

describe('the bulk bar of a job', () => {
  for (const size of SIZES) {
    it(`previews, confirms with the count and a reason, and shows the summary (${size.name})`, async () => {
      const jobKey = `BULK_WEB_${size.name.toUpperCase()}_${randomUUID().slice(0, 6).toUpperCase()}`;
      await createRun(api, { jobKey, businessKey: '2026-08-01' });
      await startRun(api, [1], { create: { jobKey, businessKey: '2026-08-02' } });
      await toPublishUnknown(api, 'HS2_TIMEOUT', { create: { jobKey, businessKey: '2026-08-03' } });
      const page = await browser.context.newPage();
      opened.push(page);
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.goto(`${api.url}/jobs/${jobKey}`);

      await page.getByLabel('Business date from').fill('2026-08-01');
      await page.getByLabel('to', { exact: true }).fill('2026-08-31');
      await page.getByRole('button', { name: 'Preview' }).click();
      const preview = page.getByTestId('bulk-preview');
      await expect
        .poll(() => preview.getByRole('status').textContent())
        .toBe('Preview: 3 targets: 2 would be changed, 0 already so, 1 refused (RUN_STATUS_MISMATCH 1).');
      expect(await accessibilityViolations(page)).toEqual([]);
      await browser.screenshot(`bulk-preview-${size.name}`, page);

      await page.getByRole('button', { name: 'Cancel 2 runs…' }).click();
      const dialog = page.getByRole('dialog', { name: `Cancel 2 runs of ${jobKey}?` });
      await dialog.waitFor();
      expect(await accessibilityViolations(page)).toEqual([]);
      await dialog.getByRole('button', { name: 'Cancel 2 runs' }).click();
      expect(await dialog.getByRole('alert').textContent()).toMatch(/at least 5 characters/);
      expect(await statuses(jobKey)).toEqual(['CREATED', 'EXTRACTING', 'PUBLISH_UNKNOWN']);
      await dialog.getByLabel('Reason (recorded in the event log)').fill('wrong source snapshot');
      await dialog.getByRole('button', { name: 'Cancel 2 runs' }).click();

      await expect
        .poll(() => page.getByTestId('bulk-result').textContent())
        .toBe('Done: 3 targets: 2 changed, 0 already so, 1 refused (RUN_STATUS_MISMATCH 1).');
      expect(await statuses(jobKey)).toEqual(['CANCELLED', 'CANCELLED', 'PUBLISH_UNKNOWN']);
      expect(await accessibilityViolations(page)).toEqual([]);
    });
  }
});

describe('the source pools panel', () => {
  for (const size of SIZES) {
    it(`shows each pool's use and changes its limit (${size.name})`, async () => {
      const pool = `oracle-${size.name}-${randomUUID().slice(0, 6)}`;
      const jobKey = `POOL_WEB_${randomUUID().slice(0, 6).toUpperCase()}`;
      await api.gql(DEFINE_POOL, { input: { name: pool, maxRunning: 1 } }, { token: 'operator' });
      await api.gql(ASSIGN_JOB_TO_POOL, { input: { jobKey, pool } }, { token: 'operator' });
      const run = await startRun(api, [1, 1], { create: { jobKey } });
      await claim(api, run.runId, '0000');

      const page = await browser.context.newPage();
      opened.push(page);
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.goto(`${api.url}/`);
      const row = page.getByRole('row').filter({ hasText: pool });
      await expect.poll(() => row.getByTestId('pool-use').textContent()).toBe('1 / 1');
      expect(await accessibilityViolations(page)).toEqual([]);

      await row.getByRole('button', { name: `Change limit of ${pool}…` }).click();
      const dialog = page.getByRole('dialog', { name: `Change the limit of ${pool}` });
      await dialog.getByLabel('Most RUNNING partitions').fill('3');
      await dialog.getByLabel('Reason (recorded in the event log)').fill('the DBA allows three sessions');
      expect(await accessibilityViolations(page)).toEqual([]);
      await dialog.getByRole('button', { name: 'Change limit' }).click();
      await expect.poll(() => row.getByTestId('pool-use').textContent()).toBe('1 / 3');
      const { rows } = await api.sql.query(`SELECT max_running, updated_by FROM nifi_ops.source_pool WHERE pool_name = $1`, [pool]);
      expect(rows).toEqual([{ max_running: 3, updated_by: 'alice-operator' }]);
    });
  }
});
