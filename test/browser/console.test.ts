// The operator console in a real browser against a real API (with realtime) and a real worker:
// sign in, watch a partition grid fill, resolve PUBLISH_UNKNOWN, resend a DEAD dispatch, and more.
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { startHeartbeat, type Heartbeat } from '../../src/worker/heartbeat.js';
import { startWorker, type Worker } from '../../src/worker/worker.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import {
  CLAIM_PUBLISH,
  REPORT_PUBLISH_RESULT,
  chunkInput,
  claim,
  completeRun,
  createRun,
  report,
  startRun,
  toStagingValidated,
} from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { purgeLedger } from '../../src/domain/retention/purge.js';
import { formatDate } from '../../web/src/format.js';
import { ensureConsoleBuilt, openBrowser, type Browser } from './browser.js';

let api: TestApi;
let receiver: Receiver;
let worker: Worker;
let heartbeat: Heartbeat;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ensureConsoleBuilt();
  api = await startTestApi({}, { realtime: true });
  receiver = await startReceiver();
  receiver.setDefault(400); // NiFi refuses: a 4xx other than 408/425/429 makes the dispatch DEAD at once
  worker = startWorker({
    config: {
      ...api.config,
      nifi: { ...api.config.nifi, receiverUrl: receiver.url, timeoutSeconds: 5 },
      dispatch: { ...api.config.dispatch, pollInterval: 300 },
    },
    db: api.db,
    log: createLogger({ level: 'fatal', format: 'json' }, 'test-worker'),
    registry: new Registry(),
  });
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
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await heartbeat?.stop();
  await worker?.stop();
  await receiver?.close();
  await api?.close();
});

