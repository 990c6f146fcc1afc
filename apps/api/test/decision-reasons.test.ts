import { decision, successEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createTestApp,
  get,
  listOnActiveSnapshot,
  post,
  randomAddress,
  type TestContext,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ start: '2026-06-10T10:00:00Z' });
});
afterAll(() => t.close());

/** On the bundled OFAC list (data/sanctions). */
const SANCTIONED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const limits = { dailyLimit: '1000', monthlyLimit: '10000', perTxLimit: '800' };

async function decideOk(body: Record<string, unknown>) {
  const res = await post(t.app, '/api/decisions', body);
  expect(res.statusCode, res.body).toBe(200);
  return successEnvelope(decision).parse(res.json()).data;
}
const codes = (d: { reasons: Array<{ code: string }> }) => d.reasons.map((r) => r.code);

describe('a decision that both the sanctions and the budget refuse', () => {
  // The reference: a sanctioned counterparty and an amount over the per-transaction limit give both reasons.
  it('to a sanctioned counterparty, over the per-transaction limit, names both', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const d = await decideOk({ agent, amount: '801', counterparty: SANCTIONED });
    expect(codes(d)).toEqual(['COUNTERPARTY_SANCTIONED', 'PER_TX_LIMIT', 'NO_POLICY']);
  });

  it('by an agent whose owner is sanctioned, over the per-transaction limit, names both', async () => {
    const agent = await createAgent(t.app, { owner: SANCTIONED });
    await post(t.app, `/api/budgets/${agent}/set`, limits);
    const d = await decideOk({ agent, amount: '801' });
    expect(codes(d)).toEqual(['OWNER_SANCTIONED', 'PER_TX_LIMIT', 'NO_POLICY']);
    expect((await get(t.app, `/api/decisions/${d.decisionId}`)).json().data.reasons).toEqual(d.reasons);
  });

  it('by a sanctioned agent, over the daily limit, with a hold, names both', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '700' });
    await listOnActiveSnapshot(t.database.db, agent);
    const d = await decideOk({ agent, amount: '301', counterparty: randomAddress(), hold: true });
    expect(codes(d)).toEqual(['AGENT_SANCTIONED', 'DAILY_LIMIT', 'NO_POLICY']);
  });

  it('without a sanctions list, over the per-transaction limit, names both', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await withoutSanctionsList(t.database.db, async () => {
      const d = await decideOk({ agent, amount: '801' });
      expect(d.sanctions).toEqual({ agent: 'unavailable', counterparty: null, list: null });
      expect(codes(d)).toEqual(['SANCTIONS_LIST_UNAVAILABLE', 'PER_TX_LIMIT', 'NO_POLICY']);
    });
  });
});
