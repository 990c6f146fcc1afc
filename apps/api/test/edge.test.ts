import { Writable } from 'node:stream';
import { queueNames } from '@vouch/config';
import { failureEnvelope } from '@vouch/schemas';
import { createTestApp, type TestContext } from '@vouch/testkit';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ORIGIN = 'https://wallet.example';
const lines: Array<Record<string, unknown>> = [];
let t: TestContext;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  t = await createTestApp({
    edge: {
      logger: pino({ level: 'info' }, sink),
      corsOrigins: [ORIGIN, 'https://admin.example'],
      rateLimit: { limits: { default: 3, register: 3, batch: 3, compute: 3 } },
      auth: { mode: 'on', adminKey: 'edge-admin-secret-0123456789' },
      defaultMetrics: true,
    },
  });
});
afterAll(() => t.close());

describe('security headers', () => {
  it('sets helmet headers and a CSP that allows nothing on JSON answers', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    // Document-only headers are not sent with JSON.
    expect(res.headers['cross-origin-opener-policy']).toBeUndefined();
    expect(res.headers['x-dns-prefetch-control']).toBeUndefined();
    // On failures too.
    const missing = await t.app.inject({ method: 'GET', url: '/nothing' });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['x-content-type-options']).toBe('nosniff');
  });
  it("gives the docs UI helmet's page headers: its default CSP, without upgrading to https", async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.headers['cross-origin-opener-policy']).toBe('same-origin');
    expect(res.headers['cache-control']).not.toBe('no-store');
  });
});

describe('CORS', () => {
  it('allows the listed origins and exposes the headers a client needs', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health', headers: { origin: ORIGIN } });
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(res.headers['access-control-expose-headers']).toContain('x-request-id');
    expect(res.headers['access-control-expose-headers']).toContain('retry-after');
    expect(res.headers['access-control-expose-headers']).toContain('ratelimit');
  });

  it('answers a preflight for a listed origin, without auth or rate limits', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url: '/api/budgets/0x52908400098527886e0f7030069857d2e4169ee7/spend',
        headers: {
          origin: ORIGIN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, idempotency-key',
        },
      });
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-allow-methods']).toContain('POST');
      expect(res.headers['access-control-allow-headers']).toContain('idempotency-key');
      expect(res.headers.ratelimit).toBeUndefined();
    }
  });

  it('answers an OPTIONS that is no preflight 400 in the failure envelope', async () => {
    // Without Origin or Access-Control-Request-Method an OPTIONS is no CORS preflight (a scanner's,
    // a curl): refused as any other bad request is, not with a bare text body.
    for (const headers of [{}, { origin: ORIGIN }, { 'access-control-request-method': 'POST' }]) {
      const res = await t.app.inject({ method: 'OPTIONS', url: '/api/agents', headers });
      expect(res.statusCode).toBe(400);
      const body = failureEnvelope.parse(res.json());
      expect(body.error.code).toBe('VALIDATION_ERROR');
      expect(body.error.requestId).toBe(res.headers['x-request-id']);
    }
  });

  it('gives no CORS headers to another origin', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://evil.example' } });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('is off when no origins are configured', async () => {
    const plain = await createTestApp();
    try {
      const res = await plain.app.inject({ method: 'GET', url: '/health', headers: { origin: ORIGIN } });
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await plain.close();
    }
  });
});

describe('request ids', () => {
  it('are on every answer, refusals included, and on every log line of the request', async () => {
    const before = lines.length;
    const refused = await t.app.inject({ method: 'GET', url: '/api/agents', headers: { 'x-request-id': 'req-401' } });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['x-request-id']).toBe('req-401');
    expect(failureEnvelope.parse(refused.json()).error.requestId).toBe('req-401');

    for (let i = 0; i < 3; i++) await t.app.inject({ method: 'GET', url: '/api/nothing' });
    const limited = await t.app.inject({ method: 'GET', url: '/api/nothing', headers: { 'x-request-id': 'req-429' } });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['x-request-id']).toBe('req-429');

    const logged = lines.slice(before).filter((l) => l.requestId === 'req-401');
    expect(logged.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
    // Every line Fastify logged about a request names its request id.
    for (const line of lines.slice(before)) {
      if ('req' in line || 'res' in line) expect(line.requestId).toEqual(expect.any(String));
    }
    // No secret reaches the log (request lines carry method, url and ids, not headers).
    await t.app.inject({ method: 'GET', url: '/health', headers: { authorization: 'Bearer vk_secret' } });
    expect(JSON.stringify(lines)).not.toContain('vk_secret');
  });
});

describe('/health, /ready and /metrics', () => {
  it('answer without a key', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/health' })).json()).toEqual({
      success: true,
      data: { status: 'ok' },
    });
    const inProcess = { state: 'in_process', waiting: 0, delayed: 0 };
    expect((await t.app.inject({ method: 'GET', url: '/ready' })).json()).toEqual({
      success: true,
      data: {
        status: 'ready',
        checks: { database: 'ok', redis: 'not configured' },
        // Every queue, webhooks included: this process runs them all.
        queues: Object.fromEntries(queueNames.map((queue) => [queue, inProcess])),
      },
    });
  });

  it('/metrics is Prometheus text with requests by route and status, and process metrics', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body;
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/api\/agents",status="401"\} \d+/);
    expect(text).toMatch(/http_requests_total\{method="GET",route="unmatched",status="429"\} \d+/);
    expect(text).toMatch(
      /http_request_duration_seconds_bucket\{le="0\.1",method="GET",route="\/health",status="200"\} \d+/,
    );
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    // Every sample line parses as `name{labels} value`.
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/);
    }
  });

  it('/metrics counts the requests refused before routing too, as unmatched', async () => {
    const count = async (pattern: RegExp) =>
      Number(pattern.exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0);
    const badUrl = /http_requests_total\{method="GET",route="unmatched",status="400"\} (\d+)/;
    const before = await count(badUrl);
    // A scanner's path-traversal probe (bad percent-encoding) and a parameter past the router's limit.
    for (const url of ['/%c0%ae%c0%ae/etc/passwd%', `/api/agents/${'a'.repeat(120)}`]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(400);
    }
    expect(await count(badUrl)).toBe(before + 2);
    // Each under the one label: the URLs are not in it.
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).not.toContain('passwd');
  });
});
