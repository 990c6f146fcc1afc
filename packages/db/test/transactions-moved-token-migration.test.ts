import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE = '20261212000000-erc8004-minted-to';

describe('migration 20261213000000-transactions-moved-token', () => {
  it('reads which verified records without an asset were token transfers from their detail', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    const agent = `0x${'4'.repeat(40)}`;
    const token = `0x${'d'.repeat(40)}`;
    await sql`INSERT INTO agents (address, is_registered, score, first_seen_at, updated_at)
      VALUES (${agent}, false, 0, now(), now())`.execute(database.db);
    const insert = (hash: string, asset: string, detail: string) =>
      sql`INSERT INTO transactions (agent, tx_hash, amount, asset, type, success, occurred_at, recorded_at, chain_status, chain_detail)
        VALUES (${agent}, ${hash}, 5, ${asset}, 0, true, now(), now(), 'verified', ${detail})`.execute(database.db);
    await insert(`0x${'1'.repeat(64)}`, '', `block 7: success, a transfer of token ${token} from the agent`);
    await insert(`0x${'2'.repeat(64)}`, '', 'block 7: success, native value from the agent');
    await insert(
      `0x${'3'.repeat(64)}`,
      `eip155:1/erc20:${token}`,
      `block 7: success, a transfer of token ${token} from the agent`,
    );

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const rows = await sql<{ tx_hash: string; moved_token: string | null }>`
      SELECT tx_hash, moved_token FROM transactions ORDER BY tx_hash`.execute(database.db);
    expect(rows.rows.map((r) => r.moved_token)).toEqual([token, null, null]);
  });
});
