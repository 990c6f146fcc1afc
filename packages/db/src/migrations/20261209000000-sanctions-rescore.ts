import { type Kysely, sql } from 'kysely';

/**
 * What re-scoring an import still owes. An import activates its snapshot in one transaction and
 * re-scores the agents whose status it changed after that commits; `previous_id` (the snapshot
 * active before it) and `rescored_at` (set once that re-scoring is done) let a process that
 * starts later finish it when the importer stopped in between (docs/checks.md). Snapshots already
 * stored are taken as re-scored.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE sanctions_snapshots
    ADD COLUMN previous_id bigint REFERENCES sanctions_snapshots (id) ON DELETE SET NULL,
    ADD COLUMN rescored_at timestamptz`.execute(db);
  await sql`UPDATE sanctions_snapshots SET rescored_at = imported_at`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE sanctions_snapshots DROP COLUMN previous_id, DROP COLUMN rescored_at`.execute(db);
}
