import { decision, successEnvelope } from '@vouch/schemas';
import { createAgentWithBudget, createTestApp, get, post, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ start: '2026-06-10T10:00:00Z' });
});
afterAll(() => t.close());

const limits = { dailyLimit: '1000', monthlyLimit: '10000', perTxLimit: '800' };

async function decideOk(body: Record<string, unknown>) {
  const res = await post(t.app, '/api/decisions', body);
  expect(res.statusCode, res.body).toBe(200);
  return successEnvelope(decision).parse(res.json()).data;
}
const storedAnswer = async (id: string) => (await get(t.app, `/api/decisions/${id}`)).json().data;

describe('a stored decision with a hold', () => {
  it('is answered again as it was, after its hold was captured', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const d = await decideOk({ agent, amount: '300', hold: true });
    expect(d.authorization?.status).toBe('held');
    expect(await storedAnswer(d.decisionId)).toEqual(d);
    t.clock.advance(5_000);
    const captured = await post(
      t.app,
      `/api/budgets/${agent}/authorizations/${d.authorization?.authorizationId}/capture`,
      {},
    );
    expect(captured.statusCode, captured.body).toBe(200);
    expect(await storedAnswer(d.decisionId)).toEqual(d);
  });

  it('is answered again as it was, a review whose reserved hold was approved since', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const put = await t.app.inject({
      method: 'PUT',
      url: `/api/agents/${agent}/policy`,
      payload: { rules: [{ name: 'all', action: 'review' }] },
    });
    expect(put.statusCode).toBe(200);
    const review = await decideOk({ agent, amount: '200', hold: true });
    expect([review.decision, review.authorization?.status]).toEqual(['review', 'pending_approval']);
    expect((await post(t.app, `/api/approvals/${review.approvalId}/approve`, {})).statusCode).toBe(200);
    expect(await storedAnswer(review.decisionId)).toEqual(review);
  });
});
