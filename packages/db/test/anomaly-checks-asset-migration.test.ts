import { createMigrator, type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const BEFORE = '20261215000000-anomaly-checks-latest';

describe('migration 20261216000000-anomaly-checks-asset', () => {
  it('keeps the checks stored before it, their asset unknown (null), and its down step removes the column', async () => {
    const migrator = createMigrator(database.db);
    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    await sql`INSERT INTO anomaly_checks (organization_id, agent, amount, type, anomaly_detected, risk_score, severity, flags, factors, created_at)
      VALUES ('default', ${`0x${'1'.repeat(40)}`}, 50000000, 0, false, 0, 'NONE', '[]', '{}', now())`.execute(
      database.db,
    );

    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    const after = await sql<{ amount: string; asset: string | null }>`
      SELECT amount::text, asset FROM anomaly_checks`.execute(database.db);
    expect(after.rows).toEqual([{ amount: '50000000', asset: null }]);

    expect((await migrator.migrateTo(BEFORE)).error).toBeUndefined();
    const columns = await sql<{ column_name: string }>`
      SELECT column_name FROM information_schema.columns WHERE table_name = 'anomaly_checks' AND column_name = 'asset'`.execute(
      database.db,
    );
    expect(columns.rows).toEqual([]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
