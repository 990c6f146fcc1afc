import type { Kysely } from 'kysely';
import { cacheNotifyRowsV1, cacheNotifyStatementsV2 } from '../functions.ts';

/** Cache notifications per statement instead of per row (functions.ts, cacheNotifyStatementsV2). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await cacheNotifyRowsV1.drop(db);
  await cacheNotifyStatementsV2.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await cacheNotifyStatementsV2.drop(db);
  await cacheNotifyRowsV1.create(db);
}
