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

  const run = (args: string[]) =>
    spawnSync('npm', ['run', '--silent', 'sanctions:import', '--', ...args], {
      cwd: new URL('../../../', import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: database.url },
      encoding: 'utf8',
    });

  it('imports the XML as the active snapshot and prints what changed', async () => {
    const result = run(['test/fixtures/sdn_advanced_small.xml']);
    expect(result.status, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).toMatchObject({ snapshotDate: '2026-11-03', entries: 3, changedAgents: [] });
    expect(printed.added).toEqual([
      '0x1111111111111111111111111111111111111111',
      '0x2222222222222222222222222222222222222222',
    ]);
    const runtime = await createTestRuntime(database, { loadSanctions: false });
    const active = await runtime.services.sanctions.activeSnapshot();
    await runtime.close();
    expect(active).toMatchObject({ snapshot_date: '2026-11-03', entries: 3 });
  }, 60_000);

  it('refuses to run without a file', () => {
    const result = run([]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('usage');
  });
});
