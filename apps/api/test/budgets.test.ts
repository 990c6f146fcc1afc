import { systemActor } from '@vouch/core';
import { budget as budgetSchema, successEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createTestApp,
  get,
  holdTransaction,
  post,
  randomAddress,
  recordTx,
  spendLedger,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  // Its races queue 50 requests on the pool at once: on a busy machine the last wait longer than
  // the product's 1 s for a connection (a 503), and what they check is the race's outcome.
  t = await createTestApp({ start: '2026-03-15T12:00:00Z', connectionTimeoutMs: 30_000 });
});
afterAll(() => t.close());

const MAX = (2n ** 256n - 1n).toString();

const ledger = (agent: string) => spendLedger(t.database.db, agent);

describe('POST /api/budgets/:address/set and GET', () => {
  it('first set needs daily and monthly limits; perTxLimit defaults to dailyLimit', async () => {
    const address = await createAgent(t.app);
    const partial = await post(t.app, `/api/budgets/${address}/set`, { dailyLimit: '100' });
    expect(partial.statusCode).toBe(400);
    expect(partial.json().error.details).toEqual([{ path: 'body.monthlyLimit', message: expect.any(String) }]);
    expect((await get(t.app, `/api/budgets/${address}`)).statusCode).toBe(404);

    const res = await post(t.app, `/api/budgets/${address}/set`, { dailyLimit: '100', monthlyLimit: '1000' });
    expect(res.statusCode).toBe(200);
    const budget = successEnvelope(budgetSchema).parse(res.json()).data;
    expect(budget).toMatchObject({
      dailyLimit: '100',
      monthlyLimit: '1000',
      perTxLimit: '100',
      dailySpent: '0',
      monthlySpent: '0',
    });
    expect(budget.dailyResetsAt).toBe(Date.parse('2026-03-16T00:00:00Z') / 1000);
    expect(budget.monthlyResetsAt).toBe(Date.parse('2026-04-01T00:00:00Z') / 1000);
  });

  it('later sets change a subset and keep what has been spent', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    expect((await post(t.app, `/api/budgets/${address}/spend`, { amount: '40' })).statusCode).toBe(200);
    const res = await post(t.app, `/api/budgets/${address}/set`, { perTxLimit: '50' });
    expect(res.json().data).toMatchObject({
      dailyLimit: '100',
      perTxLimit: '50',
      dailySpent: '40',
      dailyRemaining: '60',
    });
  });

  it('accepts limits up to 2^256-1 and refuses anything beyond, negative or fractional', async () => {
    const address = await createAgent(t.app);
    expect((await post(t.app, `/api/budgets/${address}/set`, { dailyLimit: MAX, monthlyLimit: MAX })).statusCode).toBe(
      200,
    );
    for (const bad of [(2n ** 256n).toString(), '-1', '1.5', '1e3', '', ' 1', '007', 10]) {
      const res = await post(t.app, `/api/budgets/${address}/set`, { dailyLimit: bad });
      expect(res.statusCode, String(bad)).toBe(400);
    }
    expect((await get(t.app, `/api/budgets/${address}`)).json().data.dailyLimit).toBe(MAX);
  });

  it('needs a registered agent', async () => {
    expect(
      (await post(t.app, `/api/budgets/${randomAddress()}/set`, { dailyLimit: '1', monthlyLimit: '1' })).statusCode,
    ).toBe(404);
    const observed = randomAddress();
    await recordTx(t.app, observed);
    const res = await post(t.app, `/api/budgets/${observed}/set`, { dailyLimit: '1', monthlyLimit: '1' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('AGENT_NOT_REGISTERED');
  });
});

describe('POST /api/budgets/:address/check', () => {
  it('answers NO_BUDGET for a known agent without a budget and 404 for an unknown one', async () => {
    const address = await createAgent(t.app);
    const res = await post(t.app, `/api/budgets/${address}/check`, { amount: '1' });
    expect(res.json().data).toMatchObject({ allowed: false, reason: 'NO_BUDGET', dailyRemaining: '0' });
    expect((await post(t.app, `/api/budgets/${randomAddress()}/check`, { amount: '1' })).statusCode).toBe(404);
  });

  it('names the first limit that fails and changes nothing', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '150', perTxLimit: '80' });
    const check = async (amount: string) =>
      (await post(t.app, `/api/budgets/${address}/check`, { amount })).json().data;
    expect(await check('80')).toMatchObject({
      allowed: true,
      reason: null,
      dailyRemaining: '100',
      monthlyRemaining: '150',
    });
    expect(await check('81')).toMatchObject({ allowed: false, reason: 'PER_TX_LIMIT' });
    await post(t.app, `/api/budgets/${address}/spend`, { amount: '80' });
    expect(await check('21')).toMatchObject({ allowed: false, reason: 'DAILY_LIMIT', dailyRemaining: '20' });
    expect(await check('20')).toMatchObject({ allowed: true });
    expect(await ledger(address)).toHaveLength(1);
  });

  it('refuses zero and malformed amounts', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '150' });
    for (const amount of ['0', '-5', 'abc', `${MAX}0`]) {
      expect((await post(t.app, `/api/budgets/${address}/check`, { amount })).statusCode, amount).toBe(400);
    }
  });
});

