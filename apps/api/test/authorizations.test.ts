import { systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import {
  authorization,
  authorizationResult,
  authorizationState,
  budget,
  captureResult,
  failureEnvelope,
  refundResult,
  spendList,
  successEnvelope,
  transactionList,
} from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createTestApp,
  get,
  holdTransaction,
  listOnActiveSnapshot,
  lockWaiters,
  post,
  randomAddress,
  recordTx,
  type TestContext,
  until,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  // Its races queue 40–120 requests on the pool at once: on a busy machine the last wait longer
  // than the product's 1 s for a connection (a 503), and what they check is the race's outcome.
  t = await createTestApp({ start: '2026-03-10T12:00:00Z', connectionTimeoutMs: 30_000 });
});
afterAll(() => t.close());

const limits = { dailyLimit: '1000', monthlyLimit: '5000', perTxLimit: '600' };

async function hold(agent: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return post(t.app, `/api/budgets/${agent}/authorizations`, body, headers);
}
async function held(agent: string, body: Record<string, unknown>) {
  const res = await hold(agent, body);
  expect(res.statusCode, res.body).toBe(201);
  return successEnvelope(authorizationResult).parse(res.json()).data;
}
async function readBudget(agent: string, asset?: string) {
  const res = await get(t.app, `/api/budgets/${agent}${asset ? `?asset=${encodeURIComponent(asset)}` : ''}`);
  expect(res.statusCode, res.body).toBe(200);
  return successEnvelope(budget).parse(res.json()).data;
}
const code = (res: { json(): unknown }) => failureEnvelope.parse(res.json()).error.code;

