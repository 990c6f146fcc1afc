import { apiKey, apiKeyList, createdApiKey, failureEnvelope, successEnvelope } from '@vouch/schemas';
import { bearer, createAgentWithBudget, createTestApp, randomAddress, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ADMIN = 'test-admin-secret-0123456789';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ start: '2026-04-01T00:00:00Z', edge: { auth: { mode: 'on', adminKey: ADMIN } } });
});
afterAll(() => t.close());

async function createKey(body: Record<string, unknown>, key = ADMIN) {
  const res = await t.app.inject({ method: 'POST', url: '/api/keys', payload: body, headers: bearer(key) });
  expect(res.statusCode, res.body).toBe(201);
  return successEnvelope(createdApiKey).parse(res.json()).data;
}

describe('API keys', () => {
  it('creates a key whose secret is shown once and stored only as a hash', async () => {
    const expiresAt = Math.floor(new Date('2026-05-01T00:00:00Z').getTime() / 1000);
    // `write`, the scope before the finer ones, is granted as spend, manage and score.
    const created = await createKey({ name: 'checkout', scopes: ['write', 'read'], expiresAt });
    expect(created).toMatchObject({
      name: 'checkout',
      organizationId: 'default',
      scopes: ['read', 'spend', 'manage', 'score'],
      expiresAt,
    });
    expect(created.createdAt).toBe(Math.floor(t.clock.now.getTime() / 1000));
    expect(created.key).toMatch(new RegExp(`^vk_${created.id}_[A-Za-z0-9_-]{43}$`));

    const row = await t.database.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(created.key);

    const list = await t.app.inject({ method: 'GET', url: '/api/keys', headers: bearer(ADMIN) });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(created.key);
    const keys = successEnvelope(apiKeyList).parse(list.json()).data.keys;
    expect(keys.find((k) => k.id === created.id)).toMatchObject({ status: 'active', revokedAt: null });
  });

  it('refuses bad input: unknown scope, repeated scope, no scope, an expiry in the past', async () => {
    const now = Math.floor(t.clock.now.getTime() / 1000);
    for (const body of [
      { name: 'x', scopes: ['root'] },
      { name: 'x', scopes: ['read', 'read'] },
      { name: 'x', scopes: [] },
      { name: '', scopes: ['read'] },
      { name: 'x', scopes: ['read'], expiresAt: now - 1 },
      { name: 'x', scopes: ['read'], secret: 'mine' },
    ]) {
      const res = await t.app.inject({ method: 'POST', url: '/api/keys', payload: body, headers: bearer(ADMIN) });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(failureEnvelope.parse(res.json()).error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('revokes with DELETE (idempotent) and answers 404 for an unknown id', async () => {
    const created = await createKey({ name: 'temp', scopes: ['read'] });
    const del = await t.app.inject({ method: 'DELETE', url: `/api/keys/${created.id}`, headers: bearer(ADMIN) });
    expect(del.statusCode).toBe(200);
    const revoked = successEnvelope(apiKey).parse(del.json()).data;
    expect(revoked).toMatchObject({ id: created.id, status: 'revoked' });
    expect(revoked.revokedAt).toBe(Math.floor(t.clock.now.getTime() / 1000));
    const again = await t.app.inject({ method: 'DELETE', url: `/api/keys/${created.id}`, headers: bearer(ADMIN) });
    expect(again.statusCode).toBe(200);
    expect(successEnvelope(apiKey).parse(again.json()).data.revokedAt).toBe(revoked.revokedAt);

    const missing = await t.app.inject({ method: 'DELETE', url: '/api/keys/0000000000000000', headers: bearer(ADMIN) });
    expect(missing.statusCode).toBe(404);
    expect(failureEnvelope.parse(missing.json()).error.code).toBe('NOT_FOUND');
  });
});

describe('the auth matrix with AUTH=on', () => {
  const keys: Record<string, string> = {};
  let agent: string;

  beforeAll(async () => {
    // Keys made through the admin key; the expiring one is then outlived by moving the clock.
    const soon = Math.floor(t.clock.now.getTime() / 1000) + 60;
    keys.read = (await createKey({ name: 'reader', scopes: ['read'] })).key;
    keys.write = (await createKey({ name: 'writer', scopes: ['write'] })).key;
    keys.admin = (await createKey({ name: 'operator', scopes: ['admin'] })).key;
    keys.expired = (await createKey({ name: 'short-lived', scopes: ['admin'], expiresAt: soon })).key;
    const revoked = await createKey({ name: 'leaked', scopes: ['admin'] });
    keys.revoked = revoked.key;
    await t.app.inject({ method: 'DELETE', url: `/api/keys/${revoked.id}`, headers: bearer(ADMIN) });
    keys.wrong = `vk_0123456789abcdef_${'A'.repeat(43)}`;
    keys.garbage = 'not-a-key';
    keys.adminEnv = ADMIN;
    t.clock.advance(120_000);
    agent = await (async () => {
      const address = randomAddress();
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/agents/register',
        payload: { address },
        headers: bearer(ADMIN),
      });
      expect(res.statusCode).toBe(201);
      return address;
    })();
  });

  const requests = {
    'GET /api/agents': { method: 'GET', url: () => '/api/agents' },
    'POST /api/scores/compute': {
      method: 'POST',
      url: () => '/api/scores/compute',
      payload: () => ({
        successRate: 1,
        totalVolume: '1000',
        transactionCount: 1,
        budgetCompliance: 1,
        accountAge: 1,
      }),
    },
    'POST /api/budgets/:a/check': {
      method: 'POST',
      url: () => `/api/budgets/${agent}/check`,
      payload: () => ({ amount: '1' }),
    },
    'POST /api/agents/register': {
      method: 'POST',
      url: () => '/api/agents/register',
      payload: () => ({ address: randomAddress() }),
    },
    'GET /api/keys': { method: 'GET', url: () => '/api/keys' },
  } as const;

  // Expected status per presented key and request; the success statuses prove the request went through.
  const matrix: Record<string, Record<keyof typeof requests, number>> = {
    none: {
      'GET /api/agents': 401,
      'POST /api/scores/compute': 401,
      'POST /api/budgets/:a/check': 401,
      'POST /api/agents/register': 401,
      'GET /api/keys': 401,
    },
    garbage: {
      'GET /api/agents': 401,
      'POST /api/scores/compute': 401,
      'POST /api/budgets/:a/check': 401,
      'POST /api/agents/register': 401,
      'GET /api/keys': 401,
    },
    wrong: {
      'GET /api/agents': 401,
      'POST /api/scores/compute': 401,
      'POST /api/budgets/:a/check': 401,
      'POST /api/agents/register': 401,
      'GET /api/keys': 401,
    },
    expired: {
      'GET /api/agents': 401,
      'POST /api/scores/compute': 401,
      'POST /api/budgets/:a/check': 401,
      'POST /api/agents/register': 401,
      'GET /api/keys': 401,
    },
    revoked: {
      'GET /api/agents': 401,
      'POST /api/scores/compute': 401,
      'POST /api/budgets/:a/check': 401,
      'POST /api/agents/register': 401,
      'GET /api/keys': 401,
    },
    read: {
      'GET /api/agents': 200,
      'POST /api/scores/compute': 200,
      'POST /api/budgets/:a/check': 200,
      'POST /api/agents/register': 403,
      'GET /api/keys': 403,
    },
    write: {
      'GET /api/agents': 200,
      'POST /api/scores/compute': 200,
      'POST /api/budgets/:a/check': 200,
      'POST /api/agents/register': 201,
      'GET /api/keys': 403,
    },
    admin: {
      'GET /api/agents': 200,
      'POST /api/scores/compute': 200,
      'POST /api/budgets/:a/check': 200,
      'POST /api/agents/register': 201,
      'GET /api/keys': 200,
    },
    adminEnv: {
      'GET /api/agents': 200,
      'POST /api/scores/compute': 200,
      'POST /api/budgets/:a/check': 200,
      'POST /api/agents/register': 201,
      'GET /api/keys': 200,
    },
  };

  const messages: Record<string, RegExp> = {
    none: /API key is required/,
    garbage: /not valid/,
    wrong: /not valid/,
    expired: /expired/,
    revoked: /revoked/,
  };

  for (const [who, row] of Object.entries(matrix)) {
    for (const [name, expected] of Object.entries(row)) {
      it(`${who} key → ${name} → ${expected}`, async () => {
        const r = requests[name as keyof typeof requests];
        const res = await t.app.inject({
          method: r.method,
          url: r.url(),
          ...('payload' in r && { payload: r.payload() }),
          headers: who === 'none' ? {} : bearer(keys[who] as string),
        });
        expect(res.statusCode, res.body).toBe(expected);
        if (expected === 401) {
          const body = failureEnvelope.parse(res.json());
          expect(body.error.code).toBe('UNAUTHORIZED');
          expect(body.error.message).toMatch(messages[who] as RegExp);
          expect(res.headers['www-authenticate']).toBe('Bearer realm="vouch"');
        }
        if (expected === 403) expect(failureEnvelope.parse(res.json()).error.code).toBe('FORBIDDEN');
      });
    }
  }

  it('a valid key is recorded as used (last_used_at)', async () => {
    const list = await t.app.inject({ method: 'GET', url: '/api/keys', headers: bearer(ADMIN) });
    const reader = successEnvelope(apiKeyList)
      .parse(list.json())
      .data.keys.find((k) => k.name === 'reader');
    expect(reader?.lastUsedAt).toBeGreaterThan(0);
    const statuses = successEnvelope(apiKeyList)
      .parse(list.json())
      .data.keys.map((k) => [k.name, k.status]);
    expect(statuses).toEqual(
      expect.arrayContaining([
        ['short-lived', 'expired'],
        ['leaked', 'revoked'],
        ['reader', 'active'],
      ]),
    );
  });

  it('accepts the key as the password of HTTP Basic (for browsers)', async () => {
    const basic = Buffer.from(`anyone:${keys.read}`).toString('base64');
    const res = await t.app.inject({ method: 'GET', url: '/api/agents', headers: { authorization: `Basic ${basic}` } });
    expect(res.statusCode).toBe(200);
  });

  it('reads the key after the scheme and any spaces, and refuses more than a key as not valid', async () => {
    const read = (authorization: string) =>
      t.app.inject({ method: 'GET', url: '/api/agents', headers: { authorization } });
    // `credentials = auth-scheme 1*SP token68` (RFC 9110 §11.4): two spaces are still a key sent.
    expect((await read(`Bearer  ${keys.read}`)).statusCode).toBe(200);
    // A key with something after it is not the key.
    const extra = await read(`Bearer ${keys.read} ${keys.admin}`);
    expect([extra.statusCode, extra.json().error.message]).toEqual([401, 'the API key is not valid']);
  });

  it('leaves probes, metrics and the API description open', async () => {
    for (const url of ['/health', '/ready', '/metrics', '/openapi.json', '/docs']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
    }
  });

  it('leaves a feedback file open: without a key or with an unknown one, its answer is the file’s, never a 401', async () => {
    const url = `/api/agents/${randomAddress()}/erc8004/feedback/fb_${'0'.repeat(24)}`;
    for (const headers of [{}, bearer('vk_0123456789abcdef_unknown')]) {
      const res = await t.app.inject({ method: 'GET', url, headers });
      expect(res.statusCode, res.body).toBe(404);
      expect(failureEnvelope.parse(res.json()).error.code).toBe('NOT_FOUND');
    }
  });

  it('scopes Idempotency-Key to the organization: its keys share it, another organization’s do not collide', async () => {
    const address = await createAgentWithBudgetAs(keys.admin as string);
    const spend = (key: string, amount: string) =>
      t.app.inject({
        method: 'POST',
        url: `/api/budgets/${address}/spend`,
        payload: { amount },
        headers: { ...bearer(key), 'idempotency-key': 'order-1' },
      });
    const first = await spend(keys.write as string, '10');
    expect(first.statusCode).toBe(200);
    // Another key of the same organization retrying with the same Idempotency-Key is replayed.
    const sameOrganization = await spend(keys.admin as string, '10');
    expect(sameOrganization.headers['idempotency-replayed']).toBe('true');
    expect(sameOrganization.json().data.dailySpent).toBe('10');

    // Another organization, same Idempotency-Key, different body: its own request on its own budget.
    const other = await organizationKey('idem-other', ['read', 'spend', 'manage']);
    const set = await t.app.inject({
      method: 'POST',
      url: `/api/budgets/${address}/set`,
      payload: { dailyLimit: '1000', monthlyLimit: '10000' },
      headers: bearer(other),
    });
    expect(set.statusCode, set.body).toBe(200);
    const second = await spend(other, '20');
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotency-replayed']).toBeUndefined();
    expect(second.json().data.dailySpent).toBe('20');
    // The first organization's budget is untouched by the second's spend.
    const retry = await spend(keys.write as string, '10');
    expect(retry.headers['idempotency-replayed']).toBe('true');
    expect(retry.json().data.dailySpent).toBe('10');
  });

  /** A new organization (created by the operator) and a key of it. */
  async function organizationKey(id: string, scopes: string[]) {
    const org = await t.app.inject({
      method: 'POST',
      url: '/api/organizations',
      payload: { id, name: id },
      headers: bearer(ADMIN),
    });
    expect(org.statusCode, org.body).toBe(201);
    return (await createKey({ name: `${id}-key`, scopes, organizationId: id })).key;
  }

  async function createAgentWithBudgetAs(key: string) {
    const address = randomAddress();
    const headers = bearer(key);
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/agents/register', payload: { address }, headers })).statusCode,
    ).toBe(201);
    const set = await t.app.inject({
      method: 'POST',
      url: `/api/budgets/${address}/set`,
      payload: { dailyLimit: '1000', monthlyLimit: '10000' },
      headers,
    });
    expect(set.statusCode).toBe(200);
    return address;
  }
});

describe('AUTH=off', () => {
  let off: TestContext;
  beforeAll(async () => {
    off = await createTestApp({ edge: { auth: { mode: 'off', adminKey: ADMIN } } });
  });
  afterAll(() => off.close());

  it('leaves the API open, even to an unknown key', async () => {
    expect((await off.app.inject({ method: 'GET', url: '/api/agents' })).statusCode).toBe(200);
    const address = await createAgentWithBudget(off.app, { dailyLimit: '10', monthlyLimit: '100' });
    expect(address).toMatch(/^0x/);
    const withJunk = await off.app.inject({ method: 'GET', url: '/api/agents', headers: bearer('vk_nope') });
    expect(withJunk.statusCode).toBe(200);
  });

  it('still requires the admin scope for key management', async () => {
    expect((await off.app.inject({ method: 'GET', url: '/api/keys' })).statusCode).toBe(401);
    const created = await off.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'reader', scopes: ['read'] },
      headers: bearer(ADMIN),
    });
    expect(created.statusCode).toBe(201);
    const reader = successEnvelope(createdApiKey).parse(created.json()).data.key;
    expect((await off.app.inject({ method: 'GET', url: '/api/keys', headers: bearer(reader) })).statusCode).toBe(403);
  });

  it('holds a key that is presented to its scopes; a request without one stays open', async () => {
    const address = await createAgentWithBudget(off.app, { dailyLimit: '10', monthlyLimit: '100' });
    const created = await off.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'read only', scopes: ['read'] },
      headers: bearer(ADMIN),
    });
    const reader = successEnvelope(createdApiKey).parse(created.json()).data.key;
    const spend = (headers = {}) =>
      off.app.inject({ method: 'POST', url: `/api/budgets/${address}/spend`, payload: { amount: '3' }, headers });
    const refused = await spend(bearer(reader));
    expect(refused.statusCode).toBe(403);
    expect(failureEnvelope.parse(refused.json()).error).toMatchObject({
      code: 'FORBIDDEN',
      details: { required: 'spend', scopes: ['read'] },
    });
    const raised = await off.app.inject({
      method: 'POST',
      url: `/api/budgets/${address}/set`,
      payload: { dailyLimit: '1000' },
      headers: bearer(reader),
    });
    expect(raised.statusCode).toBe(403);
    // Nothing was spent or changed; reading is what the key may do.
    const budget = await off.app.inject({ method: 'GET', url: `/api/budgets/${address}`, headers: bearer(reader) });
    expect(budget.statusCode).toBe(200);
    expect(budget.json().data).toMatchObject({ dailyLimit: '10', dailySpent: '0' });
    expect((await spend()).statusCode).toBe(200);
  });
});
