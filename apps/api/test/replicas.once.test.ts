import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failureEnvelope } from '@vouch/schemas';
import {
  dropPrefix,
  type EmbeddedApi,
  freePort,
  redisAvailable,
  type Spawned,
  spawnBuilt,
  startEmbeddedApi,
  TEST_REDIS_URL,
  testPrefix,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Two API replicas as real processes, one Redis: a client's limit is one budget across both.
describe.runIf(await redisAvailable())('two API processes sharing one Redis-backed limit', () => {
  const prefix = testPrefix();
  const apis: EmbeddedApi[] = [];
  const servers: Spawned[] = [];
  const bases: string[] = [];

  beforeAll(async () => {
    const env = {
      REDIS_URL: TEST_REDIS_URL,
      BULLMQ_PREFIX: prefix,
      VOUCH_ROLE: 'api',
      NODE_ENV: 'development',
      AUTH: '',
      RATE_LIMIT: 'on',
      RATE_LIMIT_DEFAULT: '5',
    };
    apis.push(...(await Promise.all([startEmbeddedApi(env), startEmbeddedApi(env)])));
    for (const api of apis) {
      servers.push(api.server);
      bases.push(api.base);
    }
    // Ready means the limiter's Redis connection is up, so the shared counter is what answers.
    for (const base of bases) {
      const deadline = Date.now() + 15_000;
      while ((await fetch(`${base}/ready`)).status !== 200) {
        if (Date.now() > deadline) throw new Error(`${base} never became ready`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }, 120_000);

  afterAll(async () => {
    for (const api of apis) api.remove();
    await dropPrefix(prefix);
  });

  it('counts requests to either replica against one limit; over it, both answer 429 with the headers', async () => {
    const [a, b] = bases as [string, string];
    const order = [a, b, b, a, b];
    for (const [i, base] of order.entries()) {
      const res = await fetch(`${base}/api/agents`);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('5;w=60');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(4 - i));
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^limit=5, remaining=${4 - i}, reset=\\d+$`));
    }
    for (const base of [a, b]) {
      const res = await fetch(`${base}/api/agents`);
      expect(res.status).toBe(429);
      expect(failureEnvelope.parse(await res.json()).error.code).toBe('RATE_LIMITED');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('x-ratelimit-limit')).toBe('5');
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    // Probes are not limited.
    expect((await fetch(`${a}/health`)).status).toBe(200);
    expect((await fetch(`${b}/metrics`)).status).toBe(200);
  });

  it('warns at start-up that AUTH is off', () => {
    for (const server of servers) expect(server.output()).toContain('AUTH is off');
  });
});

describe('start-up in production', () => {
  it('refuses to start without ADMIN_API_KEY, saying why', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vouch-prod-'));
    try {
      const server = await spawnBuilt('api', {
        PORT: String(await freePort()),
        DATA_DIR: dataDir,
        DATABASE_URL: '',
        REDIS_URL: '',
        NODE_ENV: 'production',
        AUTH: '',
        ADMIN_API_KEY: '',
      });
      expect(await server.exited).not.toBe(0);
      // One line naming the variable, no stack trace.
      expect(server.output()).toContain('vouch-api: invalid configuration: ADMIN_API_KEY: required when AUTH is on');
      expect(server.output()).not.toMatch(/\n\s+at /);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
