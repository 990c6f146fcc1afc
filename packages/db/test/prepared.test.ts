import { createDatabase, type Database, runPrepared, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let database: Database & { url?: string };
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const echo = (db: Database['db'], n: number) =>
  runPrepared(db, sql<{ n: number; twice: number }>`SELECT ${n}::int AS n, ${n}::int * 2 AS twice`.compile(db));

describe('runPrepared', () => {
  it('runs the statement with its parameters, on either driver', async () => {
    expect((await echo(database.db, 4)).rows).toEqual([{ n: 4, twice: 8 }]);
    expect((await echo(database.db, 21)).rows).toEqual([{ n: 21, twice: 42 }]);
  });

  it('a failing call leaves the statement usable', async () => {
    const bad = (db: Database['db'], v: string) =>
      runPrepared(db, sql<{ n: number }>`SELECT ${v}::int AS n`.compile(db));
    await expect(bad(database.db, 'not a number')).rejects.toThrow(/invalid input syntax/);
    expect((await bad(database.db, '7')).rows).toEqual([{ n: 7 }]);
  });
});

/** The statements a connection holds, read on that same connection. */
async function preparedOn(db: Database['db']) {
  const { rows } = await sql<{ name: string; statement: string }>`
    SELECT name, statement FROM pg_prepared_statements ORDER BY name`.execute(db);
  return rows;
}

describe.runIf(inject('testDbMode') === 'postgres')('on PostgreSQL', () => {
  it('a marked statement is parsed once per connection and kept under one name; others are not kept', async () => {
    const one = createDatabase({ databaseUrl: database.url, poolMax: 1 });
    try {
      await echo(one.db, 1);
      await echo(one.db, 2);
      await sql`SELECT 1 AS unmarked`.execute(one.db);
      const held = await preparedOn(one.db);
      expect(held).toHaveLength(1);
      expect(held[0]?.statement).toMatch(/^\/\* prepared \*\/ SELECT \$1::int AS n/);
    } finally {
      await one.close();
    }
  });

  it('with preparedStatements off nothing is kept', async () => {
    const plain = createDatabase({ databaseUrl: database.url, poolMax: 1, preparedStatements: false });
    try {
      expect((await echo(plain.db, 3)).rows).toEqual([{ n: 3, twice: 6 }]);
      expect(await preparedOn(plain.db)).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});
