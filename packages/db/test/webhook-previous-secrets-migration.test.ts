import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE = '20261209000000-sanctions-rescore';

describe('migration 20261210000000-webhook-previous-secrets', () => {
  it('keeps a previous secret still signing, drops one whose time is over, and its down step keeps the longest', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();

    await sql`INSERT INTO organizations (id, name) VALUES ('org-p', 'p')`.execute(database.db);
    const endpoint = (id: string, previous: string | null, expires: string | null) =>
      sql`INSERT INTO webhooks (id, organization_id, url, event_types, secret, previous_secret,
          previous_secret_expires_at, created_at, updated_at)
        VALUES (${id}, 'org-p', 'https://example.com/h', '{spend.accepted}', 'whsec_now', ${previous},
          ${expires}::timestamptz, now(), now())`.execute(database.db);
    await endpoint('wh_valid', 'whsec_old', '2999-01-01T00:00:00Z');
    await endpoint('wh_over', 'whsec_gone', '2001-01-01T00:00:00Z');
    await endpoint('wh_none', null, null);

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const rows = await sql<{ id: string; previous_secrets: Array<{ secret: string; expiresAt: string }> }>`
      SELECT id, previous_secrets FROM webhooks WHERE organization_id = 'org-p' ORDER BY id`.execute(database.db);
    expect(
      rows.rows.map((r) => [r.id, r.previous_secrets.map((p) => [p.secret, new Date(p.expiresAt).toISOString()])]),
    ).toEqual([
      ['wh_none', []],
      ['wh_over', []],
      ['wh_valid', [['whsec_old', '2999-01-01T00:00:00.000Z']]],
    ]);

    // Two previous secrets: going down keeps the one that signs longest.
    await sql`UPDATE webhooks SET previous_secrets = ${JSON.stringify([
      { secret: 'whsec_a', expiresAt: '2999-01-01T00:00:00Z' },
      { secret: 'whsec_b', expiresAt: '2999-06-01T00:00:00Z' },
    ])}::jsonb WHERE id = 'wh_valid'`.execute(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    const down = await sql<{ id: string; previous_secret: string | null; previous_secret_expires_at: Date | null }>`
      SELECT id, previous_secret, previous_secret_expires_at FROM webhooks WHERE organization_id = 'org-p'
      ORDER BY id`.execute(database.db);
    expect(
      down.rows.map((r) => [r.id, r.previous_secret, r.previous_secret_expires_at?.toISOString() ?? null]),
    ).toEqual([
      ['wh_none', null, null],
      ['wh_over', null, null],
      ['wh_valid', 'whsec_b', '2999-06-01T00:00:00.000Z'],
    ]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
