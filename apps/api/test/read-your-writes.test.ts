import { cacheInvalidations } from '@vouch/core';
import { sql } from '@vouch/db';
import { createAgentWithBudget, createTestApp, get, post, randomTxHash, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// A write answered by this process is seen by this process's next read, whatever the read
// cache holds: the write drops its own entry before it answers; the database notification
// that tells the other replicas may come later. On PostgreSQL, where the notification travels
// over a connection of its own (the embedded database has one connection for everything).
// Before writes dropped their own entry, 57 of 10,000 checks and 1,401 of 10,000 score reads were
// stale: 3,000 rounds expect 17 and 420 such reads, so a regression of either kind shows (a run
// without one has odds near e^-17), at under a third of the time 10,000 took.
const ROUNDS = 3_000;

describe.runIf(inject('testDbMode') === 'postgres')('read your writes through the read cache', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ cache: true, poolMax: 4 });
  });
  afterAll(() => t?.close());

  it(`sees each new budget limit in the next check, ${ROUNDS} times`, async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '1000000' });
    let stale = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const limit = i % 2 === 0 ? '100' : '1000';
      expect((await post(t.app, `/api/budgets/${agent}/set`, { dailyLimit: limit })).statusCode).toBe(200);
      const check = (await post(t.app, `/api/budgets/${agent}/check`, { amount: '500' })).json().data;
      if (check.allowed !== (limit === '1000')) stale++;
    }
    expect(stale).toBe(0);
  }, 300_000);

  it(`sees each new score in the next read, ${ROUNDS} times`, async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1', monthlyLimit: '1' });
    let stale = 0;
    for (let i = 0; i < ROUNDS; i++) {
      const score = i % 1000;
      expect((await post(t.app, `/api/agents/${agent}/score`, { score, reason: '0x' })).statusCode).toBe(200);
      if ((await get(t.app, `/api/agents/${agent}/score`)).json().data.score !== score) stale++;
    }
    expect(stale).toBe(0);
  }, 300_000);

  it(`sees each recorded transaction in the next score's confidence, ${ROUNDS} times`, async () => {
    // Known for 30 days, so that the confidence is n / (n + 10) of its n counted transactions.
    const start = t.clock.now;
    let agent = '';
    let stale = 0;
    try {
      for (let i = 0; i < ROUNDS; i++) {
        const n = (i % 20) + 1;
        if (n === 1) {
          t.clock.set(start);
          agent = await createAgentWithBudget(t.app, { dailyLimit: '1', monthlyLimit: '1' });
          t.clock.advance(30 * 86_400_000);
          // Cached with no transaction counted.
          expect((await get(t.app, `/api/agents/${agent}/score`)).json().data.confidence).toBe(0);
        }
        const recorded = await post(t.app, '/api/transactions/record', {
          agent,
          txHash: randomTxHash(),
          amount: '1',
          type: 0,
        });
        expect(recorded.statusCode).toBe(201);
        const read = (await get(t.app, `/api/agents/${agent}/score`)).json().data;
        if (read.confidence !== Math.round((n / (n + 10)) * 100) / 100) stale++;
      }
    } finally {
      t.clock.set(start);
    }
    expect(stale).toBe(0);
  }, 300_000);

  it('sees a spend in the next check', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '1000000' });
    for (let i = 0; i < 200; i++) {
      expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '5' })).json().data.allowed).toBe(true);
      expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '5' })).statusCode).toBe(200);
      const after = (await post(t.app, `/api/budgets/${agent}/check`, { amount: '5' })).json().data;
      expect(after.dailyRemaining).toBe(String(1000 - 5 * (i + 1)));
    }
  });

  it('answers from the database with Cache-Control: no-cache, even while the cache holds a stale entry', async () => {
    // The budget's own creation is announced too, and may arrive after the first check has
    // filled the cache (dropping the entry this test needs): wait for that notification first.
    const notified: string[] = [];
    const record = (message: unknown) => {
      const { space, key, source } = message as { space: string; key: string; source: string };
      if (source === 'notification') notified.push(`${space}:${key}`);
    };
    cacheInvalidations.subscribe(record);
    let agent: string;
    try {
      agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '1000000' });
      await expect.poll(() => notified.includes(`budgets:${agent}`), { timeout: 10_000 }).toBe(true);
    } finally {
      cacheInvalidations.unsubscribe(record);
    }
    expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '500' })).json().data.allowed).toBe(true);
    // A change the notifications do not announce (the trigger is off for this statement): the
    // cache keeps its entry until told; no-cache reads past it.
    await t.database.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await trx.updateTable('budgets').set({ daily_limit: '100' }).where('agent', '=', agent).execute();
    });
    expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '500' })).json().data.allowed).toBe(true);
    const fresh = await t.app.inject({
      method: 'POST',
      url: `/api/budgets/${agent}/check`,
      payload: { amount: '500' },
      headers: { 'cache-control': 'no-cache' },
    });
    expect(fresh.json().data.allowed).toBe(false);
  });
});
