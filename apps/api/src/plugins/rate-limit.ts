import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { RateBucket, RateLimiter } from '../rate-limiter.ts';
import { sendFailure } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The limit this route counts against; `false`: not limited. Default: `default` for /api routes. */
    rateLimit?: RateBucket | false;
  }
}

/** The bucket a request counts against, or null when it is not limited (everything outside /api). */
export function bucketOf(request: FastifyRequest): RateBucket | null {
  const config = request.routeOptions.config;
  if (config?.rateLimit === false) return null;
  const path = request.routeOptions.url ?? request.url;
  if (!path.startsWith('/api/')) return null;
  return config?.rateLimit ?? 'default';
}

/** Who a request is counted as: its API key when valid, else its client address. */
export function clientKey(request: FastifyRequest): string {
  return request.principal ? `key:${request.principal.id}` : `ip:${request.ip}`;
}

/**
 * Counts every /api request against its bucket (DESIGN §2) and says so in the
 * IETF draft headers and the X-RateLimit-* ones; over the limit it is 429 with Retry-After.
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, { limiter }: { limiter: RateLimiter }) => {
    app.addHook('onRequest', async (request, reply) => {
      const bucket = bucketOf(request);
      if (!bucket) return;
      const d = await limiter.consume(bucket, clientKey(request));
      reply.header('ratelimit-policy', `${d.limit};w=${d.windowSeconds}`);
      reply.header('ratelimit', `limit=${d.limit}, remaining=${d.remaining}, reset=${d.resetSeconds}`);
      reply.header('x-ratelimit-limit', String(d.limit));
      reply.header('x-ratelimit-remaining', String(d.remaining));
      reply.header('x-ratelimit-reset', String(d.resetSeconds));
      if (d.allowed) return;
      reply.header('retry-after', String(d.resetSeconds));
      return sendFailure(
        reply,
        request,
        'RATE_LIMITED',
        `rate limit of ${d.limit} requests per ${d.windowSeconds} s exceeded; retry in ${d.resetSeconds} s`,
        { limit: d.limit, windowSeconds: d.windowSeconds, retryAfter: d.resetSeconds },
      );
    });
  },
  { name: 'vouch-rate-limit', dependencies: ['vouch-authenticate'] },
);