async function signIn(token: keyof typeof TOKENS) {
  await page.goto(`${api.url}/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Token').fill(TOKENS[token]);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}

/** Opens a console page, signing in as the operator first when this tab is not signed in yet. */
async function open(path: string) {
  await page.goto(`${api.url}${path}`);
  await page.locator('main h1').first().waitFor();
  if (await page.getByRole('heading', { name: 'Sign in' }).count()) {
    await page.getByLabel('Token').fill(TOKENS.operator);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }
}

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
}

const cell = (partitionId: string) => page.locator(`[data-partition="${partitionId}"]`);
const statuses = (ids: string[]) => Promise.all(ids.map((id) => cell(id).getAttribute('data-status')));
const focusedText = () => page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');

async function runStatus(runId: string): Promise<string> {
  const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0].status;
}

describe('the console', () => {
  it('signs in with the keyboard, refusing a wrong token, and shows the live dashboard', async () => {
    await page.goto(`${api.url}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await browser.screenshot('01-sign-in');
    // the token field has the focus: type and press Enter, nothing else
    await page.keyboard.type('not-a-token');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Authentication failed');
    await page.getByLabel('Token').fill(TOKENS.operator);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await expect.poll(() => page.locator('.page-head .live').textContent(), { timeout: 20_000 }).toBe('Live');
    const run = await createRun(api);
    // a new run appears in the table without a reload
    await page.locator(`tr[data-run="${run.runId}"]`).waitFor({ timeout: 20_000 });
    // the processes: this one live with its dispatcher; a worker that stopped beating is flagged
    const processes = page.getByRole('region', { name: 'Processes' });
    await expect.poll(() => processes.textContent()).toContain('LIVE');
    expect(await processes.textContent()).not.toContain('No dispatcher is running');
    await api.sql.query(
      `INSERT INTO nifi_ops.process_instance (instance_id, role, host, pid, version, dispatcher, sweeper, started_at, last_seen_at)
       VALUES ($1, 'work', 'etl-quiet', 77, '0.1.0', true, true, now() - interval '1 hour', now() - interval '10 minutes')`,
      [randomUUID()],
    );
    await expect.poll(() => processes.locator('li.attention').textContent(), { timeout: 20_000 }).toContain('etl-quiet');
    await browser.screenshot('02-dashboard');
  });

  it("shows a run's partition grid filling while a script reports chunks", async () => {
    const counts = Array.from({ length: 16 }, () => 4);
    const run = await startRun(api, counts);
    const ids = counts.map((_, i) => String(i).padStart(4, '0'));
    await open(`/`);
    await page.getByRole('link', { name: `Run ${run.runId}` }).click();
    await page.getByRole('heading', { name: new RegExp(run.businessKey) }).waitFor();
    await expect.poll(() => page.locator('.page-head .live').textContent(), { timeout: 20_000 }).toBe('Live');
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    expect(await statuses(ids)).toEqual(ids.map(() => 'PENDING'));

    const reportAll = async (pids: string[]) => {
      for (const pid of pids) {
        const { claimToken } = await claim(api, run.runId, pid);
        for (const index of [0, 1]) {
          const r = await report(api, chunkInput(run, pid, claimToken, index, 2, 2));
          expect(r.body.errors).toBeUndefined();
        }
      }
    };
    const first = ids.slice(0, 8);
    await reportAll(first);
    await expect.poll(() => statuses(ids), { timeout: 20_000 }).toEqual(ids.map((id) => (first.includes(id) ? 'SUCCESS' : 'PENDING')));
    await browser.screenshot('03-partition-grid-half');

    // one chunk of the next partition: RUNNING, with its progress in the cell's name
    const { claimToken } = await claim(api, run.runId, '0008');
    await report(api, chunkInput(run, '0008', claimToken, 0, 2, 2));
    await expect
      .poll(() => cell('0008').getAttribute('aria-label'), { timeout: 20_000 })
      .toBe('Partition 0008 RUN: RUNNING, 1 chunks received');
    await report(api, chunkInput(run, '0008', claimToken, 1, 2, 2));

    await reportAll(ids.slice(9));
    await expect.poll(() => statuses(ids), { timeout: 20_000 }).toEqual(ids.map(() => 'SUCCESS'));
    await expect.poll(() => page.locator('.page-head .badge').textContent(), { timeout: 20_000 }).toBe('EXTRACTED VALIDATED');
    // every change arrived over the subscription: the page was never reloaded
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    await browser.screenshot('04-partition-grid-full');

    // the grid is one Tab stop; arrow keys move between cells, Enter shows the partition
    await cell('0000').focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Partition 0001' }).waitFor();
  });

  it('resolves a PUBLISH_UNKNOWN run: a reason of at least 5 characters, then a second confirmation', async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await api.gql(CLAIM_PUBLISH, { input: { runId: run.runId, publishToken } });
    const unknown = await api.gql(REPORT_PUBLISH_RESULT, {
      input: { runId: run.runId, publishToken, outcome: 'PUBLISH_UNKNOWN', message: 'target timed out' },
    });
    expect(unknown.body.data!.reportPublishResult.runStatus).toBe('PUBLISH_UNKNOWN');

    await open(`/`);
    const row = page.locator('tr', { has: page.getByRole('link', { name: `Run ${run.runId}` }) }).filter({ hasText: 'PUBLISH UNKNOWN' });
    const resolve = row.getByRole('button', { name: 'Resolve…' });
    await resolve.waitFor({ timeout: 20_000 });

    // Escape closes the dialog and gives the focus back
    await resolve.click();
    await page.getByRole('dialog', { name: 'Resolve PUBLISH_UNKNOWN' }).waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(await focusedText()).toBe('Resolve…');

    await resolve.click();
    const dialog = page.getByRole('dialog', { name: 'Resolve PUBLISH_UNKNOWN' });
    // an irreversible decision: no outcome is chosen for the operator
    expect(await dialog.getByRole('radio', { name: /FAILED_PUBLISH/ }).isChecked()).toBe(false);
    expect(await dialog.getByRole('radio', { name: /PUBLISHED/ }).isChecked()).toBe(false);
    await dialog.getByLabel('Reason (at least 5 characters)').fill('checked the target table: the rows are not there');
    await dialog.getByRole('button', { name: 'Continue…' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toBe('Choose what happened: PUBLISHED or FAILED_PUBLISH.');
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).value)).toBe('FAILED_PUBLISH');
    await browser.screenshot('05-resolve-no-outcome-chosen');
    await dialog.getByRole('radio', { name: /FAILED_PUBLISH/ }).check();
    await dialog.getByLabel('Reason (at least 5 characters)').fill('no');
    await dialog.getByRole('button', { name: 'Continue…' }).click();
    await expect.poll(() => dialog.getByRole('alert').textContent()).toContain('at least 5 characters');
    await browser.screenshot('05-resolve-reason-too-short');
    await dialog.getByLabel('Reason (at least 5 characters)').fill('checked the target table: the rows are not there');
    await dialog.getByRole('button', { name: 'Continue…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Confirm the resolution' });
    await confirm.waitFor();
    // Cancel has the focus: Enter alone never resolves
    expect(await focusedText()).toBe('Cancel');
    await browser.screenshot('06-resolve-confirm');
    expect(await runStatus(run.runId)).toBe('PUBLISH_UNKNOWN');
    await confirm.getByRole('button', { name: 'Resolve as FAILED PUBLISH' }).click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);

    expect(await runStatus(run.runId)).toBe('FAILED_PUBLISH');
    const { rows } = await api.sql.query(
      `SELECT actor, message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN_RESOLVED'`,
      [run.runId],
    );
    expect(rows).toEqual([{ actor: 'alice-operator', message: 'checked the target table: the rows are not there' }]);
    // the live summary drops the PUBLISH_UNKNOWN alert and raises the failure instead
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(0);
    await page
      .locator('tr', { has: page.getByRole('link', { name: `Run ${run.runId}` }) })
      .filter({ hasText: 'RUN FAILED' })
      .waitFor({ timeout: 20_000 });
    await browser.screenshot('07-resolved');
  });

  it('resends a DEAD dispatch from the alerts, and the worker delivers it', async () => {
    const run = await completeRun(api);
    await expect
      .poll(
        async () =>
          (await api.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [run.dispatchId])).rows[0].status,
        { timeout: 20_000 },
      )
      .toBe('DEAD');

    await open(`/`);
    const row = page.locator('tr', { has: page.getByRole('link', { name: `Run ${run.runId}` }) }).filter({ hasText: 'DISPATCH DEAD' });
    await row.waitFor({ timeout: 20_000 });
    await browser.screenshot('08-dispatch-dead');
    receiver.setDefault(202);
    await row.getByRole('button', { name: 'Resend…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Resend dispatch' });
    await confirm.waitFor();
    // the reason is asked first, and goes to the audit with the token's name
    await confirm.getByRole('button', { name: 'Resend' }).click();
    await expect.poll(() => confirm.getByRole('alert').textContent()).toContain('at least 5 characters');
    await confirm.getByLabel(/Reason/).fill('receiver redeployed, NIFI-4711');
    await confirm.getByRole('button', { name: 'Resend' }).click();
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(0);

    // delivered again: the run's dispatch table shows it SENT
    await open(`/runs/${run.runId}`);
    const dispatch = page.locator(`tr[data-dispatch="${run.dispatchId}"]`);
    await expect.poll(() => dispatch.locator('.badge').textContent(), { timeout: 20_000 }).toBe('SENT');
    const { rows } = await api.sql.query(
      `SELECT actor, message, details->>'previousStatus' AS previous FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'DISPATCH_RESENT'`,
      [run.runId],
    );
    expect(rows).toEqual([{ actor: 'alice-operator', message: 'receiver redeployed, NIFI-4711', previous: 'DEAD' }]);
    await browser.screenshot('09-dispatch-resent');
    receiver.setDefault(400);
  });

  it('reissues a RUNNING partition and cancels a run, each with a reason', async () => {
    const run = await startRun(api, [5, 5, 5]);
    const { claimToken } = await claim(api, run.runId, '0001');
    await report(api, chunkInput(run, '0001', claimToken, 0, 2, 2));
    await open(`/runs/${run.runId}`);
    await expect.poll(() => cell('0001').getAttribute('data-status'), { timeout: 20_000 }).toBe('RUNNING');
    await cell('0001').click();
    await page.getByRole('button', { name: 'Reissue partition 0001…' }).click();
    const reissue = page.getByRole('dialog', { name: 'Reissue partition 0001' });
    await reissue.getByLabel(/Reason/).fill('worker nifi-01 is gone');
    await reissue.getByRole('button', { name: 'Reissue' }).click();
    await expect.poll(() => cell('0001').getAttribute('data-status'), { timeout: 20_000 }).toBe('RETRY');

    await page.getByRole('button', { name: 'Cancel run…' }).click();
    const cancel = page.getByRole('dialog', { name: 'Cancel run' });
    await cancel.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => cancel.getByRole('alert').textContent()).toContain('at least 5 characters');
    await cancel.getByLabel(/Reason/).fill('source system is being restored');
    await cancel.getByRole('button', { name: 'Cancel run' }).click();
    await expect.poll(() => page.locator('.page-head .badge').textContent(), { timeout: 20_000 }).toBe('CANCELLED');
    await expect.poll(() => statuses(['0000', '0001', '0002']), { timeout: 20_000 }).toEqual(['ABANDONED', 'ABANDONED', 'ABANDONED']);
    expect(await page.getByRole('button', { name: 'Cancel run…' }).count()).toBe(0);
    await browser.screenshot('10-cancelled');
  });

  it('shows who is signed in, and disables what a viewer may not do, saying why before a reason is typed', async () => {
    await open('/');
    await expect.poll(() => page.locator('.identity').textContent()).toBe('Signed in as alice-operator (operator)');
    await signOut();
    await signIn('viewer');
    await expect.poll(() => page.locator('.identity').textContent()).toBe('Signed in as victor-viewer (viewer)');
    const run = await createRun(api);
    await open(`/runs/${run.runId}`);
    const cancel = page.getByRole('button', { name: 'Cancel run…' });
    await cancel.waitFor();
    expect(await cancel.isDisabled()).toBe(true);
    // the reason is next to the button and is its accessible description
    const reasonId = await cancel.getAttribute('aria-describedby');
    expect(await page.locator(`[id="${reasonId}"]`).textContent()).toBe('Needs the operator role; victor-viewer has viewer.');
    await browser.screenshot('viewer-run-actions-disabled');
    // the dashboard's alert actions too
    const dead = await completeRun(api);
    await open('/');
    const row = page.locator('tr', { has: page.getByRole('link', { name: `Run ${dead.runId}` }) }).filter({ hasText: 'DISPATCH DEAD' });
    await row.waitFor({ timeout: 20_000 });
    expect(await row.getByRole('button', { name: 'Resend…' }).isDisabled()).toBe(true);
    expect(await page.getByRole('dialog').count()).toBe(0);
    expect(await runStatus(run.runId)).toBe('CREATED');
    await signOut();
    await signIn('operator');
  });

  it('is readable on a phone: nothing but the tables scrolls sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await open(`/`);
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(await overflow()).toBeLessThanOrEqual(0);
      await browser.screenshot('11-phone-dashboard');
      const run = await startRun(
        api,
        Array.from({ length: 24 }, () => 1),
      );
      await open(`/runs/${run.runId}`);
      await cell('0023').waitFor();
      expect(await overflow()).toBeLessThanOrEqual(0);
      await browser.screenshot('12-phone-run');
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it("shows a gate's readiness for a business date, per required job, and its publication", async () => {
    const consumer = `REPORTS_${randomUUID().slice(0, 8)}`;
    const [ledger, fx] = [`LEDGER_${randomUUID().slice(0, 6)}`, `FX_${randomUUID().slice(0, 6)}`];
    const gate = await api.gql(
      `mutation($input: DefineGateInput!) { defineGate(input: $input) { changed } }`,
      { input: { consumer, requiredJobs: [ledger, fx] } },
      { token: 'operator' },
    );
    expect(gate.body.errors).toBeUndefined();
    const observe = (jobId: string, attempt: number, state: string) =>
      api.gql(`mutation($input: RecordObservationInput!) { recordObservation(input: $input) { changed } }`, {
        input: {
          jobId,
          businessDate: '2026-03-31',
          attempt: String(attempt),
          runId: `${jobId}-${attempt}`,
          state,
          startedAt: '2026-03-31T23:50:00+09:00',
        },
      });
    expect((await observe(ledger, 1, 'SUCCEEDED')).body.errors).toBeUndefined();
    expect((await observe(fx, 1, 'RUNNING')).body.errors).toBeUndefined();

    await open(`/`);
    await page.getByRole('link', { name: 'Readiness' }).click();
    await page.getByRole('heading', { name: 'Readiness' }).waitFor();
    await page.getByLabel('Consumer').fill(consumer);
    await page.getByLabel('Business date').fill('2026-03-31');
    await page.getByRole('button', { name: 'Check' }).click();
    const result = page.getByRole('heading', { name: new RegExp(`${consumer} on 2026-03-31`) });
    await expect.poll(() => result.textContent(), { timeout: 20_000 }).toContain('NOT READY');
    const row = (job: string) => page.locator(`tr[data-job="${job}"]`);
    expect(await row(ledger).textContent()).toContain('SUCCEEDED');
    expect(await row(fx).textContent()).toContain('RUNNING');
    await expect.poll(() => page.getByText('Not published for this date.').count()).toBe(1);
    await browser.screenshot('13-readiness-blocked');

    expect((await observe(fx, 1, 'SUCCEEDED')).body.errors).toBeUndefined();
    const published = await api.gql(`mutation($input: PublishInput!) { publish(input: $input) { published } }`, {
      input: { consumer, businessDate: '2026-03-31', output: { rows: 42 } },
    });
    expect(published.body.errors).toBeUndefined();
    await page.getByRole('button', { name: 'Check' }).click();
    // 'NOT READY' contains 'READY': wait for the re-check to replace it
    await expect.poll(async () => (await result.textContent())?.includes('NOT READY'), { timeout: 20_000 }).toBe(false);
    expect(await result.textContent()).toContain('READY');
    await expect.poll(() => page.getByText(/by nifi-cluster/).count()).toBe(1);
    expect(await page.locator('dd', { hasText: `${fx} #1 (${fx}-1)` }).count()).toBe(1);
    await browser.screenshot('14-readiness-published');
  });

  it('shows a purged run as its summary, saying when its details were purged (ledger retention)', async () => {
    const run = await startRun(api, [3, 4]);
    await api.gql(
      `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus } }`,
      { input: { runId: run.runId, reason: 'superseded by a rerun' } },
      { token: 'operator' },
    );
    await api.sql.query(`UPDATE nifi_ops.load_run SET completed_at = completed_at - interval '100 days' WHERE run_id = $1`, [run.runId]);
    await open(`/runs/${run.runId}`);
    await page.getByRole('heading', { name: /^Partitions/ }).waitFor();

    // the page is open while the purge happens: the run's change notification brings the note
    await purgeLedger(api.db, { before: new Date(Date.now() - 90 * 86_400_000), batchRows: 1000 });
    const { rows } = await api.sql.query('SELECT purged_at FROM nifi_ops.load_run WHERE run_id = $1', [run.runId]);
    const note = page.getByRole('note');
    await note.waitFor();
    expect(await note.textContent()).toContain(`Details purged on ${formatDate(rows[0].purged_at)} (ledger retention)`);
    expect(await page.getByRole('heading', { name: /^Partitions|^Metrics|^Dispatches|^Events/ }).count()).toBe(0);
    await page.getByRole('heading', { name: 'Summary' }).waitFor();
    expect(await page.getByText(run.businessKey).count()).toBeGreaterThan(0);
    await page.reload();
    await page.getByRole('note').waitFor();
    await browser.screenshot('run-purged');
  });

  it('opens a run from its address after a reload, and explains an unknown one', async () => {
    const run = await createRun(api);
    await open(`/runs/${run.runId}`);
    await page.getByRole('heading', { name: new RegExp(run.businessKey) }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: new RegExp(run.businessKey) }).waitFor();
    await open(`/runs/${randomUUID()}`);
    await page.getByRole('heading', { name: 'Run not found' }).waitFor();
  });
});
