import { sql } from '@vouch/db';
import {
  createAgent,
  createTestApp,
  holdTransaction,
  lockWaiters,
  post,
  randomAddress,
  type TestContext,
  until,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// Two writes of one thing at once, on PostgreSQL: the test holds a lock that stops the first one
// mid-way, lets the second one reach the same point, then lets both go.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe.runIf(inject('testDbMode') === 'postgres')('two owner changes of one agent at once', () => {
  it('each audit entry names the owner it replaced', async () => {
    const first = randomAddress();
    const second = randomAddress();
    const third = randomAddress();
    const agent = await createAgent(t.app, { owner: first });

    // The default organization's audit head, held: the first change stops at its audit append,
    // after its UPDATE of the agent's row (which it then holds until it commits).
    const head = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM audit_heads WHERE organization_id = 'default' FOR UPDATE`.execute(trx),
    );
    let toSecond: ReturnType<typeof post> | undefined;
    let toThird: ReturnType<typeof post> | undefined;
    try {
      toSecond = post(t.app, `/api/agents/${agent}/owner`, { owner: second });
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      // The second change reads the agent (owner: still `first`) and waits for the row.
      toThird = post(t.app, `/api/agents/${agent}/owner`, { owner: third });
      await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await head.release();
    }
    expect((await toSecond)?.statusCode).toBe(200);
    expect((await toThird)?.statusCode).toBe(200);

    const { rows } = await sql<{ details: { from: string | null; to: string } }>`
      SELECT entry::jsonb -> 'details' AS details FROM audit_log WHERE organization_id = 'default' AND action = 'agent.owner_changed'
        AND target = ${agent} ORDER BY seq`.execute(t.database.db);
    // The owner went first → second → third; the log must say so.
    expect(rows.map((r) => r.details)).toEqual([
      { from: first, to: second },
      { from: second, to: third },
    ]);
  });
});
