import { createMigrator, type Database, sql } from '@vouch/db';
import { columnsLike, createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

describe('migration 20261209000000-sanctions-rescore', () => {
  it('takes snapshots already stored as re-scored, and its down step drops the columns', async () => {
    const migrator = createMigrator(database.db);
    const columns = async () => [
      ...(await columnsLike(database.db, 'sanctions_snapshots', 'previous_id')),
      ...(await columnsLike(database.db, 'sanctions_snapshots', 'rescored_at')),
    ];
    expect((await migrator.migrateTo('20261208000000-webhook-not-before')).error).toBeUndefined();
    await sql`INSERT INTO sanctions_snapshots (name, snapshot_date, entries, is_active, imported_at)
      VALUES ('old', '2024-01-01', 0, false, '2026-01-02T03:04:05Z')`.execute(database.db);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await columns()).toEqual(['previous_id', 'rescored_at']);
    const rows = await sql<{ rescored_at: Date | null }>`SELECT rescored_at FROM sanctions_snapshots
      WHERE name = 'old'`.execute(database.db);
    expect(rows.rows.map((r) => r.rescored_at?.toISOString())).toEqual(['2026-01-02T03:04:05.000Z']);
    expect((await migrator.migrateTo('20261208000000-webhook-not-before')).error).toBeUndefined();
    expect(await columns()).toEqual([]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
