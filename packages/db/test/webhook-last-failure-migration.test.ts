import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const columns = async () =>
  (
    await sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'webhooks' AND column_name = 'last_failure_at'`.execute(
      database.db,
    )
  ).rows.map((r) => r.name);

describe('migration 20261207000000-webhook-last-failure', () => {
  it('gives a failing endpoint its latest attempt as its last failure, and its down step drops the column', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo('20261206000000-sanctions-notify-cache')).error).toBeUndefined();
    expect(await columns()).toEqual([]);

    await sql`INSERT INTO organizations (id, name) VALUES ('org-m', 'm')`.execute(database.db);
    const endpoint = (id: string, failingSince: string | null) =>
      sql`INSERT INTO webhooks (id, organization_id, url, event_types, secret, failing_since, created_at, updated_at)
        VALUES (${id}, 'org-m', 'https://example.com/h', '{spend.accepted}', 'whsec_x', ${failingSince}::timestamptz,
          now(), now())`.execute(database.db);
    await endpoint('wh_failing', '2026-03-01T00:00:00Z');
    await endpoint('wh_fine', null);
    // One failed delivery each, of an event of its own.
    for (const [webhook, at] of [
      ['wh_failing', '2026-03-01T00:00:00Z'],
      ['wh_failing', '2026-03-02T05:00:00Z'],
      ['wh_fine', '2026-03-02T06:00:00Z'],
    ] as const) {
      await sql`
        WITH e AS (
          INSERT INTO events (organization_id, type, agent, data, created_at)
          VALUES ('org-m', 'spend.accepted', NULL, '{}'::jsonb, now()) RETURNING id
        )
        INSERT INTO webhook_deliveries (organization_id, webhook_id, event_id, status, attempts, last_attempt_at, created_at)
        SELECT 'org-m', ${webhook}, e.id, 'failed', 1, ${at}::timestamptz, now() FROM e`.execute(database.db);
    }

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const rows = await database.db
      .selectFrom('webhooks')
      .select(['id', 'last_failure_at'])
      .where('organization_id', '=', 'org-m')
      .orderBy('id')
      .execute();
    expect(rows.map((r) => [r.id, r.last_failure_at?.toISOString() ?? null])).toEqual([
      ['wh_failing', '2026-03-02T05:00:00.000Z'],
      ['wh_fine', null],
    ]);

    expect((await migrator.migrateTo('20261206000000-sanctions-notify-cache')).error).toBeUndefined();
    expect(await columns()).toEqual([]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
