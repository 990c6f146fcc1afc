import { loadConfig as loadApiConfig } from '@vouch/config';
import { describe, expect, it } from 'vitest';
import { edgeDeps } from './edge-config.ts';

describe('edge dependencies from config', () => {
  it('has the documented limits by default (docs/edge.md), in memory without REDIS_URL', () => {
    const edge = edgeDeps(loadApiConfig({}));
    expect(edge.rateLimit).toEqual({
      limits: { default: 100, register: 20, batch: 10, compute: 1000 },
      organizationLimit: 1000,
      redisUrl: undefined,
      keyPrefix: 'vouch:ratelimit',
    });
    expect(edge.corsOrigins).toBeUndefined();
    expect(edge.auth).toEqual({ mode: 'off', adminKey: undefined });
  });

  it('reads the limits, the Redis store, CORS origins, and RATE_LIMIT=off', () => {
    const edge = edgeDeps(
      loadApiConfig({
        RATE_LIMIT_DEFAULT: '7',
        RATE_LIMIT_REGISTER: '3',
        RATE_LIMIT_BATCH: '2',
        RATE_LIMIT_COMPUTE: '50',
        RATE_LIMIT_ORGANIZATION: '400',
        REDIS_URL: 'redis://127.0.0.1:6379',
        BULLMQ_PREFIX: 'p1',
        CORS_ORIGINS: 'https://a.example, https://b.example ,',
      }),
    );
    expect(edge.rateLimit).toEqual({
      limits: { default: 7, register: 3, batch: 2, compute: 50 },
      organizationLimit: 400,
      redisUrl: 'redis://127.0.0.1:6379',
      keyPrefix: 'p1:ratelimit',
    });
    expect(edge.corsOrigins).toEqual(['https://a.example', 'https://b.example']);
    expect(edgeDeps(loadApiConfig({ RATE_LIMIT: 'off' })).rateLimit).toBe(false);
    expect(() => loadApiConfig({ RATE_LIMIT_DEFAULT: '0' })).toThrow(/RATE_LIMIT_DEFAULT/);
  });
});

describe('empty values', () => {
  it('count as unset, as for every key', () => {
    expect(edgeDeps(loadApiConfig({ RATE_LIMIT: '', CORS_ORIGINS: '' })).rateLimit).not.toBe(false);
    expect(edgeDeps(loadApiConfig({ CORS_ORIGINS: '' })).corsOrigins).toBeUndefined();
  });
});
