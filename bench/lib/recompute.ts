import { type DB, type Kysely, sql } from '@vouch/db';

/**
 * Puts every agent back to score 0 (so a recomputation writes all of them again),
 * forgets the score history and vacuums, so every timed recomputation starts from
 * the same state.
 */
export async function resetScores(db: Kysely<DB>): Promise<number> {
  const result = await sql`UPDATE agents SET score = 0 WHERE score <> 0`.execute(db);
  await sql`DELETE FROM score_events`.execute(db);
  await sql`VACUUM (ANALYZE) agents, score_events`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

export async function agentCount(db: Kysely<DB>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM agents`.execute(db);
  return rows[0]?.n ?? 0;
}
