import type { RateLimitOptions } from '@vouch/api';
import { createdApiKey, failureEnvelope, successEnvelope } from '@vouch/schemas';
import {
  createTestApp,
  dropPrefix,
  freePort,
  redisAvailable,
  TEST_REDIS_URL,
  type TestContext,
  testPrefix,
} from '@vouch/testkit';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const limits = { default: 5, register: 2, batch: 1, compute: 3 };
const ADMIN = 'rate-limit-admin-secret-0123';

function expectHeaders(res: LightMyRequestResponse, limit: number, remaining: number) {
  expect(res.headers['ratelimit-policy']).toBe(`${limit};w=60`);
  expect(res.headers.ratelimit).toMatch(new RegExp(`^limit=${limit}, remaining=${remaining}, reset=\\d+$`));
  expect(res.headers['x-ratelimit-limit']).toBe(String(limit));
  expect(res.headers['x-ratelimit-remaining']).toBe(String(remaining));
  const reset = Number(res.headers['x-ratelimit-reset']);
  expect(reset).toBeGreaterThanOrEqual(1);
  expect(reset).toBeLessThanOrEqual(60);
}

function expect429(res: LightMyRequestResponse, limit: number) {
  expect(res.statusCode).toBe(429);
  expect(failureEnvelope.parse(res.json()).error.code).toBe('RATE_LIMITED');
  expectHeaders(res, limit, 0);
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('rate limits in memory (no Redis)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({
      edge: {
        rateLimit: { limits },
        auth: { mode: 'off', adminKey: ADMIN },
        // The test injects from 127.0.0.1, which it trusts to forward client addresses.
        trustProxy: '127.0.0.1',
      },
    });
  });
  afterAll(() => t.close());

  const from = (ip: string) => ({ 'x-forwarded-for': ip });

  it('counts every /api request per client and says so in the headers; the one over the limit is 429', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/api/agents', headers: from('203.0.113.1') });
      expect(res.statusCode).toBe(200);
      expectHeaders(res, 5, 5 - i);
    }
    const over = await t.app.inject({ method: 'GET', url: '/api/agents', headers: from('203.0.113.1') });
    expect429(over, 5);
    // Failures count too, and unknown /api routes are limited like the rest.
    expect429(await t.app.inject({ method: 'GET', url: '/api/nothing', headers: from('203.0.113.1') }), 5);
    // Another client is not affected.
    const other = await t.app.inject({ method: 'GET', url: '/api/agents', headers: from('203.0.113.2') });
    expect(other.statusCode).toBe(200);
    expectHeaders(other, 5, 4);
  });

  it('has its own buckets for register, batch-scores and compute', async () => {
    const ip = from('203.0.113.10');
    const register = () =>
      t.app.inject({ method: 'POST', url: '/api/agents/register', payload: { address: '0x1' }, headers: ip });
    expectHeaders(await register(), 2, 1);
    expectHeaders(await register(), 2, 0);
    expect429(await register(), 2);
    // The default bucket of the same client is untouched.
    expectHeaders(await t.app.inject({ method: 'GET', url: '/api/agents', headers: ip }), 5, 4);

    const compute = () => t.app.inject({ method: 'POST', url: '/api/scores/compute', payload: {}, headers: ip });
    for (let i = 2; i >= 0; i--) expectHeaders(await compute(), 3, i);
    expect429(await compute(), 3);
  });

  it('limits batch-scores at its own rate (the route exists only with a job runner)', async () => {
    const withJobs = await createTestApp({ jobs: 'in-process', edge: { rateLimit: { limits } } });
    try {
      const batch = () => withJobs.app.inject({ method: 'POST', url: '/api/agents/batch-scores', payload: {} });
      const first = await batch();
      expect(first.statusCode).toBe(400);
      expectHeaders(first, 1, 0);
      expect429(await batch(), 1);
    } finally {
      await withJobs.close();
    }
  });

  it('ignores X-Forwarded-For from an address it does not trust', async () => {
    const untrusting = await createTestApp({ edge: { rateLimit: { limits } } });
    try {
      for (let i = 0; i < 5; i++) {
        const res = await untrusting.app.inject({
          method: 'GET',
          url: '/api/agents',
          headers: from(`198.51.100.${i}`),
        });
        expect(res.statusCode).toBe(200);
      }
      // Five different forwarded addresses, one real client: the sixth is over.
      expect429(await untrusting.app.inject({ method: 'GET', url: '/api/agents', headers: from('198.51.100.99') }), 5);
    } finally {
      await untrusting.close();
    }
  });

  it('counts per API key when a valid one is presented, not per address', async () => {
    const ip = from('203.0.113.20');
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'limited', scopes: ['read'] },
      headers: { ...ip, authorization: `Bearer ${ADMIN}` },
    });
    expect(created.statusCode).toBe(201);
    const key = successEnvelope(createdApiKey).parse(created.json()).data.key;
    // The key's budget is its own wherever it comes from.
    for (let i = 1; i <= 5; i++) {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/agents',
        headers: { ...from(`192.0.2.${i}`), authorization: `Bearer ${key}` },
      });
      expectHeaders(res, 5, 5 - i);
    }
    expect429(
      await t.app.inject({ method: 'GET', url: '/api/agents', headers: { ...ip, authorization: `Bearer ${key}` } }),
      5,
    );
    // The address it came from keeps its own budget (the admin key's request counted against that key).
    expectHeaders(await t.app.inject({ method: 'GET', url: '/api/agents', headers: ip }), 5, 4);
  });

  it('limits the dashboard and any request carrying a credential outside /api, per client', async () => {
    // Guessing the admin key against the docs UI or the dashboard is limited like an /api request
    // (the probes, declared unlimited, look up no key: nothing to guess there).
    const guesser = { ...from('203.0.113.40'), authorization: 'Bearer not-the-admin-key-0123' };
    for (let i = 1; i <= 5; i++) {
      expect((await t.app.inject({ method: 'GET', url: '/docs/json', headers: guesser })).statusCode).toBe(200);
    }
    expect((await t.app.inject({ method: 'GET', url: '/health', headers: guesser })).statusCode).toBe(200);
    expect429(await t.app.inject({ method: 'GET', url: '/docs/json', headers: guesser }), 5);
    expect429(await t.app.inject({ method: 'GET', url: '/admin/queues', headers: guesser }), 5);
    const browser = from('203.0.113.41');
    for (let i = 1; i <= 5; i++) await t.app.inject({ method: 'GET', url: '/admin/queues', headers: browser });
    expect429(await t.app.inject({ method: 'GET', url: '/admin/queues', headers: browser }), 5);
  });

  it('looks up no key for a probe, whatever it is sent', async () => {
    const lookups: string[] = [];
    const authenticate = t.services.keys.authenticate;
    t.services.keys.authenticate = (secret: string) => {
      lookups.push(secret);
      return authenticate(secret);
    };
    try {
      const bogus = { ...from('203.0.113.42'), authorization: 'Bearer vouch_bogus_key_0123456789' };
      await t.app.inject({ method: 'GET', url: '/health', headers: bogus });
      await t.app.inject({ method: 'GET', url: '/openapi.json', headers: bogus });
      expect(lookups).toEqual([]);
      await t.app.inject({ method: 'GET', url: '/api/agents', headers: bogus });
      expect(lookups).toEqual(['vouch_bogus_key_0123456789']);
    } finally {
      t.services.keys.authenticate = authenticate;
    }
  });

  it('never limits the probes, metrics or the API description', async () => {
    const ip = from('203.0.113.30');
    for (let i = 0; i < 8; i++) {
      for (const url of ['/health', '/ready', '/metrics', '/openapi.json', '/docs']) {
        const res = await t.app.inject({ method: 'GET', url, headers: ip });
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['ratelimit-policy'], url).toBeUndefined();
      }
    }
  });
});

