import { spawnSync } from 'node:child_process';
import { createTestDatabase, createTestRuntime } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// `npm run sanctions:import -- <file>` as a user runs it, against a database of its own.
describe.runIf(inject('testDbMode') === 'postgres')('npm run sanctions:import', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
    await (await createTestRuntime(database)).close(); // loads the bundled list
  });
  afterAll(() => database?.close());

  const run = (args: string[], script = 'sanctions:import') =>
    spawnSync('npm', ['run', '--silent', script, '--', ...args], {
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

  it('refuses a list under half the active one, changing nothing, unless --force', async () => {
    const refused = run(['test/fixtures/sdn_advanced_small.xml']);
    expect(refused.status).toBe(1);
    expect(refused.stderr.trim()).toBe(
      "sanctions:import: failed: the new list names 3 addresses, fewer than half of the active list's 156; nothing was changed (--force activates it anyway)",
    );
    expect(await active()).toMatchObject({ snapshot_date: '2024-09-27', entries: 156 });
  }, 60_000);

  it.each([['--date='], ['--date=2026-02-30'], ['--date=2026-13-45']])(
    'refuses %s, a date that is no date, with the usage (exit 2), changing nothing',
    async (date) => {
      const result = run(['test/fixtures/sdn_advanced_small.xml', '--force', date]);
      expect([result.status, result.stderr.includes('usage')], result.stdout).toEqual([2, true]);
      expect(await active()).toMatchObject({ snapshot_date: '2024-09-27', entries: 156 });
    },
    60_000,
  );

  it('imports the XML as the active snapshot with --force and prints what changed', async () => {
    const result = run(['test/fixtures/sdn_advanced_small.xml', '--force']);
    expect(result.status, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).toMatchObject({ snapshotDate: '2026-11-03', entries: 3, changedAgents: [] });
    expect(printed.added).toEqual([
      '0x1111111111111111111111111111111111111111',
      '0x2222222222222222222222222222222222222222',
    ]);
    expect(await active()).toMatchObject({ snapshot_date: '2026-11-03', entries: 3 });
    expect(printed.contentHash).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  it('restores the bundled list with npm run sanctions:restore', async () => {
    const result = run([], 'sanctions:restore');
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ snapshotDate: '2024-09-27', entries: 156 });
    expect(await active()).toMatchObject({ snapshot_date: '2024-09-27', entries: 156 });
  }, 60_000);

  it.each([
    ['sanctions:import', ['test/fixtures/sdn_advanced_small.xml', '--froce']],
    ['sanctions:import', ['test/fixtures/sdn_advanced_small.xml', '--force=yes']],
    ['sanctions:restore', ['--froce']],
    // A date without its --date (the file's own was taken), or a second file (never read).
    ['sanctions:import', ['test/fixtures/sdn_advanced_small.xml', '2026-11-04', '--force']],
    ['sanctions:import', ['test/fixtures/sdn_advanced_small.xml', 'test/fixtures/sdn_advanced_small.xml', '--force']],
    ['sanctions:restore', ['now']],
  ])(
    '%s refuses a mistyped option or a stray argument %j with the usage (exit 2), not a stack trace, changing nothing',
    async (script, args) => {
      const before = await active();
      const result = run(args, script);
      expect(
        [result.status, result.stderr.includes('usage'), result.stderr.includes('    at ')],
        result.stderr,
      ).toEqual([2, true, false]);
      expect(await active()).toEqual(before);
    },
    60_000,
  );

  it('refuses to run without a file', () => {
    const result = run([]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('usage');
  });
});
