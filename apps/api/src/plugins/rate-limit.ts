import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { RateBucket, RateDecision, RateLimiter } from '../rate-limiter.ts';
import { sendFailure } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The limit this route counts against; `false`: not limited. Default: `default` for /api routes. */
    rateLimit?: RateBucket | false;
  }
}

const DASHBOARD = '/admin/queues';

/**
 * The bucket a request counts against, or null when it is not limited. Outside /api only what
 * could be guessing a credential counts (as `default`, per client): the queue dashboard, and
 * any request that carries an Authorization header — probes without one stay unlimited.
 */
export function bucketOf(request: FastifyRequest): RateBucket | null {
  const path = request.routeOptions.url ?? request.url;
  const config = request.routeOptions.config;
  // Routes declared unlimited (the probes, metrics and the API description) stay so, whatever they are sent.
  if (config?.rateLimit === false) return null;
  if (!path.startsWith('/api/')) {
    const dashboard = path === DASHBOARD || path.startsWith(`${DASHBOARD}/`);
    return dashboard || request.headers.authorization !== undefined ? 'default' : null;
  }
  return config?.rateLimit ?? 'default';
}

/** Who a request is counted as: its API key when valid, else its client address. */
export function clientKey(request: FastifyRequest): string {
  return request.principal ? `key:${request.principal.id}` : `ip:${request.ip}`;
}

export interface RateLimitPluginOptions {
  limiter: RateLimiter;
  /** An organization's own limit, if it has one (else the limiter's `organizationLimit`). */
  organizationLimit?: (organizationId: string) => number | undefined;
}

/**
 * Counts every /api request against its bucket (docs/edge.md), and a request made with a key
 * also against its organization's shared allowance, and says so in the IETF draft headers and
 * the X-RateLimit-* ones (for whichever limit is nearer); over either limit it is 429 with
 * Retry-After.
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, { limiter, organizationLimit }: RateLimitPluginOptions) => {
    // Callback-style: a decision this process can make from its lease costs no promise.
    app.addHook('onRequest', (request, reply, done) => {
      const bucket = bucketOf(request);
      if (!bucket) return done();
      const decided = limiter.consume(bucket, clientKey(request));
      // The operator's key administers every organization and counts against none.
      const organization = request.principal?.operator ? undefined : request.principal?.organizationId;
      const then = (d: RateDecision) => {
        if (!d.allowed || organization === undefined) return answer(request, reply, d, done);
        const shared = limiter.consume('organization', organization, organizationLimit?.(organization));
        const pick = (o: RateDecision) => answer(request, reply, !o.allowed || o.remaining < d.remaining ? o : d, done);
        if (shared instanceof Promise) shared.then(pick, done);
        else pick(shared);
      };
      if (decided instanceof Promise) decided.then(then, done);
      else then(decided);
    });
  },
  { name: 'vouch-rate-limit', dependencies: ['vouch-authenticate'] },
);

function answer(request: FastifyRequest, reply: FastifyReply, d: RateDecision, done: () => void) {
  reply.header('ratelimit-policy', `${d.limit};w=${d.windowSeconds}`);
  reply.header('ratelimit', `limit=${d.limit}, remaining=${d.remaining}, reset=${d.resetSeconds}`);
  reply.header('x-ratelimit-limit', String(d.limit));
  reply.header('x-ratelimit-remaining', String(d.remaining));
  reply.header('x-ratelimit-reset', String(d.resetSeconds));
  if (d.allowed) return done();
  reply.header('retry-after', String(d.resetSeconds));
  sendFailure(
    reply,
    request,
    'RATE_LIMITED',
    `rate limit of ${d.limit} requests per ${d.windowSeconds} s exceeded; retry in ${d.resetSeconds} s`,
    { limit: d.limit, windowSeconds: d.windowSeconds, retryAfter: d.resetSeconds },
  );
}
