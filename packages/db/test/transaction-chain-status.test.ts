import { createMigrator, type Database, sql } from '@vouch/db';
import { columnsLike, createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const agent = `0x${'1'.repeat(40)}`;
const txHash = `0x${'a'.repeat(64)}`;

const columns = () => columnsLike(database.db, 'transactions', 'chain_%');

describe('migration 20261125020000-transaction-chain-status', () => {
  it('marks transactions recorded before it as unverified, and its down step removes the columns', async () => {
    const migrator = createMigrator(database.db);
    const down = await migrator.migrateTo('20261125010000-transaction-backdated');
    expect(down.error).toBeUndefined();
    expect(await columns()).toEqual([]);

    const now = new Date();
    await sql`INSERT INTO agents (address, first_seen_at, updated_at) VALUES (${agent}, ${now}, ${now})`.execute(
      database.db,
    );
    await sql`
      INSERT INTO transactions (agent, tx_hash, amount, type, success, occurred_at, recorded_at)
      VALUES (${agent}, ${txHash}, 5, 0, true, ${now}, ${now})`.execute(database.db);

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await columns()).toEqual(['chain_checked_at', 'chain_detail', 'chain_status']);
    const row = await database.db
      .selectFrom('transactions')
      .select(['chain_status', 'chain_detail', 'chain_checked_at'])
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ chain_status: 'unverified', chain_detail: null, chain_checked_at: null });
    await expect(sql`UPDATE transactions SET chain_status = 'maybe'`.execute(database.db)).rejects.toThrow(
      /transactions_chain_status_check/,
    );
  });
});
