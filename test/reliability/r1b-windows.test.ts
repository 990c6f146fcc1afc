import { applySpend, type BudgetState, windowsAt } from '@vouch/core';
import { MAX_UINT256 } from '@vouch/schemas';
import { createAgentWithBudget, createTestApp, post, type TestContext } from '@vouch/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report } from './support/report.ts';

// R1b: random amounts up to 2^256−1 against per-tx, daily and monthly limits, concurrent
// batches of spends, and an injected clock that crosses at least one day and one month.
// The ledger is replayed through the budget model (budgets.model.ts, the one home of the rule):
// every decision, every answer and the budget's counters must match it exactly, and in every
// UTC day and month the accepted sum, added up here, stays within its limit.

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const RUNS = Number(process.env.R1B_RUNS ?? 25);

const dayOf = (d: Date) => windowsAt(d).day;
const monthOf = (d: Date) => windowsAt(d).month;
const clamp = (v: bigint) => (v > MAX_UINT256 ? MAX_UINT256 : v < 1n ? 1n : v);

interface Limits {
  perTx: bigint;
  daily: bigint;
  monthly: bigint;
}

// Every start is at most 6 hours before the end of a month (a year end and a leap February
// among them); every step moves the clock 1 to 10 hours, and there are at least 8 steps.
const starts = ['2026-01-31T18:00:00Z', '2026-02-28T20:30:00Z', '2026-12-31T23:00:00Z', '2028-02-29T21:15:00Z'];

const scenario = fc
  .record({
    exp: fc.integer({ min: 0, max: 252 }),
    jitter: fc.bigInt({ min: 0n, max: 2n ** 252n }),
    perTxMul: fc.bigInt({ min: 2n, max: 8n }),
    dailyMul: fc.bigInt({ min: 4n, max: 24n }),
    monthlyMul: fc.bigInt({ min: 6n, max: 40n }),
    start: fc.constantFrom(...starts),
    steps: fc.array(
      fc.record({
        advanceMs: fc.integer({ min: HOUR_MS, max: 10 * HOUR_MS }),
        // Amounts as multiples of the unit in thousandths, or the largest amount there is.
        amounts: fc.array(fc.oneof({ weight: 30, arbitrary: fc.bigInt({ min: 1n, max: 6_000n }) }, fc.constant(-1n)), {
          minLength: 1,
          maxLength: 16,
        }),
      }),
      { minLength: 8, maxLength: 14 },
    ),
  })
  .map((s) => {
    const unit = 2n ** BigInt(s.exp) + (s.jitter % 2n ** BigInt(s.exp));
    const limits: Limits = {
      perTx: clamp(unit * s.perTxMul),
      daily: clamp(unit * s.dailyMul),
      monthly: clamp(unit * s.monthlyMul),
    };
    const steps = s.steps.map((step) => ({
      advanceMs: step.advanceMs,
      amounts: step.amounts.map((m) => (m < 0n ? MAX_UINT256 : clamp((unit * m) / 1000n))),
    }));
    return { start: s.start, limits, steps };
  });

