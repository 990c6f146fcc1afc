import { createMigrator, type Database, sql } from '@vouch/db';
import { columnsLike, createTestDatabase, tablesLike } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const day = new Date('2026-03-05T00:00:00Z');
const month = new Date('2026-03-01T00:00:00Z');
const alerted = `0x${'a'.repeat(40)}`;
const quiet = `0x${'b'.repeat(40)}`;

const alerts = () =>
  database.db
    .selectFrom('budget_alerts')
    .select(['agent', 'asset', 'period', 'period_start', 'level'])
    .orderBy('agent')
    .orderBy('period')
    .execute();

const alertColumns = () => columnsLike(database.db, 'budgets', '%alerted%');

describe('migration 20261204000000-budget-alerts', () => {
  it('keeps what each budget announced in its windows, and its down step puts it back on the budget', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo('20261203000000-verification-heads')).error).toBeUndefined();
    for (const agent of [alerted, quiet]) {
      await sql`INSERT INTO agents (address, is_registered, organization_id, first_seen_at, updated_at)
        VALUES (${agent}, true, 'default', ${day}, ${day})`.execute(database.db);
    }
    await sql`INSERT INTO budgets (organization_id, agent, daily_limit, monthly_limit, per_tx_limit, daily_spent,
        monthly_spent, day_start, month_start, created_at, updated_at, daily_alerted, monthly_alerted,
        daily_alerted_before, monthly_alerted_before)
      VALUES ('default', ${alerted}, 10, 100, 10, 9, 9, ${day}, ${month}, ${day}, ${day}, 80, 0, 0, 0),
             ('default', ${quiet}, 10, 100, 10, 1, 1, ${day}, ${month}, ${day}, ${day}, 0, 0, 0, 0)`.execute(
      database.db,
    );

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await alertColumns()).toEqual([]);
    expect(await alerts()).toEqual([{ agent: alerted, asset: '', period: 'daily', period_start: day, level: 80 }]);

    expect((await migrator.migrateTo('20261203000000-verification-heads')).error).toBeUndefined();
    const { rows } = await sql`
      SELECT agent, daily_alerted, monthly_alerted FROM budgets ORDER BY agent`.execute(database.db);
    expect(rows).toEqual([
      { agent: alerted, daily_alerted: 80, monthly_alerted: 0 },
      { agent: quiet, daily_alerted: 0, monthly_alerted: 0 },
    ]);
    expect(await tablesLike(database.db, 'budget_alerts')).toEqual([]);

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await alerts()).toHaveLength(1);
  });

  it('announces each threshold a reservation reaches once per window, from the lowest up', async () => {
    const thresholds = (daily: number, monthly: number, dayStart = day) =>
      sql<{ type: string; data: { window: string; threshold: number; limit: string; spent: string } }>`
        SELECT type, data FROM vouch_budget_thresholds('default', ${quiet}, '', ARRAY[50, 80, 100]::int[],
          ${dayStart}, 10, ${daily}, 0, ${month}, 100, ${monthly}, 0, '1', NULL)`.execute(database.db);
    const announced = async (daily: number, monthly: number, dayStart?: Date) =>
      (await thresholds(daily, monthly, dayStart)).rows.map((r) => `${r.data.window} ${r.data.threshold}`);

    expect(await announced(4, 4)).toEqual([]);
    expect(await announced(8, 8)).toEqual(['daily 50', 'daily 80']);
    expect(await announced(9, 9)).toEqual([]);
    expect(await announced(10, 10)).toEqual(['daily 100']);
    // A new day starts from nothing; the month goes on from what it reached.
    const next = new Date(day.getTime() + 86_400_000);
    expect(await announced(6, 16, next)).toEqual(['daily 50']);
    expect(await announced(10, 50, next)).toEqual(['daily 80', 'daily 100', 'monthly 50']);
    expect(await announced(10, 60, next)).toEqual([]);
    expect(await alerts()).toEqual([
      { agent: alerted, asset: '', period: 'daily', period_start: day, level: 80 },
      { agent: quiet, asset: '', period: 'daily', period_start: next, level: 100 },
      { agent: quiet, asset: '', period: 'monthly', period_start: month, level: 50 },
    ]);
  });
});
