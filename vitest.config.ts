import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { LongestFirstSequencer } from './test/support/longest-first.js';

const require = createRequire(import.meta.url);

/**
 * The tiers are the folders of test/: a file's folder says what it may start, and each tier runs alone with
 * `vitest run --project NAME` (`npm run test:NAME`). Where a new test goes is in CONTRIBUTING.md:
 * - unit: no database, no child process that needs one — seconds;
 * - domain: the real PostgreSQL, domain functions called directly in a transaction, no HTTP;
 * - api: one in-process API (and an in-process worker), called over HTTP;
 * - process: `serve` / `work` / CLI processes, faults, shutdown, upgrades, other servers;
 * - browser: the console in Chromium.
 * - nifi: the kit against Apache NiFi's own artifacts (its Expression Language engine, run on a JVM), no database.
 * - openlineage: the api tier's pieces plus OpenLineage's own artifacts on a JVM, which check every event sent.
 * - ha: `serve` and `work` on a Patroni cluster of its own (etcd, HAProxy), no shared database.
 * A new tier is a new folder of test/ plus its `test:NAME` script; support/ and fixtures/ hold no tier.
 */
const NOT_TIERS = new Set(['support', 'fixtures']);
const TIERS = readdirSync('test', { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !NOT_TIERS.has(entry.name))
  .map((entry) => entry.name)
  .sort();

/** Tiers with no database: running them alone starts no PostgreSQL and makes no template. */
const WITHOUT_DATABASE = new Set(['unit', 'nifi', 'ha']);

function tier(name: string): TestProjectInlineConfiguration {
  const database = !WITHOUT_DATABASE.has(name);
  return {
    extends: true,
    test: {
      name,
      include: [`test/${name}/**/*.test.ts`],
      globalSetup: ['test/support/node-version.ts', ...(database ? ['test/support/global-setup.ts'] : [])],
    },
  };
}

export default defineConfig({
  resolve: {
    // graphql 16 has no "exports": Node (and so graphql-yoga) loads its CommonJS build, while Vite would
    // pick index.mjs for our sources — two copies, and `instanceof GraphQLError` would fail across them.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    testTimeout: 30000,
    hookTimeout: 120000,
    pool: 'forks',
    // two files at a time even on two cores (vitest's default is cores − 1): most of the suite's time is spent
    // waiting on child processes, PostgreSQL and timers, not on CPU
    maxWorkers: 2,
    // the long files first, whichever tier they are in (test/support/longest-first.ts)
    sequence: { sequencer: LongestFirstSequencer },
    // every tier in one report: .ci/run reads it
    reporters: ['default', ['json', { outputFile: 'test-artifacts/vitest.json' }]],
    projects: TIERS.map(tier),
  },
});