describe('R1b — exact windows under random uint256 amounts and rolling days and months', () => {
  let t: TestContext;
  const totals = { runs: 0, spends: 0, accepted: 0, perTx: 0, daily: 0, monthly: 0, dayWindows: 0, monthWindows: 0 };

  beforeAll(async () => {
    t = await createTestApp({ start: starts[0] });
  });
  afterAll(async () => {
    report('R1b', { driver: t?.database.driver, ...totals });
    await t?.close();
  });

  it('every decision matches the model, every window stays within its limit, all arithmetic exact', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ start, limits, steps }) => {
        t.clock.set(start);
        const agent = await createAgentWithBudget(t.app, {
          perTxLimit: limits.perTx.toString(),
          dailyLimit: limits.daily.toString(),
          monthlyLimit: limits.monthly.toString(),
        });
        const first = t.clock.now;
        // Answers by ledger id, to compare with the model's state after that row.
        const answers = new Map<string, { status: number; data: Record<string, string> }>();
        for (const step of steps) {
          t.clock.advance(step.advanceMs);
          const results = await Promise.all(
            step.amounts.map((amount) => post(t.app, `/api/budgets/${agent}/spend`, { amount: amount.toString() })),
          );
          for (const res of results) {
            expect([200, 422], res.body).toContain(res.statusCode);
            const body = res.json();
            if (res.statusCode === 422) expect(body.error.code).toBe('BUDGET_EXCEEDED');
            const data = res.statusCode === 200 ? body.data : body.error.details;
            answers.set(data.spendId, { status: res.statusCode, data });
          }
        }
        // The run crossed at least one day and one month.
        expect(monthOf(t.clock.now)).toBeGreaterThan(monthOf(first));

        const ledger = await t.database.db
          .selectFrom('spends')
          .select(['id', 'amount', 'accepted', 'reason', 'created_at'])
          .where('agent', '=', agent)
          .orderBy('id')
          .execute();
        expect(ledger).toHaveLength(steps.reduce((n, s) => n + s.amounts.length, 0));

        // Ledger ids follow the order in which spends took the budget's row lock: replay them.
        let state: BudgetState = {
          screening: null,
          dailyLimit: limits.daily,
          monthlyLimit: limits.monthly,
          perTxLimit: limits.perTx,
          dailySpent: 0n,
          monthlySpent: 0n,
          dailyHeld: 0n,
          monthlyHeld: 0n,
          dayStart: new Date(0),
          monthStart: new Date(0),
        };
        const perDay = new Map<number, bigint>();
        const perMonth = new Map<number, bigint>();
        for (const row of ledger) {
          const amount = BigInt(row.amount);
          const { evaluation, next } = applySpend(state, amount, row.created_at);
          const { reason } = evaluation;
          expect({ id: row.id, accepted: row.accepted, reason: row.reason }).toEqual({
            id: row.id,
            accepted: reason === null,
            reason,
          });
          state = next;
          const answer = answers.get(String(row.id));
          expect(answer, `answer for ledger row ${row.id}`).toBeDefined();
          expect(answer?.status).toBe(reason === null ? 200 : 422);
          if (reason === null) {
            expect(answer?.data.dailySpent).toBe(state.dailySpent.toString());
            expect(answer?.data.monthlySpent).toBe(state.monthlySpent.toString());
            expect(amount <= limits.perTx).toBe(true);
            const d = dayOf(row.created_at);
            const m = monthOf(row.created_at);
            perDay.set(d, (perDay.get(d) ?? 0n) + amount);
            perMonth.set(m, (perMonth.get(m) ?? 0n) + amount);
            totals.accepted++;
          } else {
            expect(answer?.data.reason).toBe(reason);
            if (reason === 'PER_TX_LIMIT') totals.perTx++;
            if (reason === 'DAILY_LIMIT') totals.daily++;
            if (reason === 'MONTHLY_LIMIT') totals.monthly++;
          }
          totals.spends++;
        }
        for (const [, sum] of perDay) expect(sum <= limits.daily).toBe(true);
        for (const [, sum] of perMonth) expect(sum <= limits.monthly).toBe(true);
        totals.dayWindows += perDay.size;
        totals.monthWindows += perMonth.size;

        // The budget's counters are the ledger's sums for the current windows.
        const row = await t.database.db.selectFrom('budgets').selectAll().where('agent', '=', agent).executeTakeFirst();
        expect(row?.daily_spent).toBe(state.dailySpent.toString());
        expect(row?.monthly_spent).toBe(state.monthlySpent.toString());
        expect(row?.day_start.getTime()).toBe(state.dayStart.getTime());
        expect(row?.month_start.getTime()).toBe(state.monthStart.getTime());
        expect(state.dailySpent).toBe(perDay.get(dayOf(t.clock.now)) ?? 0n);
        expect(state.monthlySpent).toBe(perMonth.get(monthOf(t.clock.now)) ?? 0n);

        // And the API says so, including on the next day when the daily window has passed.
        const budget = (await t.app.inject({ method: 'GET', url: `/api/budgets/${agent}` })).json().data;
        expect(budget.dailySpent).toBe(state.dailySpent.toString());
        expect(budget.monthlySpent).toBe(state.monthlySpent.toString());
        t.clock.advance(DAY_MS);
        const tomorrow = (await t.app.inject({ method: 'GET', url: `/api/budgets/${agent}` })).json().data;
        expect(tomorrow.dailySpent).toBe('0');
        totals.runs++;
      }),
      { numRuns: RUNS, ...(process.env.R1B_SEED && { seed: Number(process.env.R1B_SEED) }) },
    );
    expect(totals.accepted).toBeGreaterThan(0);
  });
});
