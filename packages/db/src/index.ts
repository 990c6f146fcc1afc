export type { Insertable, Kysely, KyselyPlugin, Selectable, Transaction } from 'kysely';
export { type RawBuilder, sql } from 'kysely';
export {
  createDatabase,
  type Database,
  type DatabaseDriver,
  type DatabaseOptions,
  type ListenHandlers,
  type Listening,
} from './client.ts';
export { type DataDirHolder, DataDirLockedError, lockDataDir } from './data-dir-lock.ts';
export { isDatabaseBusy, isDatabaseUnavailable, sqlState } from './errors.ts';
export { CACHE_NOTIFY_ROW_LIMIT } from './functions.ts';
export { createMigrator, migrateToLatest } from './migrate.ts';
export { migrations } from './migrations/index.ts';
export { runPrepared } from './prepared.ts';
export type * from './schema.ts';
