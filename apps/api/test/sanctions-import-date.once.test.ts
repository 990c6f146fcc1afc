import { spawnSync } from 'node:child_process';
import { createTestDatabase, createTestRuntime } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// `npm run sanctions:import -- <file> --date …` with a date that is no date.
describe.runIf(inject('testDbMode') === 'postgres')('npm run sanctions:import --date', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
    await (await createTestRuntime(database)).close(); // loads the bundled list
  });
  afterAll(() => database?.close());

  const run = (args: string[]) =>
    spawnSync('npm', ['run', '--silent', 'sanctions:import', '--', ...args], {
      cwd: new URL('../../../', import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: database.url },
      encoding: 'utf8',
    });

  const active = async () => {
    const runtime = await createTestRuntime(database, { loadSanctions: false });
    const snapshot = await runtime.services.sanctions.activeSnapshot();
    await runtime.close();
    return snapshot;
  };

  it.each([['--date='], ['--date=2026-02-30'], ['--date=2026-13-45']])(
    'refuses %s with the usage (exit 2), changing nothing',
    async (date) => {
      const result = run(['test/fixtures/sdn_advanced_small.xml', '--force', date]);
      expect([result.status, result.stderr.includes('usage')], result.stdout).toEqual([2, true]);
      expect(await active()).toMatchObject({ snapshot_date: '2024-09-27', entries: 156 });
    },
    60_000,
  );
});
