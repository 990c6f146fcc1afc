import { optionalString, positiveInt } from '@vouch/config';
import { z } from 'zod';
import type { AuthOptions } from './plugins/auth.ts';
import type { RateLimitOptions } from './rate-limiter.ts';

/** `on` or `off`; empty counts as unset, like every key. */
const onOff = optionalString.pipe(z.enum(['on', 'off']).optional());

/** Env keys of the edge (auth, limits, CORS); spread into the API's config schema. */
export const edgeEnv = {
  /** `on`: every API route needs a key with the right scope. Unset → on in production, off elsewhere. */
  AUTH: onOff,
  /** Acts as a key with the admin scope; required whenever AUTH is on. */
  ADMIN_API_KEY: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters',
  }),
  /** `off` disables rate limiting (benchmarks of the raw path). */
  RATE_LIMIT: onOff.transform((v) => v ?? 'on'),
  /** Requests per minute per client: every /api route not listed below. */
  RATE_LIMIT_DEFAULT: positiveInt(100),
  RATE_LIMIT_REGISTER: positiveInt(20),
  RATE_LIMIT_BATCH: positiveInt(10),
  RATE_LIMIT_COMPUTE: positiveInt(1000),
  /** Comma-separated origins allowed by CORS; unset → no CORS headers (same-origin only). */
  CORS_ORIGINS: optionalString,
};

interface EdgeEnv {
  NODE_ENV: 'development' | 'production' | 'test';
  AUTH?: 'on' | 'off' | undefined;
  ADMIN_API_KEY?: string | undefined;
  RATE_LIMIT: 'on' | 'off';
  RATE_LIMIT_DEFAULT: number;
  RATE_LIMIT_REGISTER: number;
  RATE_LIMIT_BATCH: number;
  RATE_LIMIT_COMPUTE: number;
  CORS_ORIGINS?: string | undefined;
  REDIS_URL?: string | undefined;
  BULLMQ_PREFIX: string;
}

export function authMode(config: Pick<EdgeEnv, 'AUTH' | 'NODE_ENV'>): 'on' | 'off' {
  return config.AUTH ?? (config.NODE_ENV === 'production' ? 'on' : 'off');
}

/** Refuses a configuration that would run with auth on and nobody able to administer keys. */
export function checkEdgeConfig(config: Pick<EdgeEnv, 'AUTH' | 'NODE_ENV' | 'ADMIN_API_KEY'>): string | null {
  if (authMode(config) === 'on' && !config.ADMIN_API_KEY) {
    const why = config.AUTH === undefined ? ' (AUTH defaults to on when NODE_ENV=production)' : '';
    return `ADMIN_API_KEY is required when AUTH is on${why}; set it to a secret of at least 16 characters, or set AUTH=off explicitly`;
  }
  return null;
}

/** What buildApp needs for the edge, from the parsed config. */
export function edgeDeps(config: EdgeEnv): {
  auth: AuthOptions;
  rateLimit: RateLimitOptions | false;
  corsOrigins: string[] | undefined;
} {
  return {
    auth: { mode: authMode(config), adminKey: config.ADMIN_API_KEY },
    rateLimit:
      config.RATE_LIMIT === 'off'
        ? false
        : {
            limits: {
              default: config.RATE_LIMIT_DEFAULT,
              register: config.RATE_LIMIT_REGISTER,
              batch: config.RATE_LIMIT_BATCH,
              compute: config.RATE_LIMIT_COMPUTE,
            },
            redisUrl: config.REDIS_URL,
            keyPrefix: `${config.BULLMQ_PREFIX}:ratelimit`,
          },
    corsOrigins: config.CORS_ORIGINS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
}
