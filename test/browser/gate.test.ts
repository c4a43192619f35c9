// The console's gate pages in a real browser against a real API (with realtime) and a real worker: readiness kept
// live by readinessChanged, the expected-by deadlines, the publications with their evidence linked to its runs and
// the attempts it superseded, a receiver's dead call resent, and the gate's jobs over business dates (the matrix).
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { sweepOnce } from '../../src/domain/sweeper/sweep.js';
import type { Worker } from '../../src/worker/worker.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { FAIL_RUN, createRun, failCreatedRun, toPublished } from '../support/fixtures.js';
import { PUBLISH, defineGate, observed, publishInput, toSuccess, unique } from '../support/gate-fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import {
  accessibilityViolations,
  ensureConsoleBuilt,
  openBrowser,
  openSignedInBrowser,
  SIZES,
  startConsoleWorker,
  type Browser,
} from './browser.js';

let api: TestApi;
let receiver: Receiver;
/** The gate's own receiver (NiFi's gets the runs' calls). */
let gateReceiver: Receiver;
let worker: Worker;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
  receiver = await startReceiver();
  gateReceiver = await startReceiver();
  worker = startConsoleWorker(api, receiver.url);
  browser = await openBrowser();
  page = browser.page;
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await receiver?.close();
  await gateReceiver?.close();
  await api?.close();
});

