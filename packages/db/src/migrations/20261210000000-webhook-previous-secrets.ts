import { type Kysely, sql } from 'kysely';

/**
 * `webhooks.previous_secrets`: every secret a rotation retired that still signs deliveries, each
 * until its own time (`[{secret, expiresAt}]`), in place of one `previous_secret`. With one, a
 * second rotation within the first one's 24 hours dropped the first old secret early, against what
 * that rotation had answered (docs/events.md, "Rotation"). A previous secret still valid is kept.
 * Processes of the previous version read and write the dropped columns: stop them before this runs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks ADD COLUMN previous_secrets jsonb NOT NULL DEFAULT '[]'`.execute(db);
  await sql`
    UPDATE webhooks
    SET previous_secrets = jsonb_build_array(
      jsonb_build_object('secret', previous_secret, 'expiresAt', previous_secret_expires_at))
    WHERE previous_secret IS NOT NULL AND previous_secret_expires_at > now()`.execute(db);
  await sql`ALTER TABLE webhooks DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at`.execute(db);
}

/** Keeps the previous secret that signs longest. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE webhooks ADD COLUMN previous_secret text, ADD COLUMN previous_secret_expires_at timestamptz`.execute(
    db,
  );
  await sql`
    UPDATE webhooks w
    SET previous_secret = last.s->>'secret', previous_secret_expires_at = (last.s->>'expiresAt')::timestamptz
    FROM (
      SELECT DISTINCT ON (id) id, s FROM webhooks, jsonb_array_elements(previous_secrets) s
      ORDER BY id, (s->>'expiresAt')::timestamptz DESC
    ) last
    WHERE last.id = w.id`.execute(db);
  await sql`ALTER TABLE webhooks DROP COLUMN previous_secrets`.execute(db);
}
