import { type Kysely, sql } from 'kysely';

/**
 * `transactions.moved_token`: the token whose transfer the chain check found for the amount of a
 * record that named no asset (records without one are verified by the native value or any token
 * transfer, as they always were). Such a record moved tokens, not wei: it no longer counts in the
 * native volume (stats, the agent, the score's volume factor). Rows verified before this say
 * which in their `chain_detail` ("a transfer of token 0x… from the agent"), read here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions ADD COLUMN moved_token text`.execute(db);
  await sql`UPDATE transactions
    SET moved_token = substring(chain_detail from 'a transfer of token (0x[0-9a-f]{40}) from the agent')
    WHERE asset = '' AND chain_status = 'verified' AND chain_detail LIKE '%a transfer of token 0x%'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE transactions DROP COLUMN moved_token`.execute(db);
}
