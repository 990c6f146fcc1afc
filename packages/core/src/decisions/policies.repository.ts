import { type DB, type Kysely, sql } from '@vouch/db';

type Executor = Kysely<DB>;

/** The organization's default policy is stored under this agent. */
export const DEFAULT_POLICY_AGENT = '';

export interface PolicyRow {
  organization_id: string;
  agent: string;
  version: number;
  rules: unknown;
  actor_key_id: string | null;
  created_at: Date;
}

/** The latest version of a policy (its rules null when that version deleted it), or none. */
export function latestPolicy(db: Executor, organizationId: string, agent: string): Promise<PolicyRow | undefined> {
  return db
    .selectFrom('policies')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export function policyVersion(db: Executor, organizationId: string, agent: string, version: number) {
  return db
    .selectFrom('policies')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent)
    .where('version', '=', version)
    .executeTakeFirst();
}

/** Up to `limit` versions below `before` (all when null), newest first. */
export function policyVersions(
  db: Executor,
  organizationId: string,
  agent: string,
  before: number | null,
  limit: number,
): Promise<PolicyRow[]> {
  let query = db
    .selectFrom('policies')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('agent', '=', agent);
  if (before !== null) query = query.where('version', '<', before);
  return query.orderBy('version', 'desc').limit(limit).execute();
}

/**
 * Takes the policy's lock until the transaction ends: writers of one policy number their versions
 * one after another. The two-key form keeps clear of the single-key locks used elsewhere.
 */
export async function lockPolicy(db: Executor, organizationId: string, agent: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${organizationId}), hashtext(${agent}))`.execute(db);
}

/**
 * Adds the next version in one statement, under the policy's lock (`lockPolicy`), so no concurrent
 * writer takes the same number. `rules` null records a deletion.
 */
export async function insertVersion(
  db: Executor,
  v: { organizationId: string; agent: string; rules: unknown; actorKeyId: string | null; now: Date },
): Promise<PolicyRow> {
  const result = await sql<PolicyRow>`
    INSERT INTO policies (organization_id, agent, version, rules, actor_key_id, created_at)
    SELECT ${v.organizationId}, ${v.agent}, COALESCE(max(version), 0) + 1,
      ${v.rules === null ? null : JSON.stringify(v.rules)}::jsonb, ${v.actorKeyId}, ${v.now}
    FROM policies WHERE organization_id = ${v.organizationId} AND agent = ${v.agent}
    RETURNING *`.execute(db);
  const row = result.rows[0];
  if (!row) throw new Error('policy insert returned nothing');
  return row;
}
