import { type Kysely, sql } from 'kysely';

/**
 * `webhooks.last_failure_at`: when the endpoint last failed an attempt. An endpoint's failure
 * record (`failing_since`) only runs while failures keep coming: a failure after a longer quiet
 * spell than any wait of the retry schedule starts a new one (docs/events.md, "Endpoints failing
 * for days"). An endpoint failing now gets its latest attempt, which failed: none has succeeded
 * since `failing_since`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks ADD COLUMN last_failure_at timestamptz`.execute(db);
  await sql`
    UPDATE webhooks AS w SET last_failure_at = (
      SELECT max(d.last_attempt_at) FROM webhook_deliveries AS d WHERE d.webhook_id = w.id
    )
    WHERE w.failing_since IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks DROP COLUMN last_failure_at`.execute(db);
}
