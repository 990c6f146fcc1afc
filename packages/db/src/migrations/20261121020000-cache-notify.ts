import type { Kysely } from 'kysely';
import { cacheNotifyRowsV1 } from '../functions.ts';

/** Cache notifications per row (functions.ts, cacheNotifyRowsV1). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await cacheNotifyRowsV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await cacheNotifyRowsV1.drop(db);
}
