import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 has no "exports": Node (and so graphql-yoga) loads its CommonJS build, while Vite would
    // pick index.mjs for our sources — two copies, and `instanceof GraphQLError` would fail across them.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30000,
    hookTimeout: 120000,
    pool: 'forks',
    reporters: ['default', ['json', { outputFile: 'test-artifacts/vitest.json' }]],
  },
});
