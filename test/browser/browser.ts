// Chromium for the console's browser tests: Debian's /usr/bin/chromium driven by playwright-core
// (no browser download), a fresh profile per run, and the console built from the current sources.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/logging/logger.js';
import { startWorker, type Worker } from '../../src/worker/worker.js';
import type { TestApi } from '../support/api.js';
import type { AxeResults } from 'axe-core';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WEB = join(ROOT, 'web');
const ARTIFACTS = join(ROOT, 'test-artifacts', 'browser');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds web/dist when it is missing or older than the console's sources (its own and the shared documents). */
export function ensureConsoleBuilt(): void {
  const index = join(WEB, 'dist', 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= Math.max(newestSource(WEB), newestSource(join(ROOT, 'schema/documents')))) return;
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', join(WEB, 'vite.config.ts'), '--logLevel', 'warn'],
    {
      cwd: ROOT,
      stdio: 'inherit',
      // vitest sets NODE_ENV=test, which would make Vite bundle React's development build
      env: { ...process.env, NODE_ENV: 'production' },
    },
  );
}

/** The two viewports every console page is tried at. */
export const SIZES = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;
export type Size = (typeof SIZES)[number];

export interface Browser {
  context: BrowserContext;
  page: Page;
  screenshot(name: string, page?: Page): Promise<void>;
  close(): Promise<void>;
}

/** `timezoneId`: the zone the browser's clock is in (IANA name), as a person's elsewhere would be. */
export async function openBrowser(options: { timezoneId?: string } = {}): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'lc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 800 },
    reducedMotion: 'reduce',
    ...options,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async screenshot(name, target = page) {
      await target.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A browser whose every tab is signed in with `token`, as after "keep me signed in". */
export async function openSignedInBrowser(token: string): Promise<Browser> {
  const browser = await openBrowser();
  await browser.context.addInitScript((value) => localStorage.setItem('lc.token', value), token);
  return browser;
}

/**
 * The worker behind a console test: NiFi's calls to `receiverUrl`, a quick poll so that what the page shows moves
 * soon. (console.test.ts still starts its own: its setup is being changed on another branch.)
 */
export function startConsoleWorker(api: TestApi, receiverUrl: string): Worker {
  return startWorker({
    config: {
      ...api.config,
      nifi: { ...api.config.nifi, receiverUrl, timeoutSeconds: 5 },
      dispatch: { ...api.config.dispatch, pollInterval: 300 },
    },
    db: api.db,
    log: createLogger({ level: 'fatal', format: 'json' }, 'test-worker'),
    registry: new Registry(),
  });
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** A WCAG 2.0/2.1 A and AA violation axe-core found: its rule, and where (CSS selectors of the offending nodes). */
interface Violation {
  id: string;
  impact: string | null | undefined;
  help: string;
  targets: string[];
}

/** axe-core, injected into the page as it stands, on the WCAG 2 A/AA rules; returns what it found. */
export async function accessibilityViolations(page: Page): Promise<Violation[]> {
  // evaluated, not added as a <script>: the console's Content-Security-Policy allows no inline script
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const results = (await page.evaluate(() =>
    (window as unknown as { axe: { run(context: Document, options: object): Promise<unknown> } }).axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    }),
  )) as AxeResults;
  return results.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
}
