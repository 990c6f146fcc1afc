import { type Kysely, sql } from 'kysely';

/**
 * `anomaly_checks.organization_id`: an anomaly check is the organization's that asked for it. It
 * judges a payment that organization is about to make (its amount and counterparty), and enrich
 * reads the caller's latest only: one organization's checks neither show nor raise the risk another
 * organization is told. Checks made before this are the default organization's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE anomaly_checks ADD COLUMN organization_id text NOT NULL DEFAULT 'default'
    REFERENCES organizations (id)`.execute(db);
  await sql`ALTER TABLE anomaly_checks ALTER COLUMN organization_id DROP DEFAULT`.execute(db);
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
