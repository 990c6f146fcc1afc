import type { Kysely } from 'kysely';
import { verificationFactsV1 } from '../functions.ts';

/** What a verification reads, as a function with a plan kept per session (functions.ts, verificationFactsV1). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await verificationFactsV1.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await verificationFactsV1.drop(db);
}