describe('holds', () => {
  it('keep the decision they are made for, a time-ordered id', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const decisionId = '01a21f18-c889-7b9e-b44b-459f36b17ea8';
    const made = await t.services.authorizations.authorize(systemActor(), agent, { amount: '5', decisionId });
    const res = await get(t.app, `/api/budgets/${agent}/authorizations/${made.authorizationId}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ decisionId, status: 'held', amount: '5' });
  });

  it('reserve against every limit at once, and count as spent for every later spend and hold', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const h = await held(agent, { amount: '600', counterparty: `0x${'c'.repeat(40)}`, metadata: { order: 'o-1' } });
    expect(h).toMatchObject({
      status: 'held',
      amount: '600',
      captured: '0',
      counterparty: `0x${'c'.repeat(40)}`,
      metadata: { order: 'o-1' },
      dailyRemaining: '400',
      monthlyRemaining: '4400',
      expiresAt: Math.floor(t.clock.now.getTime() / 1000) + 3600,
    });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', dailyHeld: '600', dailyRemaining: '400' });
    // 600 held + 401 would pass the daily limit.
    const over = await post(t.app, `/api/budgets/${agent}/spend`, { amount: '401' });
    expect(over.json().error.details.reason).toBe('DAILY_LIMIT');
    const refused = await hold(agent, { amount: '401' });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error).toMatchObject({ code: 'BUDGET_EXCEEDED', details: { reason: 'DAILY_LIMIT' } });
    // Refused like a spend, its details say the same (what is spent as well as what is left), and what was refused.
    const spendFields = Object.keys(over.json().error.details).filter((k) => k !== 'spendId');
    expect(refused.json().error.details).toMatchObject({ dailySpent: '0', monthlySpent: '0' });
    expect(Object.keys(refused.json().error.details)).toEqual(expect.arrayContaining(spendFields));
    expect(refused.json().error.message).toBe('hold refused: DAILY_LIMIT');
    expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '400' })).json().data.allowed).toBe(true);
    // A refused hold is in the ledger as a refused attempt.
    const ledger = successEnvelope(spendList).parse((await get(t.app, `/api/budgets/${agent}/spends`)).json()).data;
    expect(ledger.spends.map((s) => [s.kind, s.accepted, s.reason])).toEqual([
      ['authorization', false, 'DAILY_LIMIT'],
      ['spend', false, 'DAILY_LIMIT'],
    ]);
  });

  it('capture in part: the capture is spent, the rest released, once', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const h = await held(agent, { amount: '500' });
    const url = `/api/budgets/${agent}/authorizations/${h.authorizationId}`;
    const captured = await post(t.app, `${url}/capture`, { amount: '300' });
    expect(captured.statusCode, captured.body).toBe(200);
    const result = successEnvelope(captureResult).parse(captured.json()).data;
    expect(result.authorization).toMatchObject({ status: 'captured', amount: '500', captured: '300' });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '300', dailyHeld: '0', dailyRemaining: '700' });
    // Once only: again, or a void after it, is refused and changes nothing.
    for (const again of [await post(t.app, `${url}/capture`, {}), await post(t.app, `${url}/void`, {})]) {
      expect(again.statusCode).toBe(409);
      expect(again.json().error).toMatchObject({ code: 'AUTHORIZATION_NOT_HELD', details: { status: 'captured' } });
    }
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '300', dailyHeld: '0' });
    const ledger = (await get(t.app, `/api/budgets/${agent}/spends?status=accepted`)).json().data.spends;
    expect(ledger).toEqual([
      expect.objectContaining({
        spendId: result.spendId,
        kind: 'capture',
        amount: '300',
        authorizationId: h.authorizationId,
      }),
    ]);
  });

  it('capture of the whole hold by default; more than is held is refused and the hold stays', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const h = await held(agent, { amount: '250' });
    const url = `/api/budgets/${agent}/authorizations/${h.authorizationId}`;
    const tooMuch = await post(t.app, `${url}/capture`, { amount: '251' });
    expect(tooMuch.statusCode).toBe(422);
    expect(code(tooMuch)).toBe('CAPTURE_EXCEEDS_HOLD');
    expect((await get(t.app, url)).json().data.status).toBe('held');
    // No body at all: the whole hold.
    const all = await t.app.inject({ method: 'POST', url: `${url}/capture` });
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json().data.authorization.captured).toBe('250');
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '250', dailyHeld: '0' });
  });

  it('void releases everything; unknown holds are 404', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const h = await held(agent, { amount: '100' });
    const voided = await post(t.app, `/api/budgets/${agent}/authorizations/${h.authorizationId}/void`, {});
    expect(successEnvelope(authorization).parse(voided.json()).data).toMatchObject({ status: 'voided', captured: '0' });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', dailyHeld: '0', dailyRemaining: '1000' });
    expect(code(await post(t.app, `/api/budgets/${agent}/authorizations/99999999/void`, {}))).toBe(
      'AUTHORIZATION_NOT_FOUND',
    );
    expect((await get(t.app, `/api/budgets/${agent}/authorizations/abc`)).statusCode).toBe(400);
  });

  it('void leaves a hold waiting for its approval alone (409): only the approval’s denial releases it', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const policy = { rules: [{ name: 'all', action: 'review' }] };
    await t.app.inject({ method: 'PUT', url: `/api/agents/${agent}/policy`, payload: policy });
    const review = (await post(t.app, '/api/decisions', { agent, amount: '100', hold: true })).json().data;
    const url = `/api/budgets/${agent}/authorizations/${review.authorization.authorizationId}`;
    const voided = await post(t.app, `${url}/void`, {});
    expect(voided.statusCode).toBe(409);
    expect(failureEnvelope.parse(voided.json()).error).toMatchObject({
      code: 'AUTHORIZATION_NOT_HELD',
      details: { status: 'pending_approval' },
    });
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '100' });
    expect((await post(t.app, `/api/approvals/${review.approvalId}/deny`, {})).statusCode).toBe(200);
    expect((await get(t.app, url)).json().data.status).toBe('voided');
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '0' });
  });

  it('capture refuses a hold whose counterparty or agent was listed since it was made (422), or with no list', async () => {
    const list = (address: string) => listOnActiveSnapshot(t.database.db, address);
    const agent = await createAgentWithBudget(t.app, limits);
    const shop = randomAddress();
    const mine = await held(agent, { amount: '100' });
    const theirs = await held(agent, { amount: '50', counterparty: shop });
    const state = async (id: string) => {
      const res = await get(t.app, `/api/budgets/${agent}/authorizations/${id}`);
      return successEnvelope(authorizationState).parse(res.json()).data;
    };
    expect(await state(theirs.authorizationId)).toMatchObject({ status: 'held', screening: null });
    await list(shop);
    // The hold read alone says what a capture would now meet.
    expect(await state(theirs.authorizationId)).toMatchObject({ status: 'held', screening: 'COUNTERPARTY_SANCTIONED' });
    expect(await state(mine.authorizationId)).toMatchObject({ screening: null });
    const toShop = await post(t.app, `/api/budgets/${agent}/authorizations/${theirs.authorizationId}/capture`, {});
    expect([toShop.statusCode, toShop.json().error]).toEqual([
      422,
      expect.objectContaining({
        code: 'BUDGET_EXCEEDED',
        message: 'capture refused: COUNTERPARTY_SANCTIONED',
        details: expect.objectContaining({ reason: 'COUNTERPARTY_SANCTIONED' }),
      }),
    ]);
    // No active list: nobody can be screened, so no capture passes.
    const unscreened = await withoutSanctionsList(t.database.db, () =>
      post(t.app, `/api/budgets/${agent}/authorizations/${mine.authorizationId}/capture`, {}),
    );
    expect([unscreened.statusCode, unscreened.json().error?.details?.reason]).toEqual([
      422,
      'SANCTIONS_LIST_UNAVAILABLE',
    ]);
    await list(agent);
    const own = await post(t.app, `/api/budgets/${agent}/authorizations/${mine.authorizationId}/capture`, {});
    expect([own.statusCode, own.json().error?.details?.reason]).toEqual([422, 'SANCTIONED']);
    // Nothing was spent; the holds stay until voided or expired.
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', dailyHeld: '150' });
    expect((await get(t.app, `/api/budgets/${agent}/authorizations/${mine.authorizationId}`)).json().data.status).toBe(
      'held',
    );
    expect(
      (await post(t.app, `/api/budgets/${agent}/authorizations/${mine.authorizationId}/void`, {})).statusCode,
    ).toBe(200);
    // A hold no longer held says so before any screen: the screen refuses money that could move.
    const again = await withoutSanctionsList(t.database.db, () =>
      post(t.app, `/api/budgets/${agent}/authorizations/${mine.authorizationId}/capture`, {}),
    );
    expect([again.statusCode, code(again), again.json().error.details.status]).toEqual([
      409,
      'AUTHORIZATION_NOT_HELD',
      'voided',
    ]);
  });

  it('a settled capture records a payment that has already moved, saying what the screen now finds', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const shop = randomAddress();
    const h = await held(agent, { amount: '300', counterparty: shop });
    const h2 = await held(agent, { amount: '100' });
    await listOnActiveSnapshot(t.database.db, shop);
    const url = `/api/budgets/${agent}/authorizations/${h.authorizationId}/capture`;
    const res = await post(t.app, url, { amount: '250', settled: true });
    expect(res.statusCode, res.body).toBe(200);
    const captured = successEnvelope(captureResult).parse(res.json()).data;
    expect(captured).toMatchObject({
      authorization: { status: 'captured', captured: '250' },
      screening: 'COUNTERPARTY_SANCTIONED',
    });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '250', dailyHeld: '100' });
    // The audit trail keeps what the capture was recorded despite, and its event tells subscribers.
    const kept = await sql<{ audit: unknown; events: unknown }>`SELECT
      (SELECT json_agg(entry::jsonb -> 'details') FROM audit_log
        WHERE action = 'authorization.captured' AND target = ${agent}) AS audit,
      (SELECT json_agg(data) FROM events WHERE type = 'authorization.captured' AND agent = ${agent}) AS events`.execute(
      t.database.db,
    );
    const said = expect.objectContaining({ authorizationId: h.authorizationId, screening: 'COUNTERPARTY_SANCTIONED' });
    expect(kept.rows[0]).toEqual({ audit: [said], events: [said] });
    // With no list, too; and a settled capture that passes the screen answers null.
    const unscreened = await withoutSanctionsList(t.database.db, () =>
      post(t.app, `/api/budgets/${agent}/authorizations/${h2.authorizationId}/capture`, { settled: true }),
    );
    expect(unscreened.json().data.screening).toBe('SANCTIONS_LIST_UNAVAILABLE');
    const clean = await held(agent, { amount: '10' });
    const passes = await post(t.app, `/api/budgets/${agent}/authorizations/${clean.authorizationId}/capture`, {
      settled: true,
    });
    expect(passes.json().data).toMatchObject({ screening: null, authorization: { status: 'captured' } });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '360', dailyHeld: '0' });
    // Settled or not, a capture takes no more than the hold.
    const big = await held(agent, { amount: '10' });
    const over = await post(t.app, `/api/budgets/${agent}/authorizations/${big.authorizationId}/capture`, {
      amount: '11',
      settled: true,
    });
    expect([over.statusCode, code(over)]).toEqual([422, 'CAPTURE_EXCEEDS_HOLD']);
  });

  it('expire: past its time a hold can no longer be captured, and the sweep gives back what it held', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const h = await held(agent, { amount: '400', expiresIn: 60 });
    t.clock.advance(61_000);
    const late = await post(t.app, `/api/budgets/${agent}/authorizations/${h.authorizationId}/capture`, {});
    expect(late.statusCode).toBe(409);
    expect(late.json().error.details.status).toBe('expired');
    // Read before the sweep, it is what its capture was told: expired (not given back yet: releasedAt null).
    expect(late.json().error.details.authorization).toMatchObject({ status: 'expired', releasedAt: null });
    const url = `/api/budgets/${agent}/authorizations`;
    expect((await get(t.app, `${url}/${h.authorizationId}`)).json().data).toMatchObject({
      status: 'expired',
      releasedAt: null,
    });
    const listed = async (status: string) =>
      (await get(t.app, `${url}?status=${status}`))
        .json()
        .data.authorizations.map((a: { authorizationId: string }) => a.authorizationId);
    expect(await listed('held')).not.toContain(h.authorizationId);
    expect(await listed('expired')).toContain(h.authorizationId);
    // Until the sweep, what it held still counts (failing closed).
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '400' });
    const expired = await t.services.authorizations.expireDue();
    expect(expired.map((e) => String(e.id))).toContain(h.authorizationId);
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '0', dailyRemaining: '1000' });
    expect((await get(t.app, `/api/budgets/${agent}/authorizations/${h.authorizationId}`)).json().data).toMatchObject({
      status: 'expired',
      captured: '0',
    });
    // Once: a second sweep finds nothing of it.
    expect((await t.services.authorizations.expireDue()).map((e) => String(e.id))).not.toContain(h.authorizationId);
  });

  it('expires at the second it answers, made at any fraction of a second: past it, not capturable', async () => {
    t.clock.set('2026-03-10T12:30:00.600Z');
    try {
      const agent = await createAgentWithBudget(t.app, limits);
      const made = t.clock.now.getTime();
      const h = await held(agent, { amount: '100', expiresIn: 60 });
      const url = `/api/budgets/${agent}/authorizations/${h.authorizationId}`;
      t.clock.set(new Date(h.expiresAt * 1000 - 1));
      expect((await get(t.app, url)).json().data.status).toBe('held');
      t.clock.set(new Date(h.expiresAt * 1000 + 200));
      const late = await post(t.app, `${url}/capture`, {});
      expect([late.statusCode, late.json().error?.details?.status]).toEqual([409, 'expired']);
      expect((await t.services.authorizations.expireDue()).map((e) => String(e.id))).toContain(h.authorizationId);
      expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', dailyHeld: '0' });
      // It lasted at least the seconds asked for.
      expect(h.expiresAt * 1000).toBeGreaterThanOrEqual(made + 60_000);
    } finally {
      t.clock.set('2026-03-10T12:00:00Z');
    }
  });

  it('a hold of yesterday captured today is spent in yesterday’s day and this month', async () => {
    t.clock.set('2026-03-11T23:59:00Z');
    const agent = await createAgentWithBudget(t.app, limits);
    const h = await held(agent, { amount: '500', expiresIn: 7200 });
    t.clock.set('2026-03-12T00:30:00Z');
    // Today's window is free of yesterday's hold; the month still counts it.
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '0', monthlyHeld: '500', dailyRemaining: '1000' });
    await post(t.app, `/api/budgets/${agent}/authorizations/${h.authorizationId}/capture`, {});
    expect(await readBudget(agent)).toMatchObject({
      dailySpent: '0',
      dailyHeld: '0',
      monthlySpent: '500',
      monthlyHeld: '0',
    });
    t.clock.set('2026-03-12T12:00:00Z');
  });

  it('is idempotent on its own key: a retry replays, another body is refused', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const first = await hold(agent, { amount: '10' }, { 'idempotency-key': 'hold-1' });
    const again = await hold(agent, { amount: '10' }, { 'idempotency-key': 'hold-1' });
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.json().data.authorizationId).toBe(first.json().data.authorizationId);
    expect(code(await hold(agent, { amount: '11' }, { 'idempotency-key': 'hold-1' }))).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '10' });
    const url = `/api/budgets/${agent}/authorizations/${first.json().data.authorizationId}/capture`;
    const c1 = await post(t.app, url, { amount: '4' }, { 'idempotency-key': 'cap-1' });
    const c2 = await post(t.app, url, { amount: '4' }, { 'idempotency-key': 'cap-1' });
    expect([c1.statusCode, c2.statusCode, c2.headers['idempotency-replayed']]).toEqual([200, 200, 'true']);
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '4', dailyHeld: '0' });
  });

  it('refuses bad input with 400 and stores nothing', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    for (const body of [
      {},
      { amount: '0' },
      { amount: '-1' },
      { amount: '5', expiresIn: 0 },
      { amount: '5', expiresIn: 30 * 86_400 + 1 },
      { amount: '5', asset: 'USDC' },
      { amount: '5', counterparty: 'bob' },
      { amount: '5', extra: true },
    ]) {
      const res = await hold(agent, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await get(t.app, `/api/budgets/${agent}/authorizations`)).json().data.authorizations).toEqual([]);
    expect((await get(t.app, `/api/budgets/${agent}/spends`)).json().data.spends).toEqual([]);
  });
});

describe('refunds', () => {
  it('give back to the windows the spend counted in, and never more than was spent', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const spent = (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '500' })).json().data;
    const url = `/api/budgets/${agent}/spends/${spent.spendId}/refund`;
    const part = await post(t.app, url, { amount: '200', reason: 'partial return' });
    expect(part.statusCode, part.body).toBe(201);
    expect(successEnvelope(refundResult).parse(part.json()).data).toMatchObject({
      amount: '200',
      refunded: '200',
      restoredDaily: '200',
      restoredMonthly: '200',
    });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '300', monthlySpent: '300' });
    const tooMuch = await post(t.app, url, { amount: '301' });
    expect(tooMuch.statusCode).toBe(422);
    expect(tooMuch.json().error).toMatchObject({ code: 'REFUND_NOT_ALLOWED', details: { refunded: '200' } });
    // The rest, by default.
    expect((await post(t.app, url, {})).json().data).toMatchObject({ amount: '300', refunded: '500' });
    expect(code(await post(t.app, url, {}))).toBe('REFUND_NOT_ALLOWED');
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', monthlySpent: '0' });
    const entry = (await get(t.app, `/api/budgets/${agent}/spends`)).json().data.spends[0];
    expect(entry).toMatchObject({ spendId: spent.spendId, refunded: '500' });
  });

  it('after the day has passed give back to the month only; a refused attempt cannot be refunded', async () => {
    t.clock.set('2026-03-14T10:00:00Z');
    const agent = await createAgentWithBudget(t.app, limits);
    const spent = (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' })).json().data;
    const refused = (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '700' })).json().error;
    expect(refused.details.reason).toBe('PER_TX_LIMIT');
    t.clock.set('2026-03-15T10:00:00Z');
    const next = (await post(t.app, `/api/budgets/${agent}/spends/${spent.spendId}/refund`, { amount: '40' })).json()
      .data;
    expect(next).toMatchObject({ restoredDaily: '0', restoredMonthly: '40' });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', monthlySpent: '60' });
    const refusedId = (await get(t.app, `/api/budgets/${agent}/spends?status=refused`)).json().data.spends[0].spendId;
    expect(code(await post(t.app, `/api/budgets/${agent}/spends/${refusedId}/refund`, {}))).toBe('REFUND_NOT_ALLOWED');
    expect(code(await post(t.app, `/api/budgets/${agent}/spends/99999999/refund`, {}))).toBe('SPEND_NOT_FOUND');
    t.clock.set('2026-03-15T12:00:00Z');
  });
});

describe('budgets per asset', () => {
  const usdc = 'eip155:8453/erc20:0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913';
  const usdcLower = usdc.toLowerCase();

  it('are kept apart from the default budget, in the asset’s own units', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const set = await post(t.app, `/api/budgets/${agent}/set`, {
      asset: usdc,
      dailyLimit: '5000000',
      monthlyLimit: '100000000',
    });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json().data).toMatchObject({ asset: usdcLower, dailyLimit: '5000000', perTxLimit: '5000000' });
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '4000000', asset: usdc })).statusCode).toBe(200);
    await held(agent, { amount: '900000', asset: usdcLower });
    expect(await readBudget(agent, usdc)).toMatchObject({ dailySpent: '4000000', dailyHeld: '900000' });
    // The default budget (wei) did not move.
    expect(await readBudget(agent)).toMatchObject({ asset: '', dailySpent: '0', dailyHeld: '0' });
    const check = await post(t.app, `/api/budgets/${agent}/check`, { amount: '100001', asset: usdc });
    expect(check.json().data).toMatchObject({ allowed: false, reason: 'DAILY_LIMIT' });
    // An asset without a budget of its own is not spent from the default one.
    const other = 'eip155:1/erc20:0xdac17f958d2ee523a2206206994597c13d831ec7';
    const none = await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1', asset: other });
    expect(none.statusCode).toBe(422);
    expect(code(none)).toBe('BUDGET_NOT_SET');
    expect((await post(t.app, `/api/budgets/${agent}/check`, { amount: '1', asset: other })).json().data.reason).toBe(
      'NO_BUDGET',
    );
    const usdcLedger = (await get(t.app, `/api/budgets/${agent}/spends?asset=${encodeURIComponent(usdc)}`)).json().data;
    expect(usdcLedger.spends.map((s: { asset: string; amount: string }) => [s.asset, s.amount])).toEqual([
      [usdcLower, '4000000'],
    ]);
  });
});

describe('ledger reads', () => {
  it('pages the spend ledger newest first, with status and time filters', async () => {
    t.clock.set('2026-03-20T08:00:00Z');
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const from = Math.floor(t.clock.now.getTime() / 1000);
    for (const amount of ['10', '20', '30', '200', '40']) {
      await post(t.app, `/api/budgets/${agent}/spend`, { amount });
      t.clock.advance(60_000);
    }
    const all = successEnvelope(spendList).parse(
      (await get(t.app, `/api/budgets/${agent}/spends?limit=2`)).json(),
    ).data;
    expect(all.spends.map((s) => s.amount)).toEqual(['40', '200']);
    const rest = (await get(t.app, `/api/budgets/${agent}/spends?limit=10&cursor=${all.nextCursor}`)).json().data;
    expect(rest.spends.map((s: { amount: string }) => s.amount)).toEqual(['30', '20', '10']);
    expect(rest.nextCursor).toBeNull();
    const refused = (await get(t.app, `/api/budgets/${agent}/spends?status=refused`)).json().data.spends;
    expect(refused.map((s: { amount: string }) => s.amount)).toEqual(['200']);
    const window = (await get(t.app, `/api/budgets/${agent}/spends?from=${from + 60}&to=${from + 180}`)).json().data;
    expect(window.spends.map((s: { amount: string }) => s.amount)).toEqual(['30', '20']);
    for (const bad of [
      'status=maybe',
      'cursor=%%%',
      'from=5&to=4',
      'limit=0',
      'asset=USDC',
      'to=10000000000000',
      // Empty or not digits: not read as 0 (an empty list) or as no bound.
      'to=',
      'from=',
      'from=1e3',
    ]) {
      expect((await get(t.app, `/api/budgets/${agent}/spends?${bad}`)).statusCode, bad).toBe(400);
    }
    expect((await get(t.app, `/api/budgets/0x${'9'.repeat(40)}/spends`)).statusCode).toBe(404);
  });

  it('pages an agent’s recorded transactions', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    for (const amount of ['1', '2', '3']) await recordTx(t.app, agent, { amount });
    const first = successEnvelope(transactionList).parse(
      (await get(t.app, `/api/transactions/${agent}?limit=2`)).json(),
    ).data;
    expect(first.transactions.map((x) => x.amount)).toEqual(['3', '2']);
    const next = (await get(t.app, `/api/transactions/${agent}?cursor=${first.nextCursor}`)).json().data;
    expect(next.transactions.map((x: { amount: string }) => x.amount)).toEqual(['1']);
    expect((await get(t.app, `/api/transactions/0x${'8'.repeat(40)}`)).statusCode).toBe(404);
  });

  it('refuses a cursor it did not give out, even one that decodes to the id of one it did', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    for (const amount of ['1', '2', '3']) {
      await recordTx(t.app, agent, { amount });
      await post(t.app, `/api/budgets/${agent}/spend`, { amount });
      await post(t.app, `/api/agents/${agent}/score`, { score: Number(amount), reason: '0x01' });
    }
    for (const url of [
      `/api/transactions/${agent}`,
      `/api/budgets/${agent}/spends`,
      `/api/agents/${agent}/score-history`,
    ]) {
      const cursor: string = (await get(t.app, `${url}?limit=1`)).json().data.nextCursor;
      expect((await get(t.app, `${url}?limit=1&cursor=${cursor}`)).statusCode, `${url} ${cursor}`).toBe(200);
      // Padded, with a character base64url has no use for, with a space: other strings, not this cursor.
      for (const other of [`${cursor}%3D%3D`, `${cursor}.`, `%20${cursor}`, `${cursor}%24`]) {
        const res = await get(t.app, `${url}?limit=1&cursor=${other}`);
        expect(res.statusCode, `${url} ${other}`).toBe(400);
        expect(res.json().error.details).toEqual([{ path: 'querystring.cursor', message: expect.any(String) }]);
      }
    }
  });
});

describe('under concurrency', () => {
  it('admits exactly the limit when holds race, releases a hold once, and never refunds more than was spent', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '100000', perTxLimit: '100' });
    const holds = await Promise.all(
      Array.from({ length: 40 }, () => post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '100' })),
    );
    expect(holds.filter((r) => r.statusCode === 201)).toHaveLength(10);
    expect(holds.filter((r) => r.statusCode === 422)).toHaveLength(30);
    expect(await readBudget(agent)).toMatchObject({ dailyHeld: '1000', dailyRemaining: '0' });

    // Capture, void and capture again of one hold at once: one wins, the budget moves once.
    const id = holds.find((r) => r.statusCode === 201)?.json().data.authorizationId;
    const url = `/api/budgets/${agent}/authorizations/${id}`;
    const race = await Promise.all([
      post(t.app, `${url}/capture`, { amount: '60' }),
      post(t.app, `${url}/void`, {}),
      post(t.app, `${url}/capture`, {}),
    ]);
    expect(race.map((r) => r.statusCode).filter((s) => s === 200)).toHaveLength(1);
    expect(race.map((r) => r.statusCode).filter((s) => s === 409)).toHaveLength(2);
    const after = await readBudget(agent);
    expect(BigInt(after.dailyHeld)).toBe(900n);
    expect(['0', '60', '100']).toContain(after.dailySpent);

    // Ten refunds of 30 of a spend of 100 at once: three fit.
    await Promise.all(
      holds
        .filter((r) => r.statusCode === 201 && r.json().data.authorizationId !== id)
        .map((r) => post(t.app, `/api/budgets/${agent}/authorizations/${r.json().data.authorizationId}/void`, {})),
    );
    const spent = (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' })).json().data;
    const refunds = await Promise.all(
      Array.from({ length: 10 }, () =>
        post(t.app, `/api/budgets/${agent}/spends/${spent.spendId}/refund`, { amount: '30' }),
      ),
    );
    expect(refunds.filter((r) => r.statusCode === 201)).toHaveLength(3);
    const entry = (await get(t.app, `/api/budgets/${agent}/spends?status=accepted&limit=1`)).json().data.spends[0];
    expect(entry).toMatchObject({ spendId: spent.spendId, refunded: '90' });
  });

  it('mixes spends, holds, captures, voids and expiries at once without a deadlock or a 5xx', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '5000', monthlyLimit: '100000', perTxLimit: '500' });
    const ids: string[] = [];
    const statuses = await Promise.all(
      Array.from({ length: 120 }, async (_, i) => {
        const kind = i % 4;
        if (kind === 0) return (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '50' })).statusCode;
        if (kind === 1) {
          const res = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '80', expiresIn: 1 });
          if (res.statusCode === 201) ids.push(res.json().data.authorizationId);
          return res.statusCode;
        }
        const id = ids[ids.length - 1];
        if (!id) return 0;
        const op = kind === 2 ? 'capture' : 'void';
        return (await post(t.app, `/api/budgets/${agent}/authorizations/${id}/${op}`, {})).statusCode;
      }).concat([t.services.authorizations.expireDue().then(() => 200)]),
    );
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    // Whatever the interleaving, the counters equal what the ledger and the open holds say.
    t.clock.advance(2000);
    await t.services.authorizations.expireDue();
    const budgetNow = await readBudget(agent);
    const ledger = (await get(t.app, `/api/budgets/${agent}/spends?status=accepted&limit=1000`)).json().data.spends;
    const spentTotal = ledger.reduce((n: bigint, s: { amount: string }) => n + BigInt(s.amount), 0n);
    expect([budgetNow.dailySpent, budgetNow.dailyHeld]).toEqual([spentTotal.toString(), '0']);
  });
});

// The embedded database has one connection: nothing can run beside an open transaction there.
describe.runIf(inject('testDbMode') === 'postgres')('expiry sweeps running at once (several workers)', () => {
  it('lock the budgets of their holds in one order, so that two never wait for each other', async () => {
    // Budgets stored in descending order of their keys: a plan that locked them as stored (or by
    // a hash of each batch's keys) would not lock them in key order, and two sweeps could each hold
    // one the other waits for.
    const prefix = randomAddress().slice(0, 40);
    const agents = ['f', 'd', 'b', '9', '7'].map((c) => `${prefix}${c}0`);
    for (const agent of agents) {
      await createAgent(t.app, { address: agent });
      expect((await post(t.app, `/api/budgets/${agent}/set`, limits)).statusCode).toBe(200);
      await held(agent, { amount: '10', expiresIn: 60 });
    }
    t.clock.advance(61_000);
    const [first, ...later] = [...agents].sort();
    // Another transaction holds the budget that comes first: the sweep waits for it before it locks any other.
    const holding = await holdTransaction(t.database.db, (trx) =>
      sql`SELECT 1 FROM budgets WHERE agent = ${first} FOR UPDATE`.execute(trx),
    );
    let sweep: Promise<unknown> | undefined;
    try {
      sweep = t.services.authorizations.expireDue();
      await until(async () => (await lockWaiters(t.database.db, '%due AS (%')) >= 1, 10_000, 20);
      for (const agent of later) {
        await sql`SELECT 1 FROM budgets WHERE agent = ${agent} FOR UPDATE NOWAIT`.execute(t.database.db);
      }
    } finally {
      await holding.release();
    }
    await sweep;
    for (const agent of agents) expect(await readBudget(agent)).toMatchObject({ dailyHeld: '0' });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('a refund of what is left racing a partial refund', () => {
  it('refunds what the other left, not what it read before', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const spent = (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' })).json().data;
    // A refund of 30 holds the spend's row; the refund of the rest reads 100 left, then waits.
    const partial = await holdTransaction(t.database.db, (trx) =>
      t.services.budgets.refund(systemActor(), agent, spent.spendId, { amount: '30' }, trx),
    );
    let rest: ReturnType<typeof post> | undefined;
    try {
      rest = post(t.app, `/api/budgets/${agent}/spends/${spent.spendId}/refund`, {});
      // The refund statement waits for the spend's row.
      await until(async () => (await lockWaiters(t.database.db, '%refund_amount%')) >= 1, 10_000, 20);
    } finally {
      await partial.release();
    }
    const res = await rest;
    expect(res?.statusCode, res?.body).toBe(201);
    expect(res?.json().data).toMatchObject({ amount: '70', refunded: '100' });
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', monthlySpent: '0' });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('a refund that another refund leaves nothing to take', () => {
  it('is refused with what is refunded now, not what it read before', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const spent = (await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' })).json().data;
    // A refund of everything holds the spend's row; a refund of 50 reads 100 left, then waits.
    const whole = await holdTransaction(t.database.db, (trx) =>
      t.services.budgets.refund(systemActor(), agent, spent.spendId, {}, trx),
    );
    let late: ReturnType<typeof post> | undefined;
    try {
      late = post(t.app, `/api/budgets/${agent}/spends/${spent.spendId}/refund`, { amount: '50' });
      await until(async () => (await lockWaiters(t.database.db, '%refund_amount%')) >= 1, 10_000, 20);
    } finally {
      await whole.release();
    }
    const res = await late;
    expect(res?.statusCode, res?.body).toBe(422);
    expect(res?.json().error).toMatchObject({
      code: 'REFUND_NOT_ALLOWED',
      message: 'refund refused: another refund took what was left',
      details: { spendId: spent.spendId, amount: '100', refunded: '100' },
    });
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('a settled capture racing a void', () => {
  it('answers that the hold was voided, not what the screen found', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const shop = randomAddress();
    const h = await held(agent, { amount: '100', counterparty: shop });
    await listOnActiveSnapshot(t.database.db, shop);
    /** Capture statements of this database waiting for a row lock. */
    const waiting = () => lockWaiters(t.database.db, '%seen AS (%');
    // The void's open transaction holds the hold's row: the capture's statement reads it held
    // (screened: COUNTERPARTY_SANCTIONED), then waits, and finds it voided once the void commits.
    const voiding = await holdTransaction(t.database.db, (trx) =>
      t.services.authorizations.void(systemActor(), agent, h.authorizationId, trx),
    );
    let capture: ReturnType<typeof post> | undefined;
    try {
      capture = post(t.app, `/api/budgets/${agent}/authorizations/${h.authorizationId}/capture`, { settled: true });
      const deadline = Date.now() + 10_000;
      while ((await waiting()) < 1) {
        if (Date.now() > deadline) throw new Error('the capture never waited for the void');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await voiding.release();
    }
    const res = await capture;
    expect([res.statusCode, code(res), res.json().error.details.status]).toEqual([
      409,
      'AUTHORIZATION_NOT_HELD',
      'voided',
    ]);
    expect(await readBudget(agent)).toMatchObject({ dailySpent: '0', dailyHeld: '0' });
  });
});
