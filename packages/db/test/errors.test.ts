import { type Database, isDatabaseBusy, isDatabaseUnavailable, sql } from '@vouch/db';
import { createTestDatabase, holdTransaction } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase({ poolMax: 4 });
});
afterAll(() => database.close());

async function failureOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the statement to fail');
}

describe('isDatabaseBusy and isDatabaseUnavailable', () => {
  it('is false for a statement the database refuses on its merits', async () => {
    const error = await failureOf(() => sql`SELECT 1 / 0`.execute(database.db));
    expect((error as { code?: string }).code).toBe('22012');
    expect(isDatabaseBusy(error)).toBe(false);
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  // Waiting on a lock another connection holds needs a second connection.
  it.runIf(inject('testDbMode') === 'postgres')(
    'a statement ended by statement_timeout or lock_timeout is busy (a 503 for a request), not unavailable (a job spends an attempt)',
    async () => {
      const slow = await failureOf(() =>
        database.db.transaction().execute(async (trx) => {
          await sql`SET LOCAL statement_timeout = 50`.execute(trx);
          await sql`SELECT pg_sleep(5)`.execute(trx);
        }),
      );
      expect((slow as { code?: string }).code).toBe('57014');
      expect(isDatabaseBusy(slow)).toBe(true);
      expect(isDatabaseUnavailable(slow)).toBe(false);

      const holder = await holdTransaction(database.db, (trx) =>
        sql`SELECT pg_advisory_xact_lock(918273)`.execute(trx),
      );
      try {
        const waited = await failureOf(() =>
          database.db.transaction().execute(async (trx) => {
            await sql`SET LOCAL lock_timeout = 50`.execute(trx);
            await sql`SELECT pg_advisory_xact_lock(918273)`.execute(trx);
          }),
        );
        expect((waited as { code?: string }).code).toBe('55P03');
        expect(isDatabaseBusy(waited)).toBe(true);
        expect(isDatabaseUnavailable(waited)).toBe(false);
      } finally {
        await holder.release();
      }
    },
  );
});
