import { ConfigError } from '@vouch/config';
import { describe, expect, it } from 'vitest';
import { loadApiConfig } from './config.ts';
import { authMode, edgeDeps } from './edge-config.ts';

const ADMIN = 'a-long-enough-admin-secret';

describe('auth mode and the admin key', () => {
  it('refuses to start in production without ADMIN_API_KEY, naming the key', () => {
    expect(() => loadApiConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadApiConfig({ NODE_ENV: 'production' })).toThrow(/ADMIN_API_KEY is required when AUTH is on/);
  });

  it('defaults AUTH to on in production and off elsewhere', () => {
    expect(authMode(loadApiConfig({ NODE_ENV: 'production', ADMIN_API_KEY: ADMIN }))).toBe('on');
    expect(authMode(loadApiConfig({ NODE_ENV: 'development' }))).toBe('off');
    expect(authMode(loadApiConfig({}))).toBe('off');
    expect(authMode(loadApiConfig({ NODE_ENV: 'test' }))).toBe('off');
  });

  it('lets an explicit AUTH win, and AUTH=on always needs the admin key', () => {
    expect(authMode(loadApiConfig({ NODE_ENV: 'production', AUTH: 'off' }))).toBe('off');
    expect(() => loadApiConfig({ AUTH: 'on' })).toThrow(/ADMIN_API_KEY/);
    expect(authMode(loadApiConfig({ AUTH: 'on', ADMIN_API_KEY: ADMIN }))).toBe('on');
  });

  it('refuses a short admin key', () => {
    expect(() => loadApiConfig({ AUTH: 'on', ADMIN_API_KEY: 'short' })).toThrow(/at least 16 characters/);
  });
});

describe('edge dependencies from config', () => {
  it('has the limits of DESIGN §2 by default, in memory without REDIS_URL', () => {
    const edge = edgeDeps(loadApiConfig({}));
    expect(edge.rateLimit).toEqual({
      limits: { default: 100, register: 20, batch: 10, compute: 1000 },
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
        REDIS_URL: 'redis://127.0.0.1:6379',
        BULLMQ_PREFIX: 'p1',
        CORS_ORIGINS: 'https://a.example, https://b.example ,',
      }),
    );
    expect(edge.rateLimit).toEqual({
      limits: { default: 7, register: 3, batch: 2, compute: 50 },
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
    expect(authMode(loadApiConfig({ AUTH: '', NODE_ENV: 'development' }))).toBe('off');
    expect(() => loadApiConfig({ AUTH: '', NODE_ENV: 'production', ADMIN_API_KEY: '' })).toThrow(/ADMIN_API_KEY/);
    expect(edgeDeps(loadApiConfig({ RATE_LIMIT: '', CORS_ORIGINS: '' })).rateLimit).not.toBe(false);
    expect(edgeDeps(loadApiConfig({ CORS_ORIGINS: '' })).corsOrigins).toBeUndefined();
    expect(() => loadApiConfig({ AUTH: 'maybe' })).toThrow(/AUTH/);
  });
});
