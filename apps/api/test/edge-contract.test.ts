import { failureEnvelope } from '@vouch/schemas';
import { createAgent, createTestApp, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// What a client meets at the edge, each against an app configured for it: CORS for every method
// the API has, the 413 naming the limit applied, a media type as documented, probes never limited.

describe('CORS', () => {
  // docs/edge.md: CORS for the origins in CORS_ORIGINS. A browser client of an allowed origin must be
  // able to call every /api method the API has: PUT (policies) and PATCH (webhooks, organizations) too.
  const ORIGIN = 'https://wallet.example';
  const AGENT = '0x52908400098527886e0f7030069857d2e4169ee7';
  let t: TestContext;

  beforeAll(async () => {
    t = await createTestApp({ edge: { corsOrigins: [ORIGIN] } });
  });
  afterAll(() => t.close());

  describe('CORS preflights for the methods the API has', () => {
    const cases = [
      ['PUT', `/api/agents/${AGENT}/policy`],
      ['PUT', '/api/policies/default'],
      ['PATCH', '/api/webhooks/wh_0123456789abcdef'],
      ['PATCH', '/api/organizations/acme'],
    ] as const;
    for (const [method, url] of cases) {
      it(`allows ${method} ${url} from a listed origin`, async () => {
        const res = await t.app.inject({
          method: 'OPTIONS',
          url,
          headers: {
            origin: ORIGIN,
            'access-control-request-method': method,
            'access-control-request-headers': 'authorization, content-type',
          },
        });
        expect(res.statusCode).toBe(204);
        expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
        expect(String(res.headers['access-control-allow-methods']).split(/\s*,\s*/)).toContain(method);
      });
    }
  });

  it('exposes to a listed origin the job id a queued route answers with (X-Job-Id), a 200 included', async () => {
    // docs/jobs.md: a 200 carries its job's id only in X-Job-Id; a browser script reads a response
    // header only when Access-Control-Expose-Headers names it.
    const agents = [await createAgent(t.app), await createAgent(t.app)];
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/agents/batch-scores',
      headers: { origin: ORIGIN },
      payload: { agents, scores: [900, 100], reasons: ['0x01', '0x02'] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-job-id']).toEqual(expect.any(String));
    expect(String(res.headers['access-control-expose-headers']).split(/\s*,\s*/)).toContain('x-job-id');
  });
});

describe('BODY_LIMIT_BYTES', () => {
  // BODY_LIMIT_BYTES (README): "Larger bodies are refused with 413". The refusal should state the limit applied.
  let t: TestContext;

  beforeAll(async () => {
    t = await createTestApp({ edge: { bodyLimit: 2048 } });
  });
  afterAll(() => t.close());

  describe('a body over BODY_LIMIT_BYTES', () => {
    it('is refused 413 naming the configured limit, not the default one', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/agents/register',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          address: '0x52908400098527886e0f7030069857d2e4169ee7',
          metadata: { pad: 'x'.repeat(4000) },
        }),
      });
      expect(res.statusCode).toBe(413);
      const body = failureEnvelope.parse(res.json());
      expect(body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(body.error.message).not.toContain('1 MiB');
      expect(body.error.message).toContain('2048');
    });
  });
});

describe('the OpenAPI of GET /api/audit/export', () => {
  const ADMIN = 'openapi-admin-secret-0123456789';
  let t: TestContext;

  beforeAll(async () => {
    t = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
  });
  afterAll(() => t.close());

  describe('GET /api/audit/export against its OpenAPI', () => {
    it('is documented with the media type it is sent in', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const documented = Object.keys(doc.paths['/api/audit/export'].get.responses['200'].content);
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/audit/export',
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(res.statusCode).toBe(200);
      const sent = String(res.headers['content-type']).split(';')[0];
      expect(sent).toBe('application/x-ndjson');
      expect(documented).toContain(sent);
    });
  });
});

describe('the probes', () => {
  // docs/edge.md: "/ready is open to anyone and never rate limited"; the probe routes are declared
  // `rateLimit: false` (operations.routes.ts) and their OpenAPI lists no 429. A probe that carries an
  // Authorization header (a load balancer configured to send the API key everywhere) shares the
  // `default` bucket of its address with the API traffic from it.
  const ADMIN = 'probe-admin-secret-0123456789';
  let t: TestContext;

  beforeAll(async () => {
    t = await createTestApp({
      edge: {
        rateLimit: { limits: { default: 3, register: 3, batch: 3, compute: 3 } },
        auth: { mode: 'on', adminKey: ADMIN },
      },
    });
  });
  afterAll(() => t.close());

  describe('probes are never rate limited', () => {
    for (const url of ['/ready', '/health']) {
      it(`${url} answers what its OpenAPI lists, whatever headers the probe sends`, async () => {
        const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
        const documented = Object.keys(doc.paths[url].get.responses).map(Number);
        const headers = { authorization: `Bearer ${ADMIN}` };
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) statuses.push((await t.app.inject({ method: 'GET', url, headers })).statusCode);
        expect(statuses.filter((s) => !documented.includes(s))).toEqual([]);
        expect(statuses).not.toContain(429);
      });
    }
  });
});
