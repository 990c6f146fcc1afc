import { type Kysely, sql } from 'kysely';

/**
 * `decisions` keeps its organization without a foreign key, as `events` does. Every decision's
 * organization is the actor's, and organizations are never deleted (docs/tenancy.md); the key
 * cost each decision a lookup of its organization's row, and every decision stored at the same
 * moment locked that one row (FOR KEY SHARE, shared by many transactions at once): with four
 * statements of fifteen decisions in flight it took about 40 % of the insert's time.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE decisions DROP CONSTRAINT decisions_organization_id_fkey`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE decisions ADD CONSTRAINT decisions_organization_id_fkey
    FOREIGN KEY (organization_id) REFERENCES organizations (id)`.execute(db);
}