async function signIn() {
  await page.goto(`${api.url}/readiness`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Token').fill(TOKENS.operator);
  await page.keyboard.press('Enter');
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

describe('the gate pages', () => {
  it('keep readiness live, show deadlines, list publications with linked and superseded evidence, and resend a dead call', async () => {
    const D = '2026-03-31';
    const consumer = unique('REPORTS');
    const [jobKey, fx] = [unique('LEDGER').toUpperCase(), unique('fx')];
    gateReceiver.script(400); // the receiver refuses the first call: it dies at once
    await defineGate(api, consumer, [jobKey, fx], undefined, {
      notifyUrl: `${gateReceiver.url}gates/${consumer}`,
      expectedBy: [{ jobId: fx, daysAfter: 1, time: '06:00', timeZone: 'Asia/Seoul' }],
    });
    // the Load Control job's first attempt failed, its second succeeded: the evidence supersedes attempt 1
    const failed = await createRun(api, { jobKey, businessKey: D });
    await api.gql(FAIL_RUN, {
      input: { runId: failed.runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'MANIFEST', errorCode: 'E' },
    });
    const run = await toPublished(api, [3, 4], { create: { jobKey, businessKey: D } });
    await toSuccess(api, run.runId);
    await observed(api, { jobId: fx, businessDate: D, state: 'SUCCEEDED', runId: 'fx-1' });
    expect((await api.gql(PUBLISH, publishInput(consumer, D))).body.data!.publish.published).toBe(true);

    await signIn();
    await page.getByLabel('Consumer').fill(consumer);
    await page.getByLabel('Business date').fill(D);
    await page.getByRole('button', { name: 'Check' }).click();
    const result = page.getByRole('heading', { name: new RegExp(`${consumer} on ${D}`) });
    await expect.poll(() => result.textContent(), { timeout: 20_000 }).toContain(': READY');
    await expect.poll(() => page.locator('main .live').textContent(), { timeout: 20_000 }).toBe('Live');
    expect(await page.getByTestId('decision').textContent()).toContain('Decision v1 (ready)');
    expect(await page.locator(`tr[data-job="${fx}"]`).textContent()).toContain('D+1 06:00 Asia/Seoul (2026-');

    // a newer attempt of fx starts: the page follows without a click
    await observed(api, { jobId: fx, businessDate: D, attempt: 2, state: 'RUNNING', runId: 'fx-2' });
    await expect.poll(() => result.textContent(), { timeout: 20_000 }).toContain('NOT READY');
    await expect.poll(() => page.getByTestId('decision').textContent()).toContain('Decision v2 (not ready)');
    await browser.screenshot('gate-01-readiness-live');

    await page.getByRole('link', { name: `Publications, decisions and calls of ${consumer}` }).click();
    await page.getByRole('heading', { name: `Gate ${consumer}` }).waitFor();
    expect(await page.locator('li', { hasText: fx }).first().textContent()).toContain('expected by D+1 06:00 Asia/Seoul');
    const publication = page.locator(`[data-publication="${D}"]`);
    await publication.waitFor();
    const ledgerRow = publication.locator(`tr[data-evidence="${jobKey}"]`);
    expect(await ledgerRow.locator('[data-relation="superseded"]').getAttribute('data-attempt')).toBe('1');
    expect(await ledgerRow.locator('[data-relation="superseded"] s').textContent()).toBe('#1');
    expect(await ledgerRow.locator('[data-relation="superseded"]').textContent()).toContain('FAILED');
    expect(await publication.locator(`tr[data-evidence="${fx}"] [data-relation="newer"]`).textContent()).toContain('#2');

    // the receiver refused decision v1: its call is DEAD, and an operator sends it again
    const calls = page.getByRole('region', { name: 'Calls to the receiver' });
    const deadRow = calls.locator('tr', { hasText: 'v1' });
    expect(await deadRow.textContent()).toContain('DEAD');
    await browser.screenshot('gate-02-publications-and-calls');
    await deadRow.getByRole('button', { name: 'Resend…' }).click();
    await page
      .getByRole('dialog')
      .getByLabel(/Reason/)
      .fill('receiver fixed its route');
    await page.getByRole('dialog').getByRole('button', { name: 'Resend' }).click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByRole('heading', { name: `Gate ${consumer}` }).waitFor();
          return calls.locator('tr', { hasText: 'v1' }).textContent();
        },
        { timeout: 20_000 },
      )
      .toContain('ACKED');
    const v1 = gateReceiver.calls.filter((c) => c.body.version === 1);
    expect(v1).toHaveLength(2);
    expect(new Set(v1.map((c) => c.headers['x-dispatch-id'])).size).toBe(1);

    // the evidence links to its run
    await ledgerRow
      .getByRole('link', { name: `Run ${run.runId}` })
      .first()
      .click();
    await page.getByRole('heading', { name: new RegExp(D) }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/runs/${run.runId}`);
  });

  it('shows a deadline the sweeper found missed, on the readiness page and among the dashboard’s alerts', async () => {
    const consumer = unique('LATE_REPORTS');
    const job = unique('upstream');
    // a deadline that passed ten minutes ago in Seoul, D+1: for the business date before today's there
    const { rows } = await api.sql.query<{ time: string; business_date: string }>(
      `SELECT to_char(t, 'HH24:MI') AS time, to_char(t::date - 1, 'YYYY-MM-DD') AS business_date
         FROM (SELECT (clock_timestamp() - interval '10 minutes') AT TIME ZONE 'Asia/Seoul' AS t) local`,
    );
    const { time, business_date: businessDate } = rows[0]!;
    await defineGate(api, consumer, [job], undefined, { expectedBy: [{ jobId: job, daysAfter: 1, time, timeZone: 'Asia/Seoul' }] });
    // set before the deadline passed: the sweeper checks deadlines that passed after their expectation was set
    await api.sql.query(`UPDATE nifi_ops.gate_required_job SET expected_since = expected_since - interval '1 day' WHERE consumer = $1`, [
      consumer,
    ]);
    // this sweep, or the worker's own if it holds the sweeper's lock at that moment
    const checked = async () => {
      await inTransaction(api.db, (tx, afterCommit) => sweepOnce(tx, api.config, afterCommit));
      return (await api.sql.query('SELECT outcome FROM nifi_ops.gate_deadline_check WHERE job_id = $1', [job])).rows;
    };
    await expect.poll(checked, { timeout: 20_000 }).toEqual([{ outcome: 'OBSERVATION_MISSING' }]);

    await page.goto(`${api.url}/readiness`);
    await page.getByRole('heading', { name: 'Readiness' }).waitFor();
    await page.getByLabel('Consumer').fill(consumer);
    await page.getByLabel('Business date').fill(businessDate);
    await page.getByRole('button', { name: 'Check' }).click();
    const row = page.locator(`tr[data-job="${job}"]`);
    await expect.poll(() => row.textContent(), { timeout: 20_000 }).toContain('OBSERVATION MISSING');
    expect(await row.textContent()).toContain(`D+1 ${time} Asia/Seoul`);

    await page.getByRole('link', { name: 'Dashboard' }).click();
    const alert = page.getByRole('region', { name: /^Alerts/ }).locator('tr', { hasText: job });
    await expect.poll(() => alert.textContent(), { timeout: 20_000 }).toContain('OBSERVATION MISSING');
    expect(await alert.textContent()).toContain(businessDate);
    await browser.screenshot('gate-03-deadline-missed');
  });

  it('says so for a consumer without a gate', async () => {
    await page.goto(`${api.url}/gates/${unique('nobody')}`);
    await page.getByRole('heading', { name: /^No gate / }).waitFor();
  });
});

describe('the gate page’s matrix', { timeout: 120_000 }, () => {
  /** A cell of the matrix: one job on one business date. */
  const cellOf = (target: Page, job: string, date: string) => target.locator(`tr[data-matrix-job="${job}"] [data-date="${date}"]`);
  /** What a cell says, to a screen reader as to the eye: job, date, status, attempt and the gate's readiness. */
  const said = async (cell: Locator) => (await cell.textContent())?.replace(/\s+/g, ' ').trim();
  const readinessOn = (target: Page, date: string) => target.locator(`.matrix-table th[title="${date}"] .matrix-ready`).textContent();

  for (const size of SIZES) {
    it(`shows the required jobs and the job held back over business dates, links a run’s cell to it, and follows a required job’s run live (${size.name})`, async () => {
      const today = new Date().toISOString().slice(0, 10);
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      const consumer = unique('MATRIX_REPORTS');
      // required jobs are listed in job order (A before b in any collation), then the job the gate holds back
      const [ledger, fx, report] = [unique('MATRIX_A_LEDGER').toUpperCase(), unique('matrix_b_fx'), unique('MATRIX_REPORT').toUpperCase()];
      await defineGate(api, consumer, [ledger, fx], report);
      // yesterday both required jobs succeeded: ready; today the ledger's first attempt failed: not ready
      const succeeded = await toPublished(api, [3, 4], { create: { jobKey: ledger, businessKey: yesterday } });
      await toSuccess(api, succeeded.runId);
      await observed(api, { jobId: fx, businessDate: yesterday, state: 'SUCCEEDED' });
      await observed(api, { jobId: fx, businessDate: today, state: 'SUCCEEDED' });
      const failed = await createRun(api, { jobKey: ledger, businessKey: today });
      await failCreatedRun(api, failed.runId);

      const matrixBrowser = await openSignedInBrowser(TOKENS.operator);
      const target = matrixBrowser.page;
      try {
        // the matrix's runChanged subscription accepted: from then on a run's change reaches the page
        const subscribed = target.waitForResponse(
          (response) =>
            response.url().endsWith('/graphql/stream') &&
            response.request().method() === 'POST' &&
            (response.request().postData() ?? '').includes('RunsChanged') &&
            response.status() === 202,
        );
        await target.setViewportSize(size);
        await target.goto(`${api.url}/gates/${consumer}`);
        await target.getByRole('heading', { name: `Gate ${consumer}` }).waitFor();
        const matrix = target.getByRole('region', { name: 'Jobs by business date', exact: true });
        await matrix.waitFor();
        // a phone shows a week, a desktop two, ending today
        const dates = await matrix.locator('thead th[title]').evaluateAll((ths) => ths.map((th) => th.getAttribute('title')));
        expect([dates.length, dates.at(-1)]).toEqual([size.name === 'phone' ? 7 : 14, today]);
        expect(await matrix.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-matrix-job')))).toEqual([
          ledger,
          fx,
          report,
        ]);
        expect(await matrix.locator('tbody th[scope="row"]').last().textContent()).toBe(`${report}, gate ${consumer}`);
        // it opens on the newest dates: today's column in view, the job column beside it (sticky), on a phone too
        const todayHeader = matrix.locator(`thead th[title="${today}"]`);
        const [region, todayBox, jobBox] = await Promise.all([
          matrix.boundingBox(),
          todayHeader.boundingBox(),
          matrix.locator('tbody th[scope="row"]').first().boundingBox(),
        ]);
        expect(todayBox!.x + todayBox!.width).toBeLessThanOrEqual(region!.x + region!.width + 1);
        expect(jobBox!.x).toBeGreaterThanOrEqual(region!.x - 1);
        expect([await readinessOn(target, yesterday), await readinessOn(target, today)]).toEqual(['ready', 'not ready']);
        expect(await said(cellOf(target, ledger, yesterday))).toBe(`${ledger} on ${yesterday}: SUCCESS, attempt 1 of 1`);
        expect(await said(cellOf(target, ledger, today))).toBe(`${ledger} on ${today}: FAILED MANIFEST, attempt 1 of 1`);
        expect(await said(cellOf(target, fx, yesterday))).toBe(`${fx} on ${yesterday}: SUCCEEDED, attempt 1 of 1`);
        expect(await said(cellOf(target, report, yesterday))).toBe(`${report} on ${yesterday}: none, gate ready`);
        expect(await said(cellOf(target, report, today))).toBe(`${report} on ${today}: none, gate not ready`);
        // a Load Control run's cell links to the run; an observed attempt's has nowhere to go
        expect(await cellOf(target, ledger, yesterday).getAttribute('href')).toBe(`/runs/${succeeded.runId}`);
        expect(await cellOf(target, fx, yesterday).evaluate((cell) => cell.tagName)).toBe('SPAN');
        expect(await accessibilityViolations(target)).toEqual([]);
        expect(await target.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBe(0);
        await matrixBrowser.screenshot(`gate-04-matrix-${size.name}`);

        // live: the ledger's second attempt for today succeeds; its cell, the date's readiness and the held-back job's follow
        await subscribed;
        // the gate page has no liveness of its own: the matrix's section says whether it follows the ledger
        await expect.poll(() => target.locator('section.matrix .live').textContent(), { timeout: 20_000 }).toBe('Live');
        const second = await toPublished(api, [3, 4], { create: { jobKey: ledger, businessKey: today } });
        await toSuccess(api, second.runId);
        await expect
          .poll(() => said(cellOf(target, ledger, today)), { timeout: 20_000 })
          .toBe(`${ledger} on ${today}: SUCCESS, attempt 2 of 2×2`);
        expect(await cellOf(target, ledger, today).getAttribute('href')).toBe(`/runs/${second.runId}`);
        expect(await readinessOn(target, today)).toBe('ready');
        expect(await said(cellOf(target, report, today))).toBe(`${report} on ${today}: none, gate ready`);
        await matrixBrowser.screenshot(`gate-05-matrix-live-${size.name}`);

        await cellOf(target, ledger, yesterday).click();
        await target.waitForURL(`**/runs/${succeeded.runId}`);
        await target.getByRole('heading', { name: new RegExp(yesterday) }).waitFor();
      } finally {
        await matrixBrowser.close();
      }
    });
  }
});
