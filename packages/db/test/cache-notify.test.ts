import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const triggers = async () =>
  (
    await sql<{
      name: string;
    }>`SELECT tgname AS name FROM pg_trigger WHERE NOT tgisinternal AND (tgname LIKE 'agents_notify_cache%' OR tgname LIKE 'budgets_notify_cache%') ORDER BY 1`.execute(
      database.db,
    )
  ).rows.map((r) => r.name);

describe('migration 20261122000000-cache-notify-statements', () => {
  it('replaces the row triggers with statement triggers, and its down step puts them back', async () => {
    const statementTriggers = [
      'agents_notify_cache_insert',
      'agents_notify_cache_update',
      'budgets_notify_cache_insert',
      'budgets_notify_cache_update',
    ];
    expect(await triggers()).toEqual(statementTriggers);
    const migrator = createMigrator(database.db);
    // Back to the migration before it (later ones, if any, go down first).
    const down = await migrator.migrateTo('20261121030000-verification-facts');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => r.migrationName)).toContain('20261122000000-cache-notify-statements');
    expect(await triggers()).toEqual(['agents_notify_cache', 'budgets_notify_cache']);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await triggers()).toEqual(statementTriggers);
  });
});

describe('migration 20261206000000-sanctions-notify-cache', () => {
  const sanctionsTriggers = async () =>
    (
      await sql<{ name: string }>`SELECT tgname AS name FROM pg_trigger
        WHERE NOT tgisinternal AND tgrelid IN ('sanctions_snapshots'::regclass, 'sanctions_entries'::regclass)
        ORDER BY 1`.execute(database.db)
    ).rows.map((r) => r.name);

  it('has any change of the lists drop cached budgets and lists; its down step removes that', async () => {
    const heard: string[] = [];
    let ready: () => void = () => {};
    const listening = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const listener = await database.listen('vouch_cache', {
      onNotify: (payload) => heard.push(payload),
      onReady: () => ready(),
    });
    try {
      await listening;
      await sql`UPDATE sanctions_snapshots SET is_active = is_active`.execute(database.db);
      await expect.poll(() => [...heard].sort()).toEqual(['budgets:*', 'sanctions:*']);
      heard.length = 0;
      await sql`DELETE FROM sanctions_entries WHERE address = ${`0x${'0'.repeat(40)}`}`.execute(database.db);
      await expect.poll(() => [...heard].sort()).toEqual(['budgets:*', 'sanctions:*']);

      const migrator = createMigrator(database.db);
      expect((await migrator.migrateTo('20261205000000-events-horizon-stable')).error).toBeUndefined();
      expect(await sanctionsTriggers()).toEqual([]);
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      expect(await sanctionsTriggers()).toEqual(['sanctions_entries_notify_cache', 'sanctions_snapshots_notify_cache']);
    } finally {
      await listener.close();
    }
  });
});
