import { sql } from '@vouch/db';
import { createTestApp, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/events.md: `url` is an absolute http(s) URL (2,048 characters at most) without credentials
// or fragment, kept and shown in the form it is requested at (as the WHATWG URL parser gives it).
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' } });
});
afterAll(() => t.close());

const request = (method: 'POST' | 'PATCH', url: string, payload: object) => t.app.inject({ method, url, payload });
const count = async () =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhooks`.execute(t.database.db)).rows[0]?.n;

const bad = {
  'an empty fragment (kept as `…#`)': 'https://example.com/hook#',
  'a URL of 1,020 characters that is 6,020 once parsed': `https://example.com/${'é'.repeat(1000)}`,
  'a URL of 2,021 characters that is 6,021 once parsed': `https://example.com/${' '.repeat(2000)}x`,
};

describe('a webhook URL', () => {
  for (const [what, url] of Object.entries(bad)) {
    it(`is refused when created with ${what}`, async () => {
      const before = await count();
      const res = await request('POST', '/api/webhooks', { url, eventTypes: ['spend.refused'] });
      expect(
        { status: res.statusCode, stored: res.statusCode === 201 ? res.json().data.url.length : null },
        res.body.slice(0, 200),
      ).toEqual({ status: 400, stored: null });
      expect(await count()).toBe(before);
    });

    it(`is refused when changed to ${what}`, async () => {
      const created = await request('POST', '/api/webhooks', {
        url: 'https://example.com/ok',
        eventTypes: ['spend.refused'],
      });
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json().data.id as string;
      const res = await request('PATCH', `/api/webhooks/${id}`, { url });
      expect(res.statusCode, res.body.slice(0, 200)).toBe(400);
    });
  }
});
