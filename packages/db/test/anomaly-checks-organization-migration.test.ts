import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE = '20261210000000-webhook-previous-secrets';

const organizationsOfChecks = async () =>
  (
    await sql<{ agent: string; organization_id: string | null }>`
      SELECT agent, organization_id FROM anomaly_checks ORDER BY id`.execute(database.db)
  ).rows;

describe('migration 20261211000000-anomaly-checks-organization', () => {
  it('gives the checks of a single-organization install to it, and those of a shared one to nobody', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    const agent = `0x${'7'.repeat(40)}`;
    await sql`INSERT INTO anomaly_checks (agent, amount, type, anomaly_detected, risk_score, severity, flags, factors, created_at)
      VALUES (${agent}, 5, 0, true, 80, 'CRITICAL', '[]', '{}', now())`.execute(database.db);

    // Only the default organization: every check was its own.
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await organizationsOfChecks()).toEqual([{ agent, organization_id: 'default' }]);

    // Another organization: whose a check was is not known, and no organization reads it as its own.
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    await sql`INSERT INTO organizations (id, name) VALUES ('org-a', 'a')`.execute(database.db);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await organizationsOfChecks()).toEqual([{ agent, organization_id: null }]);
  });
});
