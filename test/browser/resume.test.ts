// A failed run resumed from its page, in Chromium at 1280×800 and 390×844 against a real API: the failed run shows
// its tags, the flow and the Resume action; the new attempt's page says which partitions were carried over and from
// which run; the runs list finds both attempts by a tag typed in its Tags box. Checked with axe-core.
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { toFailedExtract } from '../support/fixtures.js';
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

describe('resuming a failed run from the console', () => {
  for (const size of SIZES) {
    it(`resumes it and shows the carried partitions, the tags and the flow (${size.name})`, async () => {
      const team = `t${Date.now().toString(36)}${size.name}`;
      const failed = await toFailedExtract(api, [3, 4, 5, 6], ['0000', '0002'], {
        tags: `team=${team},source=erp`,
        flowRegistry: 'registry-prod',
        flowBucket: 'loads',
        flowId: 'insp-dtl',
        flowVersion: '12',
      });
      const page = await browser.context.newPage();
      opened.push(page);
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.goto(`${api.url}/runs/${failed.runId}`);

      const tags = page.getByRole('list', { name: 'Tags' });
      await expect.poll(() => tags.getByRole('listitem').allTextContents(), { timeout: 20_000 }).toEqual(['source=erp', `team=${team}`]);
      expect(await page.getByText('registry-prod / loads / insp-dtl, version 12').count()).toBe(1);
      expect(await accessibilityViolations(page)).toEqual([]);

      await page.getByRole('button', { name: 'Resume at its SCN…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Resume run' });
      expect(await dialog.textContent()).toMatch(/Its 2 succeeded partitions are carried over; NiFi extracts the other 2 again/);
      await dialog.getByLabel(/Reason/).fill('ORA-03113 on 0001, the source is back');
      await dialog.getByRole('button', { name: 'Resume' }).click();

      // the new attempt's page
      await page.waitForURL((url) => /\/runs\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(failed.runId), {
        timeout: 20_000,
      });
      const resumedId = new URL(page.url()).pathname.split('/').at(-1)!;
      const carried = page.getByRole('region', { name: 'Carried over' });
      await expect
        .poll(() => carried.textContent(), { timeout: 20_000 })
        .toMatch(new RegExp(`2 partitions from run ${failed.runId.slice(0, 8)}.*: 0000, 0002`));
      expect(
        await page
          .getByRole('link', { name: `run ${failed.runId.slice(0, 8)}` })
          .first()
          .getAttribute('href'),
      ).toBe(`/runs/${failed.runId}`);
      await expect.poll(() => tags.getByRole('listitem').allTextContents()).toEqual(['source=erp', `team=${team}`]);
      expect(await page.getByRole('button', { name: 'Resume at its SCN…' }).count()).toBe(0);
      expect(await accessibilityViolations(page)).toEqual([]);
      await carried.scrollIntoViewIfNeeded();
      await browser.screenshot(`resume-run-${size.name}`, page);
      const { rows } = await api.sql.query(`SELECT retry_of_run_id::text, created_by FROM nifi_ops.load_run WHERE run_id = $1`, [
        resumedId,
      ]);
      expect(rows).toEqual([{ retry_of_run_id: failed.runId, created_by: 'alice-operator' }]);

      // the runs list, filtered by the tag: both attempts and nothing else
      await page.goto(`${api.url}/`);
      const runs = page.getByRole('region', { name: 'Runs' });
      await runs.getByLabel('Tags', { exact: true }).fill(`team=${team}`);
      // the table's links on a desktop, the cards' on a phone
      const listed = runs.locator('a[href^="/runs/"]:visible');
      await expect
        .poll(async () => (await listed.evaluateAll((links) => links.map((l) => l.getAttribute('href')))).sort(), { timeout: 20_000 })
        .toEqual([`/runs/${failed.runId}`, `/runs/${resumedId}`].sort());
      expect(await accessibilityViolations(page)).toEqual([]);
      await browser.screenshot(`runs-by-tag-${size.name}`, page);
    }, 120_000);
  }
});
