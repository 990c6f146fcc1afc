import { failureEnvelope } from '@vouch/schemas';
import { createAgentWithBudget, createTestApp, type TestContext } from '@vouch/testkit';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
let agent: string;
beforeAll(async () => {
  t = await createTestApp();
  agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
});
afterAll(() => t.close());

/** Row counts of every table: a refused request must leave them all unchanged. */
async function snapshot() {
  const tables = ['agents', 'score_events', 'budgets', 'spends', 'transactions', 'idempotency_keys'] as const;
  const counts: Record<string, unknown> = {};
  for (const table of tables) counts[table] = (await t.database.db.selectFrom(table).selectAll().execute()).length;
  counts.budget = await t.database.db.selectFrom('budgets').selectAll().execute();
  return counts;
}

describe('the failure envelope for malformed requests', () => {
  const cases: Array<{ name: string; status: number; code: string; request: InjectOptions }> = [
    { name: 'unknown route', status: 404, code: 'NOT_FOUND', request: { method: 'GET', url: '/api/nothing' } },
    { name: 'unknown method', status: 404, code: 'NOT_FOUND', request: { method: 'DELETE', url: '/api/agents' } },
    {
      name: 'malformed JSON',
      status: 400,
      code: 'INVALID_JSON',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'application/json' },
        payload: '{"amount": "1"',
      },
    },
    {
      name: 'empty JSON body',
      status: 400,
      code: 'INVALID_JSON',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'application/json' },
        payload: '',
      },
    },
    {
      name: 'prototype poisoning',
      status: 400,
      code: 'INVALID_JSON',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'application/json' },
        payload: '{"amount":"1","__proto__":{"x":1}}',
      },
    },
    {
      // Which of the two a reader keeps is not defined (RFC 8259 §4): a spend must mean one amount.
      name: 'a member named twice',
      status: 400,
      code: 'INVALID_JSON',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'application/json' },
        payload: '{"amount":"1","amount":"99"}',
      },
    },
    {
      name: 'a member named twice, once escaped, inside a nested object',
      status: 400,
      code: 'INVALID_JSON',
      request: {
        method: 'POST',
        url: '/api/decisions',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        payload: '{"agent":"AGENT","amount":"1","context":{"order":"a","\\u006frder":"b"}}',
      },
    },
    {
      name: 'wrong content type',
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'text/plain' },
        payload: '{"amount":"1"}',
      },
    },
    {
      name: 'form content type',
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'amount=1',
      },
    },
    {
      name: 'no body at all',
      status: 400,
      code: 'VALIDATION_ERROR',
      request: { method: 'POST', url: '/api/budgets/AGENT/spend' },
    },
    {
      name: 'body over 1 MiB',
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      request: {
        method: 'POST',
        url: '/api/budgets/AGENT/spend',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ amount: '1', pad: 'x'.repeat(1024 * 1024) }),
      },
    },
    {
      name: 'bad address in the path',
      status: 400,
      code: 'VALIDATION_ERROR',
      request: {
        method: 'POST',
        url: '/api/budgets/0xzz/spend',
        headers: { 'content-type': 'application/json' },
        payload: '{"amount":"1"}',
      },
    },
  ];

  for (const c of cases) {
    it(`${c.name} → ${c.status} ${c.code}, nothing stored`, async () => {
      const before = await snapshot();
      const payload =
        typeof c.request.payload === 'string' ? c.request.payload.replace('AGENT', agent) : c.request.payload;
      const request = { ...c.request, url: String(c.request.url).replace('AGENT', agent), payload };
      const res = await t.app.inject(request);
      expect(res.statusCode).toBe(c.status);
      const body = failureEnvelope.parse(res.json());
      expect(body.error.code).toBe(c.code);
      expect(body.error.requestId).toBe(res.headers['x-request-id']);
      expect(await snapshot()).toEqual(before);
    });
  }
});

describe('query parameters', () => {
  it('a route that takes none refuses any, nothing stored: a spend does not read `?asset=` as GET of its budget does', async () => {
    const usdc = 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
    const cases: InjectOptions[] = [
      // No USDC budget is set: taken from the wei budget, this would spend what the caller did not mean.
      {
        method: 'POST',
        url: `/api/budgets/${agent}/spend?asset=${encodeURIComponent(usdc)}`,
        payload: { amount: '1' },
      },
      { method: 'POST', url: `/api/budgets/${agent}/check?dryRun=true`, payload: { amount: '1' } },
      { method: 'GET', url: `/api/agents/${agent}/score?bogus=1` },
      { method: 'HEAD', url: `/api/agents/${agent}/score?bogus=1` },
    ];
    for (const request of cases) {
      const before = await snapshot();
      const res = await t.app.inject(request);
      expect(res.statusCode, String(request.url)).toBe(400);
      if (request.method !== 'HEAD') {
        const body = failureEnvelope.parse(res.json());
        expect(body.error.code).toBe('VALIDATION_ERROR');
        expect(body.error.details).toEqual([expect.objectContaining({ path: 'querystring' })]);
      }
      expect(await snapshot()).toEqual(before);
    }
  });
});

describe('request ids', () => {
  it('echoes a sane X-Request-Id and generates one otherwise', async () => {
    const echoed = await t.app.inject({ method: 'GET', url: '/api/agents', headers: { 'x-request-id': 'abc-123' } });
    expect(echoed.headers['x-request-id']).toBe('abc-123');
    const generated = await t.app.inject({
      method: 'GET',
      url: '/api/agents',
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
