import { type Kysely, sql } from 'kysely';

/**
 * What a verification reads (the agent, its recent transactions, the active sanctions
 * snapshot and the lists the address and its owner are on), as a function. The query
 * joins five tables through three subqueries: planned per call it cost ~1 ms before a
 * 0.06 ms execution; a PL/pgSQL function keeps its plan for the session, so a call is
 * one short statement. Always exactly one row (null columns for an unknown agent or no
 * active snapshot).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION vouch_verification_facts(p_address text, p_since timestamptz)
    RETURNS TABLE (
      known boolean, is_registered boolean, owner text, owner_changed_at timestamptz,
      first_seen_at timestamptz, score integer, recent_transactions integer,
      snapshot_id bigint, snapshot_name text, snapshot_date text, snapshot_entries integer,
      address_lists text[], owner_lists text[]
    )
    LANGUAGE plpgsql STABLE AS $$
    BEGIN
      RETURN QUERY
      SELECT a.address IS NOT NULL, a.is_registered, a.owner, a.owner_changed_at, a.first_seen_at, a.score,
        (SELECT count(*)::int FROM transactions t WHERE t.agent = p_address AND t.occurred_at >= p_since),
        ss.id, ss.name, ss.snapshot_date, ss.entries,
        (SELECT e.lists FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = p_address),
        (SELECT e.lists FROM sanctions_entries e WHERE e.snapshot_id = ss.id AND e.address = a.owner)
      FROM (SELECT 1) AS one
      LEFT JOIN agents a ON a.address = p_address
      LEFT JOIN (SELECT s.id, s.name, s.snapshot_date, s.entries FROM sanctions_snapshots s WHERE s.is_active LIMIT 1) ss
        ON true;
    END $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS vouch_verification_facts(text, timestamptz)`.execute(db);
}
