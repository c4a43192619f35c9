import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

/**
 * The fast tier: server plugins alone on a small schema (test/support/small-api.ts), and the NiFi kit's check of
 * its templates and flow against the schema — no database. Their own
 * project has no global setup, so running them alone starts no PostgreSQL and makes no template database.
 */
const FAST_TIER = [
  'src/server/auth.test.ts',
  'src/server/compressed-body.test.ts',
  'src/server/error-envelope.test.ts',
  'src/server/execution-lane.test.ts',
  'src/server/graphql-endpoint.test.ts',
  'src/server/operation-shape.test.ts',
  'src/server/query-cost.test.ts',
  'src/server/request-id.test.ts',
  'src/server/storable-inputs.test.ts',
  'test/nifi-kit.test.ts',
  'test/nifi-engine.test.ts',
  'test/documents.test.ts',
];

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
    reporters: ['default', ['json', { outputFile: 'test-artifacts/vitest.json' }]],
    projects: [
      // one module graph per worker instead of per file: importing Yoga and graphql-js is most of a file's time
      // (seven files: 14 s alone with isolation, 4.2 s without); each file builds its own Yoga instance
      { extends: true, test: { name: 'fast', include: FAST_TIER, isolate: false } },
      {
        extends: true,
        test: {
          name: 'database',
          globalSetup: ['test/support/global-setup.ts'],
          include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'spec/**/*.test.ts'],
          exclude: FAST_TIER,
        },
      },
    ],
  },
});
