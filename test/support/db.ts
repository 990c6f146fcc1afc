import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createDatabase, type Database, migrateToLatest } from '../../packages/db/src/index.ts';
import { ADMIN_DATABASE_URL, databaseUrlFor } from './env.ts';

/**
 * A fresh, migrated database for one test file: a clone of the migrated template
 * on Postgres, or an in-memory PGlite when the run uses the embedded driver.
 */
export async function createTestDatabase(options: { poolMax?: number } = {}): Promise<Database & { url?: string }> {
  if (inject('testDbMode') === 'pglite') {
    const database = createDatabase({ dataDir: 'memory://' });
    await migrateToLatest(database.db);
    return database;
  }
  const name = `${inject('templateDatabase')}_f${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    // Cloning needs the template to be idle; concurrent clones can briefly collide.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`);
        break;
      } catch (error) {
        if (attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = databaseUrlFor(name);
  const database = createDatabase({ databaseUrl: url, poolMax: options.poolMax ?? 20 });
  return {
    ...database,
    url,
    close: async () => {
      await database.close();
      const dropper = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await dropper.end();
    },
  };
}
