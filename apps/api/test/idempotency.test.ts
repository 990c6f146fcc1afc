import { DomainError, ServiceUnavailableError } from '@vouch/core';
import { sql } from '@vouch/db';
import { createAgentWithBudget, createTestApp, get, post, randomAddress, type TestContext } from '@vouch/testkit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotent } from '../src/idempotency.ts';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** What `idempotent` reads of a request under `key`, acting anonymously in the default organization. */
const requestWith = (key: string) =>
  ({
    headers: { 'idempotency-key': key },
    method: 'POST',
    routeOptions: { url: '/api/probe' },
    params: {},
    body: { key },
    principal: null,
    id: `req-${key}`,
  }) as unknown as FastifyRequest;
const reply = {
  code() {
    return this;
  },
  header() {
    return this;
  },
} as unknown as FastifyReply;

describe('the work under an Idempotency-Key', () => {
  it('runs its after-commit effects once its transaction committed, a stored refusal’s too, never when nothing was', async () => {
    const ran: string[] = [];
    const run = (key: string, outcome: () => unknown) =>
      idempotent(t.services, requestWith(key), reply, async (_trx, afterCommit) => {
        afterCommit?.(() => ran.push(key));
        return outcome();
      });
    await run('probe-ok', () => ({ done: true }));
    await expect(
      run('probe-refused', () => {
        throw new DomainError('BUDGET_EXCEEDED', 'refused');
      }),
    ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    // A dependency away: the key's transaction rolls back and stores nothing, so nothing it
    // queued may follow a commit that did not happen.
    await expect(
      run('probe-unavailable', () => {
        throw new ServiceUnavailableError('away');
      }),
    ).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(ran).toEqual(['probe-ok', 'probe-refused']);
    const { rows } = await sql<{ key: string }>`
      SELECT key FROM idempotency_keys WHERE key LIKE 'probe-%' ORDER BY key`.execute(t.database.db);
    expect(rows.map((r) => r.key)).toEqual(['probe-ok', 'probe-refused']);
    // A replay runs no work, and so no effect.
    await expect(run('probe-refused', () => ({}))).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(await run('probe-ok', () => ({ done: false }))).toMatchObject({ data: { done: true } });
    expect(ran).toEqual(['probe-ok', 'probe-refused']);
  });
});

describe('a write without fields under an Idempotency-Key', () => {
  it('is one request with no body, a null one or `{}`: the retry replays whichever the first sent', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '100' });
    const hold = async () => (await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '10' })).json().data;
    const send = (url: string, key: string, payload?: unknown) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { 'idempotency-key': key, ...(payload !== undefined && { 'content-type': 'application/json' }) },
        ...(payload !== undefined && { payload: JSON.stringify(payload) }),
      });
    const voided = `/api/budgets/${agent}/authorizations/${(await hold()).authorizationId}/void`;
    const captured = `/api/budgets/${agent}/authorizations/${(await hold()).authorizationId}/capture`;
    for (const [url, key, first, retry] of [
      [voided, 'bodiless-void', undefined, {}],
      [captured, 'bodiless-capture', {}, null],
    ] as const) {
      const answered = await send(url, key, first);
      expect(answered.statusCode, answered.body).toBe(200);
      const replayed = await send(url, key, retry);
      expect([replayed.statusCode, replayed.headers['idempotency-replayed']], replayed.body).toEqual([200, 'true']);
      expect(replayed.json()).toEqual(answered.json());
    }
    const spendId: string = (await send(captured, 'bodiless-capture', {})).json().data.spendId;
    const refund = `/api/budgets/${agent}/spends/${spendId}/refund`;
    expect((await send(refund, 'bodiless-refund')).statusCode).toBe(201);
    const again = await send(refund, 'bodiless-refund', {});
    expect([again.statusCode, again.headers['idempotency-replayed']], again.body).toEqual([201, 'true']);
  });
});

describe('the contract’s other writes under an Idempotency-Key', () => {
  it('replay a registration, a score and a budget set sent again, and do them once', async () => {
    const send = (url: string, key: string, body: unknown) => post(t.app, url, body, { 'idempotency-key': key });
    const replays = async (url: string, key: string, body: unknown, status: number) => {
      const answered = await send(url, key, body);
      expect(answered.statusCode, answered.body).toBe(status);
      const replayed = await send(url, key, body);
      expect([replayed.statusCode, replayed.headers['idempotency-replayed']], replayed.body).toEqual([status, 'true']);
      expect(replayed.json()).toEqual(answered.json());
      return answered.json().data;
    };
    const agent = randomAddress();
    await replays('/api/agents/register', `register-${agent}`, { address: agent }, 201);
    const reused = await send('/api/agents/register', `register-${agent}`, { address: randomAddress() });
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');

    const set = await replays(`/api/agents/${agent}/score`, `score-${agent}`, { score: 500, reason: '0x01' }, 200);
    expect(set).toMatchObject({ previousScore: 0, score: 500 });
    const history = (await get(t.app, `/api/agents/${agent}/score-history`)).json().data.events;
    expect(history.map((e: { score: number }) => e.score)).toEqual([500]);

    await replays(`/api/budgets/${agent}/set`, `budget-${agent}`, { dailyLimit: '10', monthlyLimit: '20' }, 200);
    const entries = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target', '=', agent)
      .where('action', '=', 'budget.set')
      .execute();
    expect(entries).toHaveLength(1);
  });
});
