import { authMode, type Config } from '@vouch/config';
import type { AuthOptions } from './plugins/auth.ts';
import type { RateLimitOptions } from './rate-limiter.ts';

/** What buildApp needs for the edge (auth, rate limits, CORS), from the parsed configuration. */
export function edgeDeps(config: Config): {
  auth: AuthOptions;
  rateLimit: RateLimitOptions | false;
  corsOrigins: string[] | undefined;
} {
  return {
    auth: { mode: authMode(config), adminKey: config.ADMIN_API_KEY },
    rateLimit: config.RATE_LIMIT
      ? {
          limits: {
            default: config.RATE_LIMIT_DEFAULT,
            register: config.RATE_LIMIT_REGISTER,
            batch: config.RATE_LIMIT_BATCH,
            compute: config.RATE_LIMIT_COMPUTE,
          },
          organizationLimit: config.RATE_LIMIT_ORGANIZATION,
          redisUrl: config.REDIS_URL,
          keyPrefix: `${config.BULLMQ_PREFIX}:ratelimit`,
        }
      : false,
    corsOrigins: config.CORS_ORIGINS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
}
