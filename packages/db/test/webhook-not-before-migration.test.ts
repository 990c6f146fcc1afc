import { createMigrator, type Database } from '@vouch/db';
import { columnsLike, createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

describe('migration 20261208000000-webhook-not-before', () => {
  it('adds the time a delivery is not sent before, and its down step drops it', async () => {
    const migrator = createMigrator(database.db);
    const column = () => columnsLike(database.db, 'webhook_deliveries', 'not_before');
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await column()).toEqual(['not_before']);
    expect((await migrator.migrateTo('20261207000000-webhook-last-failure')).error).toBeUndefined();
    expect(await column()).toEqual([]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await column()).toEqual(['not_before']);
  });
});
