import { readFile } from 'node:fs/promises';
import { budgetCheck, failureEnvelope, successEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createTestApp,
  post,
  randomAddress,
  spendLedger,
  type TestContext,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// On the bundled OFAC list (the ETH list).
const LISTED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const limits = { dailyLimit: '1000', monthlyLimit: '10000' };

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ cache: true });
});
afterAll(() => t.close());

const ledger = (agent: string) => spendLedger(t.database.db, agent);

const checkReason = async (agent: string, body: Record<string, unknown> = {}) => {
  const check = successEnvelope(budgetCheck).parse(
    (await post(t.app, `/api/budgets/${agent}/check`, { amount: '1', ...body })).json(),
  ).data;
  return check.allowed ? null : check.reason;
};

/** The 422 BUDGET_EXCEEDED reason of a spend (`/spend`) or a hold (`/authorizations`); null when it passed. */
async function refusal(agent: string, path: 'spend' | 'authorizations', body: Record<string, unknown> = {}) {
  const response = await post(t.app, `/api/budgets/${agent}/${path}`, { amount: '1', ...body });
  if (response.statusCode < 300) return null;
  const failure = failureEnvelope.parse(response.json());
  expect([response.statusCode, failure.error.code]).toEqual([422, 'BUDGET_EXCEEDED']);
  return (failure.error.details as { reason: string }).reason;
}

async function expectRefused(agent: string, reason = 'SANCTIONED') {
  expect(await checkReason(agent)).toBe(reason);
  expect(await refusal(agent, 'spend')).toBe(reason);
}

// A listed address may be registered and given a budget (screening a stranger is the point),
// but nothing it — or an agent whose owner is listed — asks to spend is allowed.
describe('spends and checks of a sanctioned agent', () => {
  it('are refused with SANCTIONED for a listed agent, and the refused spend is in the ledger', async () => {
    expect((await post(t.app, '/api/agents/register', { address: LISTED })).statusCode).toBe(201);
    expect((await post(t.app, `/api/budgets/${LISTED}/set`, limits)).statusCode).toBe(200);
    await expectRefused(LISTED);
    expect(await ledger(LISTED)).toEqual([{ amount: '1', accepted: false, reason: 'SANCTIONED' }]);
    const budget = (await t.app.inject({ method: 'GET', url: `/api/budgets/${LISTED}` })).json().data;
    expect([budget.dailySpent, budget.monthlySpent]).toEqual(['0', '0']);
  });

  it('are refused for an agent whose owner is listed', async () => {
    const agent = await createAgent(t.app, { owner: LISTED });
    expect((await post(t.app, `/api/budgets/${agent}/set`, limits)).statusCode).toBe(200);
    await expectRefused(agent);
  });

  it('are refused from the moment the owner becomes a listed address, and allowed again after', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    // Cached as allowed first.
    expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '1' })).json().data.allowed).toBe(true);
    expect((await post(t.app, `/api/agents/${agent}/owner`, { owner: LISTED })).statusCode).toBe(200);
    await expectRefused(agent);
    const clean = `0x${'12'.repeat(20)}`;
    expect((await post(t.app, `/api/agents/${agent}/owner`, { owner: clean })).statusCode).toBe(200);
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' })).statusCode).toBe(200);
  });

  it('are refused once a list import names the agent, on every replica through the notification', async () => {
    const agent = '0x1111111111111111111111111111111111111111'; // named by the small fixture list
    expect((await post(t.app, '/api/agents/register', { address: agent })).statusCode).toBe(201);
    expect((await post(t.app, `/api/budgets/${agent}/set`, limits)).statusCode).toBe(200);
    // Cached as allowed.
    expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '1' })).json().data.allowed).toBe(true);
    const xml = await readFile(new URL('../../../test/fixtures/sdn_advanced_small.xml', import.meta.url), 'utf8');
    await t.services.sanctions.importXml(xml, '2026-11-03', { force: true });
    await expect
      .poll(async () => (await post(t.app, `/api/budgets/${agent}/check`, { amount: '1' })).json().data.reason)
      .toBe('SANCTIONED');
    await expectRefused(agent);
  });

  it('a check, spend or hold naming a listed counterparty is refused with COUNTERPARTY_SANCTIONED', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    // The agent itself passes; the check screens a counterparty it names as the spend would.
    expect(await checkReason(agent)).toBeNull();
    expect(await checkReason(agent, { counterparty: LISTED })).toBe('COUNTERPARTY_SANCTIONED');
    expect(await checkReason(agent, { counterparty: randomAddress() })).toBeNull();
    expect(await refusal(agent, 'spend', { counterparty: LISTED })).toBe('COUNTERPARTY_SANCTIONED');
    expect(await refusal(agent, 'authorizations', { counterparty: LISTED })).toBe('COUNTERPARTY_SANCTIONED');
    expect(await refusal(agent, 'spend', { counterparty: randomAddress() })).toBeNull();
    expect(await ledger(agent)).toEqual([
      { amount: '1', accepted: false, reason: 'COUNTERPARTY_SANCTIONED' },
      { amount: '1', accepted: false, reason: 'COUNTERPARTY_SANCTIONED' },
      { amount: '1', accepted: true, reason: null },
    ]);
    const budget = (await t.app.inject({ method: 'GET', url: `/api/budgets/${agent}` })).json().data;
    expect([budget.dailySpent, budget.dailyHeld]).toEqual(['1', '0']);
  });

  it('fail closed while no sanctions list is active: checks, spends and holds refuse, and pass again after', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    // Cached as allowed first: deactivating the list drops it on every replica through the notification.
    expect(await checkReason(agent)).toBeNull();
    await withoutSanctionsList(t.database.db, async () => {
      await expect.poll(() => checkReason(agent)).toBe('SANCTIONS_LIST_UNAVAILABLE');
      await expectRefused(agent, 'SANCTIONS_LIST_UNAVAILABLE');
      expect(await refusal(agent, 'authorizations')).toBe('SANCTIONS_LIST_UNAVAILABLE');
    });
    await expect.poll(() => checkReason(agent)).toBeNull();
    expect(await refusal(agent, 'spend')).toBeNull();
    expect(await ledger(agent)).toEqual([
      { amount: '1', accepted: false, reason: 'SANCTIONS_LIST_UNAVAILABLE' },
      { amount: '1', accepted: false, reason: 'SANCTIONS_LIST_UNAVAILABLE' },
      { amount: '1', accepted: true, reason: null },
    ]);
  });
});
