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

/** The error of `statement` run in a transaction with `setting` (a SET LOCAL of a timeout). */
function failureWith(setting: 'statement_timeout' | 'lock_timeout', statement: ReturnType<typeof sql>) {
  return failureOf(() =>
    database.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL ${sql.raw(setting)} = 50`.execute(trx);
      await statement.execute(trx);
    }),
  );
}

/** Busy, not unavailable: what a request answers 503 and a job spends an attempt on. */
function expectBusy(error: unknown, code: string) {
  expect((error as { code?: string }).code).toBe(code);
  expect(isDatabaseBusy(error)).toBe(true);
  expect(isDatabaseUnavailable(error)).toBe(false);
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
      expectBusy(await failureWith('statement_timeout', sql`SELECT pg_sleep(5)`), '57014');
      const holder = await holdTransaction(database.db, (trx) =>
        sql`SELECT pg_advisory_xact_lock(918273)`.execute(trx),
      );
      try {
        expectBusy(await failureWith('lock_timeout', sql`SELECT pg_advisory_xact_lock(918273)`), '55P03');
      } finally {
        await holder.release();
      }
    },
  );
});
