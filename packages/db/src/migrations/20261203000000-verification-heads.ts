import { type Kysely, sql } from 'kysely';

/**
 * Per address, the status of its last stored verification, in commit order (docs/events.md,
 * `verification.completed`). A verification's statement upserts this row: the upsert waits for
 * a verification of the same address still being stored and then sees its status, so two
 * verifications at once announce one change once. Filled from each address's latest
 * verification; `previous_status` is what the last upsert replaced.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE verification_heads (
      agent text PRIMARY KEY,
      status text NOT NULL,
      previous_status text,
      updated_at timestamptz NOT NULL
    )`.execute(db);
  await sql`
    INSERT INTO verification_heads (agent, status, updated_at)
    SELECT DISTINCT ON (agent) agent, status, created_at FROM verifications
    ORDER BY agent, created_at DESC, id DESC`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE verification_heads`.execute(db);
}