describe('RATE_LIMIT=off', () => {
  it('adds no headers and refuses nothing', async () => {
    const t = await createTestApp({ edge: { rateLimit: false } });
    try {
      for (let i = 0; i < 110; i++) {
        const res = await t.app.inject({ method: 'GET', url: '/api/scores/agents?limit=1' });
        expect(res.statusCode).toBe(200);
        expect(res.headers.ratelimit).toBeUndefined();
      }
    } finally {
      await t.close();
    }
  });
});

describe.runIf(await redisAvailable())('rate limits shared through Redis', () => {
  const prefix = testPrefix();
  const options = (): RateLimitOptions => ({ limits, redisUrl: TEST_REDIS_URL, keyPrefix: `${prefix}:ratelimit` });
  let a: TestContext;
  let b: TestContext;
  beforeAll(async () => {
    a = await createTestApp({ edge: { rateLimit: options() } });
    b = await createTestApp({ edge: { rateLimit: options() } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await dropPrefix(prefix);
  });

  it('one client has one budget across two apps', async () => {
    // Both limiters must be connected before the shared counter is what answers.
    for (const app of [a, b]) {
      await expect.poll(async () => (await app.app.inject({ method: 'GET', url: '/ready' })).statusCode).toBe(200);
    }
    const apps = [a, b, a, b, a];
    for (const [i, app] of apps.entries()) {
      const res = await app.app.inject({ method: 'GET', url: '/api/agents' });
      expect(res.statusCode).toBe(200);
      expectHeaders(res, 5, 4 - i);
    }
    expect429(await b.app.inject({ method: 'GET', url: '/api/agents' }), 5);
    expect429(await a.app.inject({ method: 'GET', url: '/api/agents' }), 5);
  });
});

describe('when the Redis store is unreachable', () => {
  it('falls back to per-process limits instead of none', async () => {
    const port = await freePort(); // nothing listens there
    const t = await createTestApp({ edge: { rateLimit: { limits, redisUrl: `redis://127.0.0.1:${port}` } } });
    try {
      for (let i = 1; i <= 5; i++) {
        const res = await t.app.inject({ method: 'GET', url: '/api/agents' });
        expect(res.statusCode).toBe(200);
        expectHeaders(res, 5, 5 - i);
      }
      expect429(await t.app.inject({ method: 'GET', url: '/api/agents' }), 5);
      const ready = await t.app.inject({ method: 'GET', url: '/ready' });
      expect(ready.statusCode).toBe(503);
      expect(failureEnvelope.parse(ready.json()).error.details).toEqual({
        checks: { database: 'ok', redis: 'unavailable' },
      });
    } finally {
      await t.close();
    }
  });
});
