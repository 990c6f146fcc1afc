import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const TABLES = [
  'agents',
  'score_events',
  'budgets',
  'spends',
  'transactions',
  'idempotency_keys',
  'verifications',
  'sanctions_snapshots',
  'sanctions_entries',
  'sanctions_screenings',
  'anomaly_checks',
  'api_keys',
];

/** Every row of every table, as text without the columns the migration adds. */
async function contents() {
  const added = ['organization_id', 'actor_key_id'];
  const all: Record<string, string[]> = {};
  for (const table of TABLES) {
    const rows = await sql<{
      row: Record<string, unknown>;
    }>`SELECT to_jsonb(t) AS row FROM ${sql.table(table)} t`.execute(database.db);
    all[table] = rows.rows
      .map((r) => {
        const row = { ...r.row };
        for (const column of added) delete row[column];
        // The scopes are renamed (checked on their own below).
        if (table === 'api_keys') delete row.scopes;
        return JSON.stringify(row, Object.keys(row).sort());
      })
      .sort();
  }
  return all;
}

describe('migration 20261126000000-organizations', () => {
  it('moves every row of an existing install into the default organization, losing none', async () => {
    const migrator = createMigrator(database.db);
    const down = await migrator.migrateTo('20261125020000-transaction-chain-status');
    expect(down.error).toBeUndefined();

    // A single-tenant install as it was: agents, scores, budgets, spends, keys, idempotency keys.
    const now = new Date('2026-11-20T10:00:00Z');
    const registered = `0x${'1'.repeat(40)}`;
    const observed = `0x${'2'.repeat(40)}`;
    await sql`INSERT INTO agents (address, is_registered, score, first_seen_at, registered_at, updated_at)
      VALUES (${registered}, true, 640, ${now}, ${now}, ${now}), (${observed}, false, 0, ${now}, NULL, ${now})`.execute(
      database.db,
    );
    await sql`INSERT INTO score_events (agent, old_score, new_score, source, reason, created_at)
      VALUES (${registered}, 0, 640, 'manual', '0x01', ${now})`.execute(database.db);
    await sql`INSERT INTO budgets (agent, daily_limit, monthly_limit, per_tx_limit, daily_spent, monthly_spent, day_start, month_start, created_at, updated_at)
      VALUES (${registered}, 1000, 10000, 1000, 30, 30, ${now}, ${now}, ${now}, ${now})`.execute(database.db);
    await sql`INSERT INTO spends (agent, amount, accepted, reason, created_at)
      VALUES (${registered}, 30, true, NULL, ${now}), (${registered}, 5000, false, 'PER_TX_LIMIT', ${now})`.execute(
      database.db,
    );
    await sql`INSERT INTO transactions (agent, tx_hash, amount, type, success, occurred_at, recorded_at)
      VALUES (${observed}, ${`0x${'a'.repeat(64)}`}, 7, 0, true, ${now}, ${now})`.execute(database.db);
    await sql`INSERT INTO idempotency_keys (scope, key, request_hash, status_code, response, created_at, expires_at)
      VALUES ('POST /api/budgets/:address/spend', 'order-1', 'h', 200, '{}', ${now}, ${now})`.execute(database.db);
    await sql`INSERT INTO api_keys (id, name, key_hash, scopes) VALUES
      ('k1', 'reader', 'h1', ARRAY['read']), ('k2', 'writer', 'h2', ARRAY['read', 'write']),
      ('k3', 'admin', 'h3', ARRAY['admin'])`.execute(database.db);
    const before = await contents();

    // Up to this migration: later ones add columns of their own.
    const up = await migrator.migrateTo('20261126000000-organizations');
    expect(up.error).toBeUndefined();
    expect(await contents()).toEqual(before);

    // Everything that existed is the default organization's; the observed agent has no owner.
    for (const table of ['budgets', 'spends', 'idempotency_keys', 'api_keys']) {
      const orgs = await sql<{ id: string }>`SELECT DISTINCT organization_id AS id FROM ${sql.table(table)}`.execute(
        database.db,
      );
      expect(orgs.rows, table).toEqual([{ id: 'default' }]);
    }
    const owners = await sql<{ address: string; organization_id: string | null }>`
      SELECT address, organization_id FROM agents ORDER BY address`.execute(database.db);
    expect(owners.rows).toEqual([
      { address: registered, organization_id: 'default' },
      { address: observed, organization_id: null },
    ]);
    // `write` became the scopes it stood for.
    const scopes = await sql<{ id: string; scopes: string[] }>`SELECT id, scopes FROM api_keys ORDER BY id`.execute(
      database.db,
    );
    expect(scopes.rows).toEqual([
      { id: 'k1', scopes: ['read'] },
      { id: 'k2', scopes: ['manage', 'read', 'score', 'spend'] },
      { id: 'k3', scopes: ['admin'] },
    ]);
    // The default organization's audit chain starts empty at the genesis hash.
    const head = await sql<{ seq: string; hash: string }>`SELECT seq::text, hash FROM audit_heads`.execute(database.db);
    expect(head.rows).toEqual([{ seq: '0', hash: '0'.repeat(64) }]);

    // And back down and up again.
    expect((await migrator.migrateTo('20261125020000-transaction-chain-status')).error).toBeUndefined();
    expect(await contents()).toEqual(before);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    // The later migrations keep the rows too: the spends are still there, in their windows.
    const spends = await sql<{ n: number }>`SELECT count(*)::int AS n FROM spends WHERE day_start IS NOT NULL`.execute(
      database.db,
    );
    expect(spends.rows).toEqual([{ n: 2 }]);
  });
});
