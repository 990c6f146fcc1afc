// `npm run db:migrate`: brings DATABASE_URL (or the embedded database in DATA_DIR) to the latest schema.
import { createDatabase } from './client.ts';
import { migrateToLatest } from './migrate.ts';

const database = createDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.DATA_DIR });
try {
  const result = await migrateToLatest(database.db);
  const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await database.close();
}
