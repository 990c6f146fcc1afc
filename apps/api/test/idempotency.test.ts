import { DomainError, ForbiddenError, ServiceUnavailableError } from '@vouch/core';
import { sql } from '@vouch/db';
import {
  bearer,
  createAgent,
  createAgentWithBudget,
  createKey,
  createOrganizationKey,
  createTestApp,
  get,
  post,
  type Receiver,
  randomAddress,
  startReceiver,
  type TestContext,
} from '@vouch/testkit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotent } from '../src/idempotency.ts';

let t: TestContext;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  t = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' } });
});
afterAll(async () => {
  await t.close();
  await receiver.close();
});

/** Sends `body` to `url` under `key`, then again: both answer alike, the second replayed. Returns the first answer's data. */
async function sentTwice(url: string, key: string, body: unknown, status: number) {
  const send = () => post(t.app, url, body, { 'idempotency-key': key });
  const answered = await send();
  expect(answered.statusCode, answered.body).toBe(status);
  const replayed = await send();
  expect([replayed.statusCode, replayed.headers['idempotency-replayed']], replayed.body).toEqual([status, 'true']);
  expect(replayed.json()).toEqual(answered.json());
  return answered.json().data;
}

/** How many audit entries of `action` name this webhook. */
async function audited(action: string, webhookId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM audit_log WHERE action = ${action} AND entry::jsonb->'details'->>'webhookId' = ${webhookId}`.execute(
    t.database.db,
  );
  return rows[0]?.n ?? -1;
}

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
    // A 403 is about the API key that sent the request, and the organization's keys share
    // Idempotency-Keys: another of its keys sending the same one must run, not be replayed it.
    await expect(
      run('probe-forbidden', () => {
        throw new ForbiddenError('not this key');
      }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN' });
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
    const agent = randomAddress();
    await sentTwice('/api/agents/register', `register-${agent}`, { address: agent }, 201);
    const reused = await send('/api/agents/register', `register-${agent}`, { address: randomAddress() });
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');

    const set = await sentTwice(`/api/agents/${agent}/score`, `score-${agent}`, { score: 500, reason: '0x01' }, 200);
    expect(set).toMatchObject({ previousScore: 0, score: 500 });
    const history = (await get(t.app, `/api/agents/${agent}/score-history`)).json().data.events;
    expect(history.map((e: { score: number }) => e.score)).toEqual([500]);

    await sentTwice(`/api/budgets/${agent}/set`, `budget-${agent}`, { dailyLimit: '10', monthlyLimit: '20' }, 200);
    const entries = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target', '=', agent)
      .where('action', '=', 'budget.set')
      .execute();
    expect(entries).toHaveLength(1);
  });
});

describe('the settings’ writes under an Idempotency-Key', () => {
  it('create a webhook, rotate its secret, send a test, retry a delivery and ask a replay once each', async () => {
    const url = `${receiver.url}/idempotent-${randomAddress()}`;
    const body = { url, eventTypes: ['grade.changed'] };
    const created = await sentTwice('/api/webhooks', `webhook-${url}`, body, 201);
    expect(created.secret).toMatch(/^whsec_/);
    const listed = (await get(t.app, '/api/webhooks')).json().data.webhooks as Array<{ url: string }>;
    expect(listed.filter((w) => w.url === url)).toHaveLength(1);
    const reused = await post(
      t.app,
      '/api/webhooks',
      { ...body, description: 'another' },
      { 'idempotency-key': `webhook-${url}` },
    );
    expect([reused.statusCode, reused.json().error.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);

    const base = `/api/webhooks/${created.id}`;
    const rotated = await sentTwice(`${base}/rotate-secret`, `rotate-${url}`, {}, 200);
    expect(rotated.secret).not.toBe(created.secret);
    // Rotated once: the next rotation keeps two earlier secrets signing, not three.
    const next = await post(t.app, `${base}/rotate-secret`, {});
    expect(next.json().data.previousSecrets, next.body).toHaveLength(2);
    expect(await audited('webhook.secret_rotated', created.id)).toBe(2);

    const tested = await sentTwice(`${base}/test`, `test-${url}`, {}, 202);
    await receiver.waitFor(1, 5000, (r) => url.endsWith(r.path));
    const deliveries = (await get(t.app, `${base}/deliveries`)).json().data.deliveries as Array<{ id: string }>;
    expect(deliveries.map((d) => d.id)).toEqual([tested.deliveryId]);

    const retried = await sentTwice(`${base}/deliveries/${tested.deliveryId}/retry`, `retry-${url}`, {}, 202);
    expect(retried.id).toBe(tested.deliveryId);
    expect(await audited('webhook.delivery_retried', created.id)).toBe(1);

    await sentTwice(`${base}/replay`, `replay-${url}`, { since: 0 }, 202);
    expect(await audited('webhook.replayed', created.id)).toBe(1);
  });

  it('approve or deny a review once: the retry replays the first answer, another request is told it is decided', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10000', monthlyLimit: '10000' });
    const rules = [
      { name: 'big', action: 'review', when: { amountAbove: '200' } },
      { name: 'rest', action: 'allow' },
    ];
    expect(
      (await t.app.inject({ method: 'PUT', url: `/api/agents/${agent}/policy`, payload: { rules } })).statusCode,
    ).toBe(200);
    const review = async () => {
      const res = await post(t.app, '/api/decisions', { agent, amount: '500', hold: true });
      expect(res.json().data.decision, res.body).toBe('review');
      return res.json().data.approvalId as string;
    };
    for (const verb of ['approve', 'deny'] as const) {
      const id = await review();
      const url = `/api/approvals/${id}/${verb}`;
      const first = await sentTwice(url, `${verb}-${id}`, { note: 'once' }, 200);
      expect(first.status).toBe(verb === 'approve' ? 'approved' : 'denied');
      const again = await post(t.app, url, { note: 'once' });
      expect([again.statusCode, again.json().error.code]).toEqual([409, 'APPROVAL_NOT_PENDING']);
      const entries = await t.database.db
        .selectFrom('audit_log')
        .select('action')
        .where('action', '=', verb === 'approve' ? 'approval.approved' : 'approval.denied')
        .where(sql<boolean>`entry::jsonb->'details'->>'approvalId' = ${id}`)
        .execute();
      expect(entries).toHaveLength(1);
    }
    // The denied review's hold was released once: only the approved one's 500 is held.
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('500');
  });

  it('change an owner once: a retry after a later change replays and does not undo it', async () => {
    const agent = await createAgent(t.app, { owner: randomAddress() });
    const [second, third] = [randomAddress(), randomAddress()];
    const url = `/api/agents/${agent}/owner`;
    const first = await sentTwice(url, `owner-${agent}`, { owner: second }, 200);
    expect(first.owner).toBe(second);
    expect((await post(t.app, url, { owner: third })).statusCode).toBe(200);
    const retried = await post(t.app, url, { owner: second }, { 'idempotency-key': `owner-${agent}` });
    expect([retried.headers['idempotency-replayed'], retried.json().data.owner]).toEqual(['true', second]);
    expect((await get(t.app, `/api/agents/${agent}`)).json().data.owner).toBe(third);
  });

  it('tell the key that asked for a review it cannot decide it without storing that for the approver', async () => {
    const ADMIN = 'idempotency-admin-secret-0123456789';
    const app = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
    try {
      const owner = await createOrganizationKey(app.app, ADMIN, 'idem-reviews');
      const requester = await createKey(app.app, owner, { name: 'requester', scopes: ['spend', 'approve'] });
      const approver = await createKey(app.app, owner, { name: 'approver', scopes: ['approve'] });
      const agent = randomAddress();
      await post(app.app, '/api/agents/register', { address: agent }, bearer(owner));
      await post(app.app, `/api/budgets/${agent}/set`, { dailyLimit: '1000', monthlyLimit: '1000' }, bearer(owner));
      await app.app.inject({
        method: 'PUT',
        url: `/api/agents/${agent}/policy`,
        payload: { rules: [{ name: 'all', action: 'review' }] },
        headers: bearer(owner),
      });
      const id = (await post(app.app, '/api/decisions', { agent, amount: '10' }, bearer(requester))).json().data
        .approvalId;
      // The organization's keys share Idempotency-Keys: the approval screen sends the same key
      // whichever API key it holds. The requester's 403 is about that API key, not the request.
      const headers = (key: string) => ({ ...bearer(key), 'idempotency-key': `approve-${id}` });
      const refused = await post(app.app, `/api/approvals/${id}/approve`, {}, headers(requester));
      expect([refused.statusCode, refused.headers['idempotency-replayed']]).toEqual([403, undefined]);
      const approved = await post(app.app, `/api/approvals/${id}/approve`, {}, headers(approver));
      expect([approved.statusCode, approved.headers['idempotency-replayed']], approved.body).toEqual([200, undefined]);
      expect(approved.json().data).toMatchObject({ status: 'approved', decidedByKeyId: approver.split('_')[1] });
      // A retry by the approver replays its answer; the requester is still told no.
      const replayed = await post(app.app, `/api/approvals/${id}/approve`, {}, headers(approver));
      expect([replayed.statusCode, replayed.headers['idempotency-replayed']]).toEqual([200, 'true']);
      expect((await post(app.app, `/api/approvals/${id}/approve`, {}, headers(requester))).statusCode).toBe(403);
    } finally {
      await app.close();
    }
  });
});
