import { type Kysely, sql } from 'kysely';

/**
 * The latest anomaly check an organization made of an agent (what enrich reads) is the one made
 * last, by `created_at`: the index ends with it, so that reading it stays one index lookup.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX anomaly_checks_organization_agent_idx`.execute(db);
  await sql`CREATE INDEX anomaly_checks_organization_agent_idx ON anomaly_checks (organization_id, agent, created_at, id)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX anomaly_checks_organization_agent_idx`.execute(db);
  await sql`CREATE INDEX anomaly_checks_organization_agent_idx ON anomaly_checks (organization_id, agent, id)`.execute(
    db,
  );
}
