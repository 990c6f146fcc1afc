import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase } from './client.ts';
import { isDatabaseUnavailable } from './errors.ts';

const database = createDatabase({ dataDir: 'memory://', queryTimeoutMs: 300 });
afterAll(() => database.close());

describe('the embedded database’s one connection', () => {
  it('a query beside an open transaction fails as unavailable instead of waiting for it forever', async () => {
    const { db } = database;
    await sql`CREATE TABLE t (n int)`.execute(db);
    const outcome = await db
      .transaction()
      .execute(async (trx) => {
        await sql`INSERT INTO t VALUES (1)`.execute(trx);
        // Read through the root handle while this transaction holds the connection.
        await sql`SELECT count(*) FROM t`.execute(db);
        return 'answered';
      })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe("the embedded database's connection was not free within 300 ms");
    expect(isDatabaseUnavailable(outcome)).toBe(true);
    // The transaction rolled back and gave the connection up: the database answers again.
    const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM t`.execute(db);
    expect(rows.rows[0]?.n).toBe(0);
  });

  it('queries that merely queue behind each other are all answered', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => sql<{ i: number }>`SELECT ${i}::int AS i`.execute(database.db)),
    );
    expect(answers.map((a) => a.rows[0]?.i)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});

describe('closing the embedded database', () => {
  it('keeps the exit code the process has set', async () => {
    // A command that sets process.exitCode (a failure it reported) and then closes its database
    // must still exit with it: PGlite's close ended its engine with exit(0), which set it to 0.
    const own = createDatabase({ dataDir: 'memory://' });
    await sql`SELECT 1`.execute(own.db);
    const before = process.exitCode;
    try {
      process.exitCode = 1;
      await own.close();
      expect(process.exitCode).toBe(1);
    } finally {
      process.exitCode = before;
    }
  });
});
