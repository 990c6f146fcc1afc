import { type Kysely, sql } from 'kysely';

/** Transactions dated before their agent was first seen are kept, and marked as such. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions ADD COLUMN backdated boolean NOT NULL DEFAULT false`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions DROP COLUMN backdated`.execute(db);
}
