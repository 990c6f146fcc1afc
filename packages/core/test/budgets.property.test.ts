import { applySpend, type BudgetState, evaluateSpend, type Services, systemActor, windowsAt } from '@vouch/core';
import type { Database } from '@vouch/db';
import { MAX_UINT256 } from '@vouch/schemas';
import { createTestDatabase, createTestRuntime, randomAddress } from '@vouch/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The budget rule lives in budgets.model.ts; the spend runs it as one SQL statement. Random
// sequences of set / spend / check / time, run against the service on the database and against
// the model, must give the same decisions and figures after every step.

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

const limit = fc.oneof(
  { weight: 8, arbitrary: fc.bigInt({ min: 1n, max: 2_000n }) },
  { weight: 1, arbitrary: fc.bigInt({ min: MAX_UINT256 - 1_000n, max: MAX_UINT256 }) },
);
const amount = fc.oneof(
  { weight: 8, arbitrary: fc.bigInt({ min: 1n, max: 800n }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 1n, max: MAX_UINT256 }) },
);
const command = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record(
      { kind: fc.constant('set' as const), daily: limit, monthly: limit, perTx: limit },
      { requiredKeys: ['kind'] },
    ),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('spend' as const), amount }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('check' as const), amount }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      // Minutes to weeks, so sequences cross days, month ends and leap days.
      ms: fc.oneof(fc.integer({ min: 1, max: 120 * MINUTE_MS }), fc.integer({ min: 1, max: 40 * DAY_MS })),
    }),
  },
);
const scenario = fc.record({
  // Near month ends and year ends, leap years among them.
  start: fc.constantFrom(
    '2026-01-31T23:30:00Z',
    '2028-02-28T22:00:00Z',
    '2026-12-31T23:59:00Z',
    '2027-06-15T12:00:00Z',
  ),
  first: fc.record({ daily: limit, monthly: limit, perTx: fc.option(limit, { nil: undefined }) }),
  commands: fc.array(command, { minLength: 1, maxLength: 30 }),
});

let database: Database;
let services: Services;
const clock = { now: new Date() };
const actor = systemActor();

beforeAll(async () => {
  database = await createTestDatabase();
  ({ services } = await createTestRuntime(database, { clock: () => clock.now, loadSanctions: false }));
});
afterAll(() => database?.close());

/** What the service answers for a spend, accepted or refused, in the model's terms. */
async function spendOnDatabase(agent: string, value: bigint) {
  try {
    const r = await services.budgets.spend(actor, agent, value.toString());
    return { allowed: true, reason: null, daily: r.dailySpent, monthly: r.monthlySpent };
  } catch (error) {
    const details = (error as { code?: string; details?: Record<string, string> }).details;
    if ((error as { code?: string }).code !== 'BUDGET_EXCEEDED' || !details) throw error;
    return { allowed: false, reason: details.reason, daily: details.dailySpent, monthly: details.monthlySpent };
  }
}

describe('the budget rule: SQL and model agree', () => {
  it('on random sequences of set, spend, check and time', async () => {
    let steps = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async ({ start, first, commands }) => {
        clock.now = new Date(start);
        const agent = randomAddress();
        await services.agents.register(actor, { address: agent });
        await services.budgets.set(actor, agent, {
          dailyLimit: first.daily.toString(),
          monthlyLimit: first.monthly.toString(),
          ...(first.perTx !== undefined && { perTxLimit: first.perTx.toString() }),
        });
        const windows = windowsAt(clock.now);
        let model: BudgetState = {
          sanctioned: false,
          dailyLimit: first.daily,
          monthlyLimit: first.monthly,
          perTxLimit: first.perTx ?? first.daily,
          dailySpent: 0n,
          monthlySpent: 0n,
          dayStart: new Date(windows.day),
          monthStart: new Date(windows.month),
        };
        for (const c of commands) {
          steps++;
          if (c.kind === 'advance') {
            clock.now = new Date(clock.now.getTime() + c.ms);
          } else if (c.kind === 'set') {
            await services.budgets.set(actor, agent, {
              ...(c.daily !== undefined && { dailyLimit: c.daily.toString() }),
              ...(c.monthly !== undefined && { monthlyLimit: c.monthly.toString() }),
              ...(c.perTx !== undefined && { perTxLimit: c.perTx.toString() }),
            });
            model = {
              ...model,
              dailyLimit: c.daily ?? model.dailyLimit,
              monthlyLimit: c.monthly ?? model.monthlyLimit,
              perTxLimit: c.perTx ?? model.perTxLimit,
            };
          } else if (c.kind === 'spend') {
            const { evaluation, next } = applySpend(model, c.amount, clock.now);
            expect(await spendOnDatabase(agent, c.amount)).toEqual({
              allowed: evaluation.allowed,
              reason: evaluation.reason,
              daily: next.dailySpent.toString(),
              monthly: next.monthlySpent.toString(),
            });
            model = next;
          } else {
            const evaluation = evaluateSpend(model, c.amount, clock.now);
            const check = await services.budgets.check(actor, agent, c.amount.toString());
            expect([check.allowed, check.reason, check.dailyRemaining, check.monthlyRemaining]).toEqual([
              evaluation.allowed,
              evaluation.reason,
              evaluation.dailyRemaining.toString(),
              evaluation.monthlyRemaining.toString(),
            ]);
          }
          // After every step the stored budget reads as the model says.
          const now = evaluateSpend(model, 0n, clock.now);
          const budget = await services.budgets.get(actor, agent);
          expect([budget.dailySpent, budget.monthlySpent, budget.dailyRemaining, budget.monthlyRemaining]).toEqual([
            now.dailySpent.toString(),
            now.monthlySpent.toString(),
            now.dailyRemaining.toString(),
            now.monthlyRemaining.toString(),
          ]);
        }
      }),
      { numRuns: 60 },
    );
    expect(steps).toBeGreaterThan(300);
  });
});