describe('POST /api/budgets/:address/spend', () => {
  it('debits when every limit holds and keeps refused attempts in the ledger without debiting', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000', perTxLimit: '60' });
    const ok = await post(t.app, `/api/budgets/${address}/spend`, { amount: '60' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().data).toMatchObject({
      allowed: true,
      dailySpent: '60',
      dailyRemaining: '40',
      monthlyRemaining: '940',
    });

    const perTx = await post(t.app, `/api/budgets/${address}/spend`, { amount: '61' });
    expect(perTx.statusCode).toBe(422);
    expect(perTx.json().error).toMatchObject({ code: 'BUDGET_EXCEEDED', details: { reason: 'PER_TX_LIMIT' } });
    const daily = await post(t.app, `/api/budgets/${address}/spend`, { amount: '41' });
    expect(daily.json().error.details).toMatchObject({ reason: 'DAILY_LIMIT', dailyRemaining: '40' });

    expect(await ledger(address)).toEqual([
      { amount: '60', accepted: true, reason: null },
      { amount: '61', accepted: false, reason: 'PER_TX_LIMIT' },
      { amount: '41', accepted: false, reason: 'DAILY_LIMIT' },
    ]);
    expect((await get(t.app, `/api/budgets/${address}`)).json().data.dailySpent).toBe('60');
  });

  it('answers 422 BUDGET_NOT_SET without a budget, 404 for an unknown agent', async () => {
    const address = await createAgent(t.app);
    const res = await post(t.app, `/api/budgets/${address}/spend`, { amount: '1' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('BUDGET_NOT_SET');
    expect((await post(t.app, `/api/budgets/${randomAddress()}/spend`, { amount: '1' })).statusCode).toBe(404);
  });

  it('is exact at 2^256-1', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: MAX, monthlyLimit: MAX });
    const half = (2n ** 255n).toString();
    expect((await post(t.app, `/api/budgets/${address}/spend`, { amount: half })).statusCode).toBe(200);
    const rest = (2n ** 255n - 1n).toString();
    const second = await post(t.app, `/api/budgets/${address}/spend`, { amount: rest });
    expect(second.json().data).toMatchObject({ dailySpent: MAX, dailyRemaining: '0' });
    expect((await post(t.app, `/api/budgets/${address}/spend`, { amount: '1' })).statusCode).toBe(422);
  });

  it('rolls the daily window at 00:00 UTC and the monthly window on the 1st', async () => {
    const ctx = await createTestApp({ start: '2026-01-31T23:59:59.000Z' });
    try {
      const address = await createAgentWithBudget(ctx.app, { dailyLimit: '10', monthlyLimit: '15' });
      expect((await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '10' })).statusCode).toBe(200);
      expect((await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '1' })).json().error.details.reason).toBe(
        'DAILY_LIMIT',
      );
      ctx.clock.set('2026-02-01T00:00:00.000Z'); // new day and new month
      const budget = (await get(ctx.app, `/api/budgets/${address}`)).json().data;
      expect(budget).toMatchObject({ dailySpent: '0', monthlySpent: '0' });
      expect((await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '10' })).statusCode).toBe(200);
      ctx.clock.set('2026-02-02T08:00:00.000Z'); // new day, same month
      const monthly = await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '6' });
      expect(monthly.json().error.details).toMatchObject({
        reason: 'MONTHLY_LIMIT',
        dailyRemaining: '10',
        monthlyRemaining: '5',
      });
      expect((await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '5' })).statusCode).toBe(200);
    } finally {
      await ctx.close();
    }
  });

  it('admits exactly the limit when 50 spends race for one budget', async () => {
    const address = await createAgentWithBudget(t.app, {
      dailyLimit: '2000',
      monthlyLimit: '100000',
      perTxLimit: '100',
    });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => post(t.app, `/api/budgets/${address}/spend`, { amount: '100' })),
    );
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 422)).toHaveLength(30);
    const rows = await ledger(address);
    expect(rows.filter((r) => r.accepted)).toHaveLength(20);
    expect(rows).toHaveLength(50);
    expect((await get(t.app, `/api/budgets/${address}`)).json().data.dailySpent).toBe('2000');
  });
});

