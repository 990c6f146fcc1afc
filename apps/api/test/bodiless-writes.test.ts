import { bearer, createAgent, createAgentWithBudget, createTestApp, get, post, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Writes that take no fields (deletes, a void, a test delivery, a retry) take no body or `{}`.
// A field sent anyway is refused (400), as on every other route (docs/api.md "Unknown body
// fields are refused"), and nothing is changed: an `expectedVersion` on a policy's DELETE, made
// from a stale read, must not delete the newer version it did not see.

const ADMIN = 'test-admin-secret-0123456789';

let t: TestContext;
let secured: TestContext;
beforeAll(async () => {
  t = await createTestApp({
    start: '2026-06-10T10:00:00Z',
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' },
  });
  secured = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
});
afterAll(async () => {
  await t?.close();
  await secured?.close();
});

type Method = 'DELETE' | 'POST';

/** Sends `payload` and expects the body refused (400 VALIDATION_ERROR, at `body`). */
async function refusesBody(app: TestContext['app'], method: Method, url: string, headers: Record<string, string> = {}) {
  const res = await app.inject({ method, url, payload: { expectedVersion: 1 }, headers });
  expect([res.statusCode, res.json().error?.code], res.body).toEqual([400, 'VALIDATION_ERROR']);
  expect(res.json().error.details[0].path).toBe('body');
}

const putPolicy = (url: string, name: string) =>
  t.app.inject({ method: 'PUT', url, payload: { rules: [{ name, action: 'deny' }] } });

describe('a policy DELETE with a body', () => {
  for (const [what, url] of [
    ['an agent policy', 'agent'],
    ['the default policy', '/api/policies/default'],
  ] as const) {
    it(`of ${what} is refused (400) when it carries fields, and deletes nothing`, async () => {
      const target = url === 'agent' ? `/api/agents/${await createAgent(t.app)}/policy` : url;
      expect((await putPolicy(target, 'v1')).statusCode).toBe(200);
      expect((await putPolicy(target, 'v2')).statusCode).toBe(200);
      await refusesBody(t.app, 'DELETE', target);
      const current = await get(t.app, target);
      expect([current.statusCode, current.json().data?.version, current.json().data?.rules?.[0]?.name]).toEqual([
        200,
        2,
        'v2',
      ]);
      // Without a body, or with an empty one, it deletes.
      const deleted = await t.app.inject({ method: 'DELETE', url: target, payload: {} });
      expect(deleted.statusCode, deleted.body).toBe(200);
      expect(deleted.json().data).toMatchObject({ version: 3, rules: null });
    });
  }
});

describe('other writes without fields', () => {
  it('a webhook’s DELETE, test delivery and delivery retry refuse a body and change nothing', async () => {
    const created = await post(t.app, '/api/webhooks', {
      url: 'http://127.0.0.1:9/hooks',
      eventTypes: ['spend.accepted'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const id: string = created.json().data.id;
    await refusesBody(t.app, 'POST', `/api/webhooks/${id}/test`);
    await refusesBody(t.app, 'POST', `/api/webhooks/${id}/deliveries/dlv_1/retry`);
    await refusesBody(t.app, 'DELETE', `/api/webhooks/${id}`);
    expect((await get(t.app, `/api/webhooks/${id}`)).statusCode).toBe(200);
    expect((await get(t.app, `/api/webhooks/${id}/deliveries`)).json().data).toMatchObject({ deliveries: [] });
    expect((await t.app.inject({ method: 'DELETE', url: `/api/webhooks/${id}` })).statusCode).toBe(200);
  });

  it('a hold’s void refuses a body and leaves the hold held', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '100' });
    const hold = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '10' });
    expect(hold.statusCode, hold.body).toBe(201);
    const id: string = hold.json().data.authorizationId;
    await refusesBody(t.app, 'POST', `/api/budgets/${agent}/authorizations/${id}/void`);
    expect((await get(t.app, `/api/budgets/${agent}/authorizations/${id}`)).json().data).toMatchObject({
      status: 'held',
    });
  });

  it('a key’s revocation refuses a body and leaves the key active', async () => {
    const admin = bearer(ADMIN);
    const created = await secured.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'reader', scopes: ['read'] },
      headers: admin,
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, key } = created.json().data as { id: string; key: string };
    await refusesBody(secured.app, 'DELETE', `/api/keys/${id}`, admin);
    const still = await secured.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(key) });
    expect(still.statusCode, still.body).toBe(200);
  });
});
