import { gradeFor } from '@vouch/core';
import { createMigrator, type Database, sql } from '@vouch/db';
import { columnsLike, createTestDatabase, tablesLike } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const tables = async () => [
  ...(await tablesLike(database.db, 'event%')),
  ...(await tablesLike(database.db, 'webhook%')),
];

describe('migration 20261201000000-events', () => {
  it('keeps budgets with nothing announced yet, and its down step removes what it added', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo('20261126000000-organizations')).error).toBeUndefined();
    expect(await tables()).toEqual([]);
    const agent = `0x${'2'.repeat(40)}`;
    const now = new Date();
    await sql`INSERT INTO agents (address, is_registered, organization_id, first_seen_at, updated_at)
      VALUES (${agent}, true, 'default', ${now}, ${now})`.execute(database.db);
    await sql`INSERT INTO budgets (organization_id, agent, daily_limit, monthly_limit, per_tx_limit, daily_spent,
        monthly_spent, day_start, month_start, created_at, updated_at)
      VALUES ('default', ${agent}, 10, 10, 10, 9, 9, ${now}, ${now}, ${now}, ${now})`.execute(database.db);

    // Up to this migration: a later one (budget-alerts) moves these columns to a table of their own.
    expect((await migrator.migrateTo('20261201000000-events')).error).toBeUndefined();
    expect(await tables()).toEqual(['event_dispatch', 'events', 'webhook_attempts', 'webhook_deliveries', 'webhooks']);
    const { rows } = await sql`
      SELECT daily_alerted, monthly_alerted, daily_alerted_before, monthly_alerted_before, daily_spent::text
      FROM budgets`.execute(database.db);
    expect(rows[0]).toEqual({
      daily_alerted: 0,
      monthly_alerted: 0,
      daily_alerted_before: 0,
      monthly_alerted_before: 0,
      daily_spent: '9',
    });
  });

  it('grades in SQL exactly as the model does, for every score', async () => {
    const { rows } = await sql<{ score: number; grade: string }>`
      SELECT s AS score, vouch_grade(s) AS grade FROM generate_series(0, 1000) AS s`.execute(database.db);
    expect(rows).toHaveLength(1001);
    for (const row of rows) expect(row.grade, String(row.score)).toBe(gradeFor(row.score));
  });

  it('reads the horizon as a transaction id no later than the next one to start', async () => {
    // The function reads its own snapshot (it is volatile), so the bound is a snapshot taken after
    // it: in one statement the outer snapshot can be older, and transactions elsewhere move xmax.
    const horizon = await sql<{ h: string }>`SELECT vouch_events_horizon()::text AS h`.execute(database.db);
    const next = await sql<{ x: string }>`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x`.execute(
      database.db,
    );
    expect(BigInt(horizon.rows[0]?.h ?? 'x')).toBeLessThanOrEqual(BigInt(next.rows[0]?.x ?? '0'));
  });

  it('goes down and up again', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo('20261126000000-organizations')).error).toBeUndefined();
    expect(await tables()).toEqual([]);
    expect(await columnsLike(database.db, 'budgets', '%alert%')).toEqual([]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await tables()).toHaveLength(5);
  });
});
