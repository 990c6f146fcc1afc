import { type Kysely, sql } from 'kysely';

/**
 * `anomaly_checks.organization_id`: an anomaly check is the organization's that asked for it. It
 * judges a payment that organization is about to make (its amount and counterparty), and enrich
 * reads the caller's latest only: one organization's checks neither show nor raise the risk another
 * organization is told. Checks made before this are the default organization's when it is the only
 * one (they were all its own); with other organizations nobody knows whose a check was, and it is
 * nobody's (null: no enrich reads it; checks older than 30 days are not read anyway).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE anomaly_checks ADD COLUMN organization_id text REFERENCES organizations (id)`.execute(db);
  await sql`UPDATE anomaly_checks SET organization_id = 'default'
    WHERE NOT EXISTS (SELECT 1 FROM organizations WHERE id <> 'default')`.execute(db);
  await sql`DROP INDEX anomaly_checks_agent_idx`.execute(db);
  await sql`CREATE INDEX anomaly_checks_organization_agent_idx ON anomaly_checks (organization_id, agent, id)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX anomaly_checks_organization_agent_idx`.execute(db);
  await sql`CREATE INDEX anomaly_checks_agent_idx ON anomaly_checks (agent, created_at)`.execute(db);
  await sql`ALTER TABLE anomaly_checks DROP COLUMN organization_id`.execute(db);
}
