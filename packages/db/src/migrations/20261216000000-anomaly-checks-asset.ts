import { type Kysely, sql } from 'kysely';

/**
 * `anomaly_checks.asset`: a stored check's amount is in the atomic units of its asset ('' the
 * chain's native unit, as a transaction's), without which it cannot be read: 50,000,000 is 50 USDC
 * or a speck of a wei. Checks stored before it have none (null: the asset was not kept).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE anomaly_checks ADD COLUMN asset text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE anomaly_checks DROP COLUMN asset`.execute(db);
}
