// The console's gate pages in a real browser against a real API (with realtime) and a real worker: readiness kept
// live by readinessChanged, the expected-by deadlines, the publications with their evidence linked to its runs and
// the attempts it superseded, and a receiver's dead call resent.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { sweepOnce } from '../../src/domain/sweeper/sweep.js';
import type { Worker } from '../../src/worker/worker.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { FAIL_RUN, createRun, toPublished } from '../support/fixtures.js';
import { PUBLISH, defineGate, observed, publishInput, toSuccess, unique } from '../support/gate-fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { ensureConsoleBuilt, openBrowser, startConsoleWorker, type Browser } from './browser.js';

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
