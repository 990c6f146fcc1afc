import { defineConfig } from 'vitest/config';

const dbTests = ['apps/*/test/**/*.test.ts', 'packages/*/test/**/*.test.ts'];

export default defineConfig({
  test: {
    passWithNoTests: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts'],
        },
      },
      {
        // Database tests on PostgreSQL (falls back to PGlite off CI when Postgres is absent).
        extends: true,
        test: {
          name: 'postgres',
          include: dbTests,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        // The same database tests on the embedded driver.
        extends: true,
        test: {
          name: 'pglite',
          include: dbTests,
          // Tests that start their own processes need to run once, not per driver.
          exclude: ['**/*.once.test.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
