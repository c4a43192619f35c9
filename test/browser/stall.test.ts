// A load whose partitions stop reporting, in Chromium at 1280×800 and 390×844 against a real API: the run page
// shows the stall (a rate of 0 over the last minute, "no progress since", no time left), lists the silent partitions,
// and reissues one from that list; the dashboard shows the STALLED_RUN alert. Heartbeats are aged by SQL.
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { chunkInput, claim, report, startRun } from '../support/fixtures.js';
import { accessibilityViolations, ensureConsoleBuilt, openSignedInBrowser, SIZES, type Browser } from './browser.js';

let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({ monitor: { stallAfter: 10 * 60_000 } }, { realtime: true });
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

/** Six partitions: 0000 and 0001 done, 0002 and 0003 RUNNING with chunks, then nothing reports for 12 minutes. */
async function stalledRun() {
  const run = await startRun(
    api,
    Array.from({ length: 6 }, () => 4),
  );
  for (const id of ['0000', '0001']) {
    const { claimToken } = await claim(api, run.runId, id);
    await report(api, chunkInput(run, id, claimToken, 0, 1, 4));
  }
  for (const id of ['0002', '0003']) {
    const { claimToken } = await claim(api, run.runId, id, undefined, `nifi-0${id.at(-1)}`);
    await report(api, chunkInput(run, id, claimToken, 0, 2, 2));
  }
  await api.sql.query(
    `UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp() - interval '12 minutes' - (partition_id || ' seconds')::interval,
            created_at = clock_timestamp() - interval '20 minutes' WHERE run_id = $1`,
    [run.runId],
  );
  await api.sql.query(
    `UPDATE nifi_ops.load_run SET heartbeat_at = clock_timestamp() - interval '12 minutes', started_at = clock_timestamp() - interval '20 minutes'
      WHERE run_id = $1`,
    [run.runId],
  );
  return run;
}

describe('a run whose partitions stop reporting', () => {
  for (const size of SIZES) {
    it(`shows the stall, no time left, the silent partitions, and reissues one from the list (${size.name})`, async () => {
      const run = await stalledRun();
      const page = await browser.context.newPage();
      opened.push(page);
      await page.setViewportSize({ width: size.width, height: size.height });
      await page.goto(`${api.url}/runs/${run.runId}`);

      const progress = page.getByTestId('progress');
      await expect.poll(() => progress.textContent(), { timeout: 20_000 }).toMatch(/ · 0 rows\/s · no progress since \d{2}:\d{2}/);
      expect(await progress.textContent()).not.toMatch(/left/);
      await expect
        .poll(() => page.getByTestId('stalled').textContent())
        .toMatch(/Nothing has moved for more than 10 min on 2 RUNNING partition/);
      const listed = page.locator('[data-stalled-partition]');
      await expect
        .poll(() => listed.evaluateAll((items) => items.map((i) => i.getAttribute('data-stalled-partition'))))
        .toEqual(['0003', '0002']);
      expect(await listed.first().textContent()).toMatch(/Partition 0003 · nifi-03 · attempt 1 · 1 of 2 chunks.*last heartbeat/);
      expect(await accessibilityViolations(page)).toEqual([]);
      await page.getByRole('heading', { name: /^Stalled partitions/ }).scrollIntoViewIfNeeded();
      await browser.screenshot(`stall-run-${size.name}`, page);

      await page.getByRole('button', { name: 'Reissue 0002…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Reissue partition 0002' });
      await dialog.getByLabel(/Reason/).fill('nifi-02 stopped reporting');
      await dialog.getByRole('button', { name: 'Reissue' }).click();
      await expect
        .poll(() => listed.evaluateAll((items) => items.map((i) => i.getAttribute('data-stalled-partition'))), { timeout: 20_000 })
        .toEqual(['0003']);
      const { rows } = await api.sql.query(
        `SELECT p.status, e.actor, e.message FROM nifi_ops.load_partition p
           JOIN nifi_ops.load_event e ON e.run_id = p.run_id AND e.partition_id = p.partition_id AND e.event_name = 'RECOVERY_REISSUED'
          WHERE p.run_id = $1 AND p.partition_id = '0002'`,
        [run.runId],
      );
      expect(rows).toEqual([{ status: 'RETRY', actor: 'alice-operator', message: expect.stringContaining('nifi-02 stopped reporting') }]);
      expect(await accessibilityViolations(page)).toEqual([]);

      // the dashboard lists the alert with the others
      await page.goto(`${api.url}/`);
      await page
        .getByText(/STALLED RUN/)
        .first()
        .waitFor({ timeout: 30_000 });
      expect(await accessibilityViolations(page)).toEqual([]);
      await browser.screenshot(`stall-dashboard-${size.name}`, page);
    }, 120_000);
  }
});
