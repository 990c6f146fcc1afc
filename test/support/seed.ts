import { type DB, type Kysely, sql } from '../../packages/db/src/index.ts';

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
