// `npm run db:migrate`: brings DATABASE_URL (or the embedded database in DATA_DIR) to the
// latest schema and loads the bundled sanctions snapshot if there is none yet.
import { createServices } from '@vouch/core';
import { createDatabase, migrateToLatest } from '@vouch/db';

const database = createDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.DATA_DIR });
try {
  const result = await migrateToLatest(database.db);
  const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  const loaded = await createServices({ db: database.db }).sanctions.ensureBundled();
  if (loaded) console.log(`sanctions: loaded ${loaded.entries} addresses (snapshot ${loaded.snapshotDate})`);
} finally {
  await database.close();
}
