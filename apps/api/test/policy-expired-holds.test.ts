import { createAgentWithBudget, createTestApp, post, randomAddress, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ start: '2026-06-10T10:00:00Z' });
});
afterAll(() => t.close());

const limits = { dailyLimit: '100000', monthlyLimit: '1000000' };
async function decide(body: Record<string, unknown>) {
  const res = await post(t.app, '/api/decisions', body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
}

// A hold past its expiresAt is expired although the sweep has not marked it yet (it can no
// longer be captured): policies that count payments or what is held no longer count it.
describe('velocity and counterpartyCap with a hold past its expiresAt (sweep not yet run)', () => {
  it('velocity: an expired hold is no payment', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const r = await t.app.inject({
      method: 'PUT',
      url: `/api/agents/${agent}/policy`,
      payload: {
        rules: [
          { name: 'busy', action: 'deny', when: { velocity: { max: 1, windowSeconds: 3600 } } },
          { name: 'rest', action: 'allow' },
        ],
      },
    });
    expect(r.statusCode).toBe(200);
    const h = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '5', expiresIn: 60 });
    expect(h.statusCode).toBe(201);
    t.clock.advance(61_000);
    // The hold can no longer be captured: it is expired.
    const cap = await post(t.app, `/api/budgets/${agent}/authorizations/${h.json().data.authorizationId}/capture`, {});
    expect(cap.json().error.details.status).toBe('expired');
    // docs/api.md: velocity counts "holds held, waiting for approval or captured (... voided and expired holds do not)".
    expect((await decide({ agent, amount: '1' })).policy.matchedRule).toBe('rest');
  });

  it('counterpartyCap: an expired hold holds nothing', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const shop = randomAddress();
    await t.app.inject({
      method: 'PUT',
      url: `/api/agents/${agent}/policy`,
      payload: {
        rules: [
          { name: 'cap', action: 'deny', when: { counterpartyCap: { amount: '100', windowSeconds: 3600 } } },
          { name: 'rest', action: 'allow' },
        ],
      },
    });
    const h = await post(t.app, `/api/budgets/${agent}/authorizations`, {
      amount: '90',
      counterparty: shop,
      expiresIn: 60,
    });
    expect(h.statusCode).toBe(201);
    t.clock.advance(61_000);
    expect((await decide({ agent, amount: '50', counterparty: shop })).policy.matchedRule).toBe('rest');
  });
});
