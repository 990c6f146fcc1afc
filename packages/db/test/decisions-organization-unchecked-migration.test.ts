import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE = '20261216000000-anomaly-checks-asset';

const foreignKeys = async () =>
  (
    await sql<{ name: string }>`
      SELECT conname AS name FROM pg_constraint
      WHERE conrelid = 'decisions'::regclass AND contype = 'f' ORDER BY conname`.execute(database.db)
  ).rows.map((r) => r.name);

const insert = (id: string) => sql`
  INSERT INTO decisions (id, organization_id, agent, amount, asset, decision, reasons, facts, created_at)
  VALUES (${id}, 'default', ${`0x${'1'.repeat(40)}`}, 1, '', 'allow', '[]', '{}', now())`;

describe('migration 20261217000000-decisions-organization-unchecked', () => {
  it('stores decisions without looking their organization up, keeps those stored before, and its down step checks it again', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    expect(await foreignKeys()).toEqual(['decisions_organization_id_fkey']);
    await insert('before').execute(database.db);

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await foreignKeys()).toEqual([]);
    await insert('after').execute(database.db);
    const kept = await sql<{ id: string }>`SELECT id FROM decisions ORDER BY id`.execute(database.db);
    expect(kept.rows.map((r) => r.id)).toEqual(['after', 'before']);

    // Down again, the key is back and validated against every row stored meanwhile.
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    expect(await foreignKeys()).toEqual(['decisions_organization_id_fkey']);
    await expect(
      sql`INSERT INTO decisions (id, organization_id, agent, amount, asset, decision, reasons, facts, created_at)
        VALUES ('stray', 'nobody', ${`0x${'1'.repeat(40)}`}, 1, '', 'allow', '[]', '{}', now())`.execute(database.db),
    ).rejects.toThrow(/foreign key/);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
