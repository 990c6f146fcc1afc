import { type Kysely, sql } from 'kysely';

/**
 * What the chain said about each recorded transaction (docs/api.md "Transactions"). Rows recorded
 * before a chain was configured are self-reported: `unverified`. The partial index serves the
 * periodic re-check, which reads only the rows whose state the chain may still change.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE transactions
      ADD COLUMN chain_status text NOT NULL DEFAULT 'unverified'
        CONSTRAINT transactions_chain_status_check
        CHECK (chain_status IN ('unverified', 'pending', 'verified', 'mismatch', 'not_found', 'unreachable')),
      ADD COLUMN chain_detail text,
      ADD COLUMN chain_checked_at timestamptz`.execute(db);
  await sql`
    CREATE INDEX transactions_chain_recheck_idx ON transactions (recorded_at)
    WHERE chain_status IN ('pending', 'not_found', 'unreachable')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX transactions_chain_recheck_idx`.execute(db);
  await sql`
    ALTER TABLE transactions DROP COLUMN chain_status, DROP COLUMN chain_detail, DROP COLUMN chain_checked_at`.execute(
    db,
  );
}
