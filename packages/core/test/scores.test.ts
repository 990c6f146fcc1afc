import { createAuditService, createScoresService } from '@vouch/core';
import { type Database, sql } from '@vouch/db';
import { createTestDatabase, SEEDED_SCORE, seedScoredAgents } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  // One connection: whatever a recomputation leaves on it, the next statement sees.
  database = await createTestDatabase({ poolMax: 1 });
});
afterAll(() => database.close());

const setting = async () =>
  (await sql<{ v: string }>`SELECT current_setting('random_page_cost') AS v`.execute(database.db)).rows[0]?.v;

describe('recompute', () => {
  it('stores every changed score of a chunk, and its planner setting ends with its transaction', async () => {
    const addresses = await seedScoredAgents(database.db, 5);
    const before = await setting();
    const scores = createScoresService({
      db: database.db,
      clock: () => new Date(),
      audit: createAuditService({ db: database.db, clock: () => new Date() }),
    });

    expect(await scores.recompute(addresses, null)).toEqual({ scored: 5, updated: 5 });
    const stored = await database.db.selectFrom('agents').select('score').where('address', 'in', addresses).execute();
    expect(stored.map((r) => r.score)).toEqual(Array(5).fill(SEEDED_SCORE));
    expect(await setting()).toBe(before);

    // Run again: nothing changed, nothing written.
    expect(await scores.recompute(addresses, null)).toEqual({ scored: 5, updated: 0 });
  });
});
