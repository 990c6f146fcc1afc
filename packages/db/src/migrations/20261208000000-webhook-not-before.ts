import { type Kysely, sql } from 'kysely';

/**
 * `webhook_deliveries.not_before`: the database's own time before which the delivery's next
 * attempt is not sent, stored with the attempt that failed. A job run again before its wait is
 * over (its worker lost between storing an attempt and putting the job back to wait) waits out
 * the rest instead of sending at once (docs/events.md, "Retries"). Existing deliveries have none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries ADD COLUMN not_before timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhook_deliveries DROP COLUMN not_before`.execute(db);
}
