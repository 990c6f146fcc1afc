import { type Kysely, sql } from 'kysely';

/**
 * `erc8004_identities.minted_to`: the address an identity was minted to. An ERC-721 transfer
 * needs no consent of the address it is sent to, so owning an identity says only that someone
 * sent it: an address stands for an identity by its verified `agentWallet` (set with the wallet's
 * own signature), or by owning it when it was minted to it (docs/erc8004.md). Rows untouched since
 * their registration were minted to their owner; for the others it is not known here, so the
 * identity registries' cursors are removed and the next indexer run reads them again from
 * `ERC8004_START_BLOCK` (upserts by agent id: nothing is counted twice), reported `not_indexed`
 * and then `behind` meanwhile, so feedback raises no score until it is current again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE erc8004_identities ADD COLUMN minted_to text`.execute(db);
  await sql`UPDATE erc8004_identities SET minted_to = owner
    WHERE registered_block IS NOT NULL AND updated_block = registered_block`.execute(db);
  await sql`DELETE FROM erc8004_cursors WHERE kind = 'identity'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE erc8004_identities DROP COLUMN minted_to`.execute(db);
}
