import { scoreBreakdown, successEnvelope } from '@vouch/schemas';
import {
  createAgentWithBudget,
  createTestApp,
  get,
  post,
  randomAddress,
  recordTx,
  type TestContext,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// On the bundled OFAC list (the ETH list).
const LISTED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ start: '2026-06-01T00:00:00Z' });
});
afterAll(() => t.close());

describe('POST /api/scores/compute', () => {
  it('computes the worked example: 894, grade A', async () => {
    const res = await post(t.app, '/api/scores/compute', {
      successRate: 0.98,
      totalVolume: (100n * 10n ** 18n).toString(),
      transactionCount: 500,
      budgetCompliance: 1,
      accountAge: 365,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({
      score: 894,
      grade: 'A',
      color: '#22C55E',
      factors: {
        successRate: { value: 0.98, weight: 0.3, contribution: 294 },
        volume: { value: 100, weight: 0.25, contribution: 250 },
        count: { value: 500, weight: 0.2, contribution: 100 },
        budgetCompliance: { value: 1, weight: 0.15, contribution: 150 },
        accountAge: { value: 365, weight: 0.1, contribution: 100 },
      },
    });
  });

  it('rounds as the documented formula does: 399.5 is 400 (yellow), a contribution of 37.5 is 38', async () => {
    const res = await post(t.app, '/api/scores/compute', {
      successRate: 1,
      totalVolume: '0',
      transactionCount: 10,
      budgetCompliance: 0.25,
      accountAge: 219,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({
      score: 400,
      grade: 'CC',
      color: '#FACC15',
      factors: { budgetCompliance: { contribution: 38 }, accountAge: { contribution: 60 } },
    });
  });

  it('rejects out-of-range input', async () => {
    const good = { successRate: 0.5, totalVolume: '0', transactionCount: 0, budgetCompliance: 1, accountAge: 0 };
    for (const bad of [
      { ...good, successRate: 1.01 },
      { ...good, budgetCompliance: -0.1 },
      { ...good, transactionCount: 1.5 },
      { ...good, transactionCount: -1 },
      { ...good, accountAge: -1 },
      { ...good, totalVolume: 5 },
      { ...good, totalVolume: '-5' },
      { ...good, successRate: 'high' },
      { successRate: 0.5 },
    ]) {
      expect((await post(t.app, '/api/scores/compute', bad)).statusCode, JSON.stringify(bad)).toBe(400);
    }
  });
});

describe('GET /api/scores/:address', () => {
  it('breaks the model down over the agent’s recorded transactions, spends and age', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const ether = 10n ** 18n;
    for (let i = 0; i < 9; i++) await recordTx(t.app, agent, { amount: (ether * 10n).toString() }); // 90 ether
    await recordTx(t.app, agent, { amount: (ether * 9n).toString(), success: false }); // 99 ether in all
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '60' }); // accepted
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '60' }); // refused
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '10' }); // accepted
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '10' }); // accepted
    t.clock.advance(73 * 86_400_000 + 3_600_000); // 73 days and an hour later

    const res = await get(t.app, `/api/scores/${agent}`);
    expect(res.statusCode).toBe(200);
    const data = successEnvelope(scoreBreakdown).parse(res.json()).data;
    expect(data.factors.successRate).toEqual({ value: 0.9, weight: 0.3, contribution: 270 });
    expect(data.factors.volume).toEqual({ value: 99, weight: 0.25, contribution: 250 });
    expect(data.factors.count).toEqual({ value: 10, weight: 0.2, contribution: 2 });
    expect(data.factors.accountAge).toEqual({ value: 73, weight: 0.1, contribution: 20 });
    // The spends are now 73 days old: outside the 30-day compliance window.
    expect(data.factors.budgetCompliance).toEqual({ value: 1, weight: 0.15, contribution: 150 });
    expect(data.score).toBe(270 + 250 + 2 + 150 + 20);
    expect(data.currentScore).toBe(0);
  });

  it('counts refused spends of the last 30 days against budgetCompliance', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '1000' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '10' });
    const data = (await get(t.app, `/api/scores/${agent}`)).json().data;
    expect(data.factors.budgetCompliance).toEqual({ value: 0.25, weight: 0.15, contribution: 38 });
    // Nothing known yet besides spends: no volume, no transactions, age 0 → 0.
    expect(data.score).toBe(0);
  });

  it('counts in budgetCompliance only the spends judged against the budget, not those the sanctions screen refused', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '1000' });
    const reason = async (body: Record<string, unknown>) =>
      (await post(t.app, `/api/budgets/${agent}/spend`, body)).json().error?.details?.reason ?? null;
    expect(await reason({ amount: '10' })).toBeNull();
    expect(await reason({ amount: '10' })).toBe('DAILY_LIMIT');
    // Neither says whether the amount was within the budget: the screen refused it before any limit was looked at.
    expect(await reason({ amount: '1', counterparty: LISTED })).toBe('COUNTERPARTY_SANCTIONED');
    expect(await withoutSanctionsList(t.database.db, () => reason({ amount: '1' }))).toBe('SANCTIONS_LIST_UNAVAILABLE');
    const data = (await get(t.app, `/api/scores/${agent}`)).json().data;
    expect(data.factors.budgetCompliance).toEqual({ value: 0.5, weight: 0.15, contribution: 75 });
  });

  it('404s for an unknown agent', async () => {
    expect((await get(t.app, `/api/scores/${randomAddress()}`)).statusCode).toBe(404);
  });
});
