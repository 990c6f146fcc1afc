import { sql } from '@vouch/db';
import { createTestApp, randomAddress, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// PostgreSQL only: the embedded database has one connection, which readiness shares.
describe.runIf(inject('testDbMode') === 'postgres')('readiness while the pool is busy', () => {
  let t: TestContext;

  beforeAll(async () => {
    // One pooled connection, which a slow statement holds; a request waits 300 ms for it.
    t = await createTestApp({ poolMax: 1, connectionTimeoutMs: 300 });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('is ready while every pooled connection is taken: PostgreSQL answers, on a connection of its own', async () => {
    const pool = t.database.pool;
    if (!pool) throw new Error('a PostgreSQL pool was expected');
    const taken = await pool.connect();
    try {
      // The pool is busy: a request that needs it is refused after its wait (503)…
      const budget = await t.app.inject({ method: 'GET', url: `/api/budgets/${randomAddress()}` });
      expect(budget.statusCode, budget.body).toBe(503);
      // …while the database itself answers: the instance stays in its load balancer.
      const ready = await t.app.inject({ method: 'GET', url: '/ready' });
      expect(ready.statusCode, ready.body).toBe(200);
      expect(ready.json().data.checks.database).toBe('ok');
    } finally {
      taken.release();
    }
  });

  it('opens another connection when the server ends its own', async () => {
    const readyBackends = async () =>
      (
        await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE '%-ready'`.execute(t.database.db)
      ).rows.map((r) => r.pid);
    expect((await t.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    const [before] = await readyBackends();
    expect(before).toBeTypeOf('number');
    await sql`SELECT pg_terminate_backend(${before}::int)`.execute(t.database.db);
    // The probe that finds it gone may say so; the next ones connect again.
    await expect.poll(async () => (await t.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    const after = await readyBackends();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before);
  });
});
