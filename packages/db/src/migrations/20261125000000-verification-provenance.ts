import { type Kysely, sql } from 'kysely';
import { verificationFactsV1, verificationFactsV2 } from '../functions.ts';

/**
 * What a verification rests on. Each sanctions snapshot carries the SHA-256 of its content
 * (every address and its lists, one `address:list,list` line each in address order), computed at
 * import; existing snapshots get theirs here. Verifications store the list they screened against
 * and the state of each check (passed, failed, or not run).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE sanctions_snapshots ADD COLUMN content_hash text`.execute(db);
  await sql`
    UPDATE sanctions_snapshots s SET content_hash = (
      SELECT encode(sha256(convert_to(coalesce(
        string_agg(e.address || ':' || array_to_string(e.lists, ',') || chr(10), '' ORDER BY e.address COLLATE "C"),
        ''), 'UTF8')), 'hex')
      FROM sanctions_entries e WHERE e.snapshot_id = s.id)`.execute(db);
  await sql`ALTER TABLE verifications ADD COLUMN sanctions_list jsonb, ADD COLUMN check_states jsonb`.execute(db);
  await verificationFactsV1.drop(db);
  await verificationFactsV2.create(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await verificationFactsV2.drop(db);
  await verificationFactsV1.create(db);
  await sql`ALTER TABLE verifications DROP COLUMN sanctions_list, DROP COLUMN check_states`.execute(db);
  await sql`ALTER TABLE sanctions_snapshots DROP COLUMN content_hash`.execute(db);
}
