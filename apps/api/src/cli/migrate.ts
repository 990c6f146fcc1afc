// `npm run db:migrate`: brings DATABASE_URL (or the embedded database in DATA_DIR) to the
// latest schema and loads the bundled sanctions snapshot if there is none yet.
import { migrateToLatest } from '@vouch/db';
import { createRuntime, exitOnStartupFailure, loadConfig } from '@vouch/runtime';
import pino from 'pino';
import { cliArgs } from './args.ts';

// It takes no arguments: one given (`--down`, `--dry-run`) is refused with the usage, since
// ignoring it would migrate up what the operator meant to roll back or only to look at.
cliArgs('db:migrate', 'npm run db:migrate (takes no arguments)', { options: {} });

try {
  const runtime = await createRuntime(loadConfig(), {
    role: 'cli',
    logger: pino({ level: 'warn' }),
    migrate: false,
    loadSanctions: false,
  });
  try {
    const result = await migrateToLatest(runtime.database.db);
    const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    const loaded = await runtime.services.sanctions.ensureBundled();
    if (loaded) console.log(`sanctions: loaded ${loaded.entries} addresses (snapshot ${loaded.snapshotDate})`);
  } finally {
    await runtime.close();
  }
} catch (error) {
  exitOnStartupFailure(error, 'db:migrate', 'failed');
}
