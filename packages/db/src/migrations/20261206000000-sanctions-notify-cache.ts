import type { Kysely } from 'kysely';
import { sanctionsNotifyCacheV1 } from '../functions.ts';

/**
 * Every change of `sanctions_snapshots` or `sanctions_entries` drops the cached budgets and the
 * cached active list of every API process (functions.ts, sanctionsNotifyCacheV1): a list
 * deactivated or edited by hand is seen at once, and checks refuse with SANCTIONS_LIST_UNAVAILABLE
 * instead of passing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sanctionsNotifyCacheV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sanctionsNotifyCacheV1.drop(db);
}
