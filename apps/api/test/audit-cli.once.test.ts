import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import { createTestDatabase, createTestRuntime, randomAddress } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// `npm run audit:verify` and `npm run audit:export` as an operator runs them, against a database of their own.
describe.runIf(inject('testDbMode') === 'postgres')('npm run audit:verify and audit:export', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
    const runtime = await createTestRuntime(database, { loadSanctions: false });
    const actor = systemActor();
    await runtime.services.organizations.create(actor, { id: 'cli', name: 'CLI' });
    for (let i = 0; i < 3; i++)
      await runtime.services.audit.record(systemActor('cli'), 'test.entry', randomAddress(), { i });
    await runtime.close();
  });
  afterAll(() => database?.close());

  const run = (script: string, args: string[] = []) =>
    spawnSync('npm', ['run', '--silent', script, '--', ...args], {
      cwd: new URL('../../../', import.meta.url).pathname,
      env: { ...process.env, DATABASE_URL: database.url },
      encoding: 'utf8',
    });

  it('exports a chain and verifies it, and exits 1 naming the entry once a row is edited', async () => {
    const exported = run('audit:export', ['--organization', 'cli']);
    expect(exported.status, exported.stderr).toBe(0);
    const lines = exported.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.seq)).toEqual(['1', '2', '3', '4']);

    const intact = run('audit:verify');
    expect(intact.status, intact.stderr).toBe(0);
    expect(intact.stdout.trim()).toMatch(/^intact: \d+ entries in 2 organization\(s\)$/);

    await sql`ALTER TABLE audit_log DISABLE TRIGGER USER`.execute(database.db);
    await sql`UPDATE audit_log SET entry = replace(entry, '"i": 1', '"i": 2') WHERE organization_id = 'cli' AND seq = 3`.execute(
      database.db,
    );
    await sql`ALTER TABLE audit_log ENABLE TRIGGER USER`.execute(database.db);
    const broken = run('audit:verify');
    expect(broken.status).toBe(1);
    expect(broken.stderr.trim()).toBe('audit:verify: organization cli, entry 3: its hash does not match its content');
    expect(broken.stdout.trim()).toMatch(/^BROKEN: \d+ entries in 2 organization\(s\), 1 chain\(s\) broken$/);

    // A mistyped organization checks and exports nothing, and says so.
    const unknown = run('audit:verify', ['--organization', 'clj']);
    expect([unknown.status, unknown.stderr.trim(), unknown.stdout]).toEqual([
      1,
      'audit:verify: no organization clj',
      '',
    ]);
    const nothing = run('audit:export', ['--organization', 'clj']);
    expect([nothing.status, nothing.stderr.trim(), nothing.stdout]).toEqual([
      1,
      'audit:export: no organization clj',
      '',
    ]);
  }, 60_000);

  it('ends an export whose reader goes away (`| head`) with one line and exit 1, not a stack trace', async () => {
    const runtime = await createTestRuntime(database, { loadSanctions: false });
    await runtime.services.organizations.create(systemActor(), { id: 'wide', name: 'Wide' });
    // Well past a pipe's buffer (64 KiB), so that writes are still going when the reader has gone.
    for (let i = 0; i < 600; i++)
      await runtime.services.audit.record(systemActor('wide'), 'test.entry', null, { i, pad: 'x'.repeat(200) });
    await runtime.close();
    const result = spawnSync(
      'bash',
      ['-o', 'pipefail', '-c', 'npm run --silent audit:export -- --organization wide | head -c 10 > /dev/null'],
      {
        cwd: new URL('../../../', import.meta.url).pathname,
        env: { ...process.env, DATABASE_URL: database.url },
        encoding: 'utf8',
      },
    );
    expect([result.status, result.stderr.trim()]).toEqual([1, 'audit:export: failed: write EPIPE']);
  }, 60_000);

  it.each([
    ['audit:verify', ['--organisation', 'cli']],
    ['audit:verify', ['--organization']],
    ['audit:verify', ['cli']],
    ['audit:export', ['--organisation', 'cli']],
    ['audit:export', ['--organization']],
    ['audit:export', ['cli']],
    ['db:migrate', ['--down']],
  ])(
    '%s refuses %j with one line and the usage (exit 2), not a stack trace, and does nothing',
    (script, args) => {
      const result = run(script, args);
      const lines = result.stderr.trim().split('\n');
      expect(
        [result.status, lines.length, lines[0]?.startsWith(`${script}: `), lines[1]?.startsWith('usage: ')],
        result.stderr,
      ).toEqual([2, 2, true, true]);
      expect(result.stdout).toBe('');
    },
    60_000,
  );
});

// The embedded database (no DATABASE_URL), as `npm install && npm run audit:export` meets it.
describe('npm run audit:export and audit:verify on the embedded database', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'vouch-audit-cli-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('exits 1 for an organization that does not exist, as on PostgreSQL', () => {
    const run = (script: string) =>
      spawnSync('npm', ['run', '--silent', script, '--', '--organization', 'clj'], {
        cwd: new URL('../../../', import.meta.url).pathname,
        env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir },
        encoding: 'utf8',
      });
    const nothing = run('audit:export');
    expect([nothing.status, nothing.stderr.trim(), nothing.stdout]).toEqual([
      1,
      'audit:export: no organization clj',
      '',
    ]);
    const unknown = run('audit:verify');
    expect([unknown.status, unknown.stderr.trim(), unknown.stdout]).toEqual([
      1,
      'audit:verify: no organization clj',
      '',
    ]);
  }, 60_000);
});
