import { cacheInvalidations } from '@vouch/core';
import { sql } from '@vouch/db';
import { createAgentWithBudget, createTestApp, get, post, randomTxHash, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

// A write answered by this process is seen by this process's next read, whatever the read
// cache holds: the write drops its own entry before it answers; the database notification
// that tells the other replicas may come later. On PostgreSQL, where the notification travels
// over a connection of its own (the embedded database has one connection for everything).
// Each race runs as many rounds as make a regression show with odds of missing it near e^-17 or
// less, from how often the read was stale before its write dropped its own entry: 57 of 10,000
// checks (3,000 rounds expect 17 stale reads), 1,401 of 10,000 score reads and 289 of 3,000
// confidences (300 rounds expect 42 and 29).
const CHECK_ROUNDS = 3_000;
const READ_ROUNDS = 300;

describe.runIf(inject('testDbMode') === 'postgres')('read your writes through the read cache', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ cache: true, poolMax: 4 });
  });
  afterAll(() => t?.close());

  it(`sees each new budget limit in the next check, ${CHECK_ROUNDS} times`, async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '1000000' });
    let stale = 0;
    for (let i = 0; i < CHECK_ROUNDS; i++) {
      const limit = i % 2 === 0 ? '100' : '1000';
      expect((await post(t.app, `/api/budgets/${agent}/set`, { dailyLimit: limit })).statusCode).toBe(200);
      const check = (await post(t.app, `/api/budgets/${agent}/check`, { amount: '500' })).json().data;
      if (check.allowed !== (limit === '1000')) stale++;
    }
    expect(stale).toBe(0);
  }, 300_000);

  it(`sees each new score in the next read, ${READ_ROUNDS} times`, async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1', monthlyLimit: '1' });
    let stale = 0;
    for (let i = 0; i < READ_ROUNDS; i++) {
      const score = i % 1000;
      expect((await post(t.app, `/api/agents/${agent}/score`, { score, reason: '0x' })).statusCode).toBe(200);
      if ((await get(t.app, `/api/agents/${agent}/score`)).json().data.score !== score) stale++;
    }
    expect(stale).toBe(0);
  }, 300_000);

  it(`sees each recorded transaction in the next score's confidence, ${READ_ROUNDS} times`, async () => {
    // Known for 30 days, so that the confidence is n / (n + 10) of its n counted transactions.
    const start = t.clock.now;
    let agent = '';
    let stale = 0;
    try {
      for (let i = 0; i < READ_ROUNDS; i++) {
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
