// The zone times are shown in (issue 32, point 7): a browser elsewhere (Asia/Kolkata, UTC+05:30) sees its own
// zone, named with its offset, in one 24-hour format; it can choose UTC, which every time on the page follows at
// once and a reload remembers — the runs list's start-date filter included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { createRun } from '../support/fixtures.js';
import { unique } from '../support/gate-fixtures.js';
import { accessibilityViolations, ensureConsoleBuilt, openBrowser, type Browser } from './browser.js';

let api: TestApi;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
  browser = await openBrowser({ timezoneId: 'Asia/Kolkata' });
  await browser.page.goto(`${api.url}/`);
  await browser.page.getByLabel('Token').fill(TOKENS.operator);
  await browser.page.keyboard.press('Enter');
  await browser.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

/** An instant as the console writes it, in a zone shifted `offsetMinutes` from UTC. */
function shown(iso: string, offsetMinutes: number): string {
  return new Date(new Date(iso).getTime() + offsetMinutes * 60_000).toISOString().slice(0, 19).replace('T', ' ');
}

describe('the zone times are shown in', () => {
  it("shows the browser's zone by name and offset, follows a choice of UTC at once, and remembers it", async () => {
    const { page } = browser;
    const job = unique('ZONE').toUpperCase();
    const run = await createRun(api, { jobKey: job });
    const { rows } = await api.sql.query<{ started_at: Date }>('SELECT started_at FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    const startedAt = rows[0]!.started_at.toISOString();
    const startedCell = () => page.locator(`tr[data-run="${run.runId}"] td`).nth(9).textContent();

    await page.goto(`${api.url}/jobs/${encodeURIComponent(job)}`);
    const zone = page.getByLabel('Times in');
    await expect.poll(() => zone.locator('option:checked').textContent()).toMatch(/^Asia\/(Kolkata|Calcutta) \(UTC\+05:30\)$/);
    await expect.poll(startedCell, { timeout: 20_000 }).toBe(shown(startedAt, 330));

    await zone.selectOption('UTC');
    await expect.poll(startedCell).toBe(shown(startedAt, 0));
    await browser.screenshot('time-zone-utc');
    await page.reload();
    await expect.poll(() => page.getByLabel('Times in').inputValue(), { timeout: 20_000 }).toBe('UTC');
    await expect.poll(startedCell, { timeout: 20_000 }).toBe(shown(startedAt, 0));

    // a start date is a day in the chosen zone: in UTC the run started on its UTC date
    const utcDay = startedAt.slice(0, 10);
    await page.getByLabel('Started from').fill(utcDay);
    await page.getByLabel('Started until').fill(utcDay);
    await expect.poll(() => page.locator('tr[data-run]').count(), { timeout: 20_000 }).toBe(1);

    // back in the browser's zone a start date is a Kolkata day: the run's there (its UTC day, or the next one when it
    // started after 18:30 UTC)
    await page.getByLabel('Times in').selectOption('local');
    const localDay = shown(startedAt, 330).slice(0, 10);
    await page.getByLabel('Started from').fill(localDay);
    await page.getByLabel('Started until').fill(localDay);
    await expect.poll(() => page.locator('tr[data-run]').count(), { timeout: 20_000 }).toBe(1);
    await expect.poll(startedCell).toBe(shown(startedAt, 330));
    expect(await accessibilityViolations(page)).toEqual([]);
  });
});
