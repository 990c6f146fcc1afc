import { type Kysely, sql } from 'kysely';

/**
 * Which asset a recorded transaction moved (docs/api.md "Transactions"): a CAIP-19 id, its amount
 * in that asset's atomic units; '' for the chain's native unit (wei), which every row recorded
 * before this column existed was.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions ADD COLUMN asset text NOT NULL DEFAULT ''`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions DROP COLUMN asset`.execute(db);
}
