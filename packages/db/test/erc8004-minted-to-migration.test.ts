import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE = '20261211000000-anomaly-checks-organization';

describe('migration 20261212000000-erc8004-minted-to', () => {
  it('keeps the minter of identities untouched since their registration, and has the identity registry read again', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    const owner = `0x${'1'.repeat(40)}`;
    const holder = `0x${'2'.repeat(40)}`;
    // Identity 0 as registered; identity 1 changed since (a transfer, a URI or its wallet: not known which).
    await sql`INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, registered_block, updated_block)
      VALUES (1, 'identity', 0, ${owner}, 10, 10), (1, 'identity', 1, ${holder}, 11, 15)`.execute(database.db);
    await sql`INSERT INTO erc8004_cursors (chain_id, registry, kind, next_block, updated_at)
      VALUES (1, 'identity', 'identity', 20, now()), (1, 'reputation', 'reputation', 20, now())`.execute(database.db);

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const identities = await sql<{ agent_id: string; minted_to: string | null }>`
      SELECT agent_id::text, minted_to FROM erc8004_identities ORDER BY agent_id`.execute(database.db);
    expect(identities.rows).toEqual([
      { agent_id: '0', minted_to: owner },
      { agent_id: '1', minted_to: null },
    ]);
    const cursors = await sql<{ kind: string }>`SELECT kind FROM erc8004_cursors`.execute(database.db);
    expect(cursors.rows).toEqual([{ kind: 'reputation' }]);
  });
});
