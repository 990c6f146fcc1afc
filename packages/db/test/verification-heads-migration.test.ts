import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase, tablesLike } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const twice = `0x${'1'.repeat(40)}`;
const once = `0x${'2'.repeat(40)}`;

const heads = () =>
  database.db
    .selectFrom('verification_heads')
    .select(['agent', 'status', 'previous_status'])
    .orderBy('agent')
    .execute();

describe('migration 20261203000000-verification-heads', () => {
  it("fills each address's head from its latest verification, and its down step drops the table", async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo('20261202000000-transaction-asset')).error).toBeUndefined();
    const tables = () => tablesLike(database.db, 'verification_heads');
    expect(await tables()).toEqual([]);

    const verification = (agent: string, status: string, at: string) =>
      sql`
      INSERT INTO verifications (agent, status, passed, total, score, grade, checks, check_details, created_at)
      VALUES (${agent}, ${status}, 1, 8, 100, 'D', '{}'::jsonb, '{}'::jsonb, ${new Date(at)})`.execute(database.db);
    await verification(twice, 'FAILED', '2026-03-01T00:00:00Z');
    await verification(twice, 'VERIFIED', '2026-03-02T00:00:00Z');
    await verification(once, 'PARTIAL', '2026-03-01T00:00:00Z');

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await heads()).toEqual([
      { agent: twice, status: 'VERIFIED', previous_status: null },
      { agent: once, status: 'PARTIAL', previous_status: null },
    ]);

    expect((await migrator.migrateTo('20261202000000-transaction-asset')).error).toBeUndefined();
    expect(await tables()).toEqual([]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
