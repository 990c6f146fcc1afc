import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

const dbTests = ['apps/*/test/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/test/**/*.test.ts'];

export default defineConfig({
  test: {
    passWithNoTests: false,
    // Most test files wait on PostgreSQL, Redis and child processes: one worker per CPU. Vitest's
    // default keeps one CPU free, which on a 2-CPU machine runs every file in turn (19 min of
    // `npm test` there against 15 with two workers).
    maxWorkers: Math.max(2, availableParallelism()),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One module graph per worker, not per file: nothing of the service lives in module state, and
    // the app is imported once per worker instead of once per file (docs/testing.md).
    isolate: false,
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
      {
        // `npm run test:reliability` (docs/RELIABILITY.md): concurrency, faults and hostile input.
        // Not part of `npm test`, whose script names the three projects above; a fast subset of
        // these rows runs there from apps/api/test/reliability.test.ts.
        extends: true,
        test: {
          name: 'reliability',
          include: ['test/reliability/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          // These tests stop servers and measure recovery times: one file at a time, each in a
          // process of its own, so that no file's heap or leftovers (R9's fuzzing) weigh on the next.
          fileParallelism: false,
          isolate: true,
          testTimeout: 600_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
