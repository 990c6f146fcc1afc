import { sql } from '@vouch/db';
import {
  createAgent,
  createAgentWithBudget,
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

const put = (url: string, body: unknown) => t.app.inject({ method: 'PUT', url, payload: body as object });

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

describe.runIf(inject('testDbMode') === 'postgres')('a velocity rule put while a decision with a hold runs', () => {
  it('the first decision under the rule counts the hold of the one decided before it', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100000', monthlyLimit: '1000000' });
    // Version 1 counts nothing.
    expect((await put(`/api/agents/${agent}/policy`, { rules: [{ name: 'rest', action: 'allow' }] })).statusCode).toBe(
      200,
    );

    // The budget's row, held: D1's hold statement waits there, after it read its policy (and,
    // holding, the agent's lock).
    const budget = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM budgets WHERE agent = ${agent} FOR UPDATE`.execute(trx),
    );
    let before: ReturnType<typeof post> | undefined;
    let after: ReturnType<typeof post> | undefined;
    try {
      // D1 reads version 1 and goes on to hold.
      before = post(t.app, '/api/decisions', { agent, amount: '10', hold: true });
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      // Version 2: at most one payment an hour.
      const v2 = await put(`/api/agents/${agent}/policy`, {
        rules: [
          { name: 'busy', action: 'deny', when: { velocity: { max: 1, windowSeconds: 3600 } } },
          { name: 'rest', action: 'allow' },
        ],
      });
      expect(v2.statusCode, v2.body).toBe(200);
      // D2 comes while D1 is in flight: it must read version 2 and count D1's hold, whatever D1 read.
      after = post(t.app, '/api/decisions', { agent, amount: '10', hold: true });
      await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await budget.release();
    }
    const d1 = (await before)?.json().data;
    const d2 = (await after)?.json().data;
    expect(d1.decision).toBe('allow');
    expect(d1.policy.version).toBe(1);
    expect(d2.policy.version).toBe(2);
    // Under version 2 a payment was already made (D1's hold, committed before D2's): D2 must be denied.
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM authorizations WHERE agent = ${agent} AND status = 'held'`.execute(t.database.db);
    expect({ d2: d2.decision, d2Rule: d2.policy.matchedRule, heldHolds: rows[0]?.n }).toEqual({
      d2: 'deny',
      d2Rule: 'busy',
      heldHolds: 1,
    });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('two first sets of one budget at once', () => {
  it('the second keeps the per-transaction limit the first set, as a later set would', async () => {
    const agent = await createAgent(t.app);
    // The audit head, held: the first set stops at its audit append, its budget row inserted.
    const head = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM audit_heads WHERE organization_id = 'default' FOR UPDATE`.execute(trx),
    );
    let first: ReturnType<typeof post> | undefined;
    let second: ReturnType<typeof post> | undefined;
    try {
      first = post(t.app, `/api/budgets/${agent}/set`, { dailyLimit: '100', monthlyLimit: '1000', perTxLimit: '10' });
      await until(async () => (await lockWaiters(t.database.db)) >= 1, 10_000, 20);
      // The second finds no budget yet (the first's row is not committed) and inserts: it waits for that row.
      second = post(t.app, `/api/budgets/${agent}/set`, { dailyLimit: '200', monthlyLimit: '2000' });
      await until(async () => (await lockWaiters(t.database.db)) >= 2, 10_000, 20);
    } finally {
      await head.release();
    }
    expect((await first)?.statusCode).toBe(200);
    const res = await second;
    expect(res?.statusCode).toBe(200);
    // One after the other, the second is a later set: it changes the limits it names, and the
    // per-transaction limit of 10 stays (it defaults to the daily limit only when there is none).
    expect(res?.json().data).toMatchObject({ dailyLimit: '200', monthlyLimit: '2000', perTxLimit: '10' });
    const spend = await post(t.app, `/api/budgets/${agent}/spend`, { amount: '11' });
    expect(spend.statusCode).toBe(422);
    expect(spend.json().error.details.reason).toBe('PER_TX_LIMIT');
  });
});