// The embedded database has one connection: nothing can wait there beside an open transaction.
describe.runIf(inject('testDbMode') === 'postgres')('a spend that waits past the statement timeout', () => {
  it('answers 503 with Retry-After, changes nothing, and the next spend goes through', async () => {
    const ctx = await createTestApp({ statementTimeoutMs: 300 });
    try {
      const address = await createAgentWithBudget(ctx.app, { dailyLimit: '1000', monthlyLimit: '1000' });
      // A spend whose transaction stays open holds the budget's row.
      const holder = await holdTransaction(ctx.database.db, (trx) =>
        ctx.services.budgets.spend(systemActor(), address, { amount: '10' }, trx),
      );
      try {
        const waited = await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '10' });
        expect(waited.statusCode).toBe(503);
        expect(waited.headers['retry-after']).toBe('1');
        expect(waited.json().error.code).toBe('SERVICE_UNAVAILABLE');
      } finally {
        await holder.release();
      }
      expect((await post(ctx.app, `/api/budgets/${address}/spend`, { amount: '10' })).statusCode).toBe(200);
      expect((await spendLedger(ctx.database.db, address)).filter((r) => r.accepted)).toHaveLength(2);
    } finally {
      await ctx.close();
    }
  });
});

describe('Idempotency-Key on spend', () => {
  it('replays the stored answer for the same key and body, and spends once', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const headers = { 'idempotency-key': 'spend-1' };
    const first = await post(t.app, `/api/budgets/${address}/spend`, { amount: '30' }, headers);
    const second = await post(t.app, `/api/budgets/${address}/spend`, { amount: '30' }, headers);
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotency-replayed']).toBe('true');
    expect(second.json().data).toEqual(first.json().data);
    expect(await ledger(address)).toHaveLength(1);
  });

  it('replays a refusal as a refusal, and 422s a reused key with another body', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '1000' });
    const headers = { 'idempotency-key': 'spend-2' };
    const first = await post(t.app, `/api/budgets/${address}/spend`, { amount: '11' }, headers);
    const again = await post(t.app, `/api/budgets/${address}/spend`, { amount: '11' }, headers);
    expect([first.statusCode, again.statusCode]).toEqual([422, 422]);
    expect(again.json().error.code).toBe('BUDGET_EXCEEDED');
    expect(again.headers['idempotency-replayed']).toBe('true');
    const other = await post(t.app, `/api/budgets/${address}/spend`, { amount: '5' }, headers);
    expect(other.statusCode).toBe(422);
    expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await ledger(address)).toHaveLength(1);
  });

  it('concurrent duplicates spend once; the others replay or get 409', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '1000' });
    const headers = { 'idempotency-key': 'spend-concurrent' };
    const results = await Promise.all(
      Array.from({ length: 20 }, () => post(t.app, `/api/budgets/${address}/spend`, { amount: '7' }, headers)),
    );
    for (const r of results) expect([200, 409]).toContain(r.statusCode);
    expect(results.filter((r) => r.statusCode === 200 && !r.headers['idempotency-replayed'])).toHaveLength(1);
    expect(await ledger(address)).toHaveLength(1);
    expect((await get(t.app, `/api/budgets/${address}`)).json().data.dailySpent).toBe('7');
  });

  it('refuses malformed keys', async () => {
    const address = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    const res = await post(
      t.app,
      `/api/budgets/${address}/spend`,
      { amount: '1' },
      { 'idempotency-key': 'x'.repeat(300) },
    );
    expect(res.statusCode).toBe(400);
    expect(await ledger(address)).toHaveLength(0);
  });
});
