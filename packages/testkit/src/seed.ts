import { type DB, type Kysely, sql } from '@vouch/db';

/**
 * Inserts `count` registered agents directly, each with one successful 1-ether
 * transaction, so the score model gives every one of them 488 (from a stored 0).
 */
export async function seedScoredAgents(db: Kysely<DB>, count: number, now = new Date()): Promise<string[]> {
  await sql`
    INSERT INTO agents (address, is_registered, score, first_seen_at, registered_at, updated_at)
    SELECT '0x' || substr(md5(i::text), 1, 32) || lpad(to_hex(i), 8, '0'), true, 0, ${now}, ${now}, ${now}
    FROM generate_series(1, ${count}::int) AS i`.execute(db);
  await sql`
    INSERT INTO transactions (agent, tx_hash, amount, type, success, occurred_at, recorded_at)
    SELECT '0x' || substr(md5(i::text), 1, 32) || lpad(to_hex(i), 8, '0'), '0x' || md5(i::text) || md5((i + 1)::text),
           1000000000000000000, 0, true, ${now}, ${now}
    FROM generate_series(1, ${count}::int) AS i`.execute(db);
  const rows = await db.selectFrom('agents').select('address').orderBy('address').execute();
  return rows.map((r) => r.address);
}

/** The score the model gives a seeded agent. */
export const SEEDED_SCORE = 488;

/**
 * Puts every agent back to score 0 and forgets the score history, so a recomputation
 * writes all of them again; returns how many agents changed. `vacuum` also vacuums
 * both tables, so that every timed recomputation starts from the same state.
 */
export async function resetScores(db: Kysely<DB>, options: { vacuum?: boolean } = {}): Promise<number> {
  const result = await sql`UPDATE agents SET score = 0 WHERE score <> 0`.execute(db);
  await sql`DELETE FROM score_events`.execute(db);
  if (options.vacuum) await sql`VACUUM (ANALYZE) agents, score_events`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

export async function agentCount(db: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM agents`.execute(db);
  return rows[0]?.n ?? 0;
}

/** An agent's spend ledger, oldest first: what each attempt asked and whether it was accepted. */
export function spendLedger(db: Kysely<DB>, agent: string) {
  return db
    .selectFrom('spends')
    .select(['amount', 'accepted', 'reason'])
    .where('agent', '=', agent)
    .orderBy('id')
    .execute();
}

/** Puts an address on the active sanctions list in place (the read caches hear of it at commit). */
export async function listOnActiveSnapshot(db: Kysely<DB>, address: string): Promise<void> {
  await sql`INSERT INTO sanctions_entries (snapshot_id, address, lists)
    SELECT id, ${address}, ARRAY['ETH'] FROM sanctions_snapshots WHERE is_active`.execute(db);
}

/**
 * Leaves no sanctions list active (as an edit by hand could), and returns what activates the
 * newest again.
 */
export async function deactivateSanctionsList(db: Kysely<DB>): Promise<() => Promise<void>> {
  await sql`UPDATE sanctions_snapshots SET is_active = false WHERE is_active`.execute(db);
  return async () => {
    await sql`UPDATE sanctions_snapshots SET is_active = true
      WHERE id = (SELECT max(id) FROM sanctions_snapshots)`.execute(db);
  };
}

/** Runs `fn` while no sanctions list is active, then activates the newest again. */
export async function withoutSanctionsList<T>(db: Kysely<DB>, fn: () => Promise<T>): Promise<T> {
  const restore = await deactivateSanctionsList(db);
  try {
    return await fn();
  } finally {
    await restore();
  }
}
