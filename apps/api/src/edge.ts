import type { Services } from '@vouch/core';
import type { Database } from '@vouch/db';
import type { JobRunner } from '@vouch/jobs';
import type { Queue } from 'bullmq';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { createMetrics } from './metrics.ts';
import { type AuthOptions, authenticatePlugin, authorizePlugin } from './plugins/auth.ts';
import { sendFailure } from './plugins/errors.ts';
import { metricsPlugin } from './plugins/metrics.ts';
import { openapiPlugin } from './plugins/openapi.ts';
import { rateLimitPlugin } from './plugins/rate-limit.ts';
import { securityPlugin } from './plugins/security.ts';
import { createRateLimiter, type RateLimitOptions } from './rate-limiter.ts';
import { queueReporter, type ReadinessChecks } from './readiness.ts';
import { operationsRoutes } from './routes/operations.routes.ts';

/** How often the organizations' own rate limits are read again. */
const ORGANIZATION_LIMITS_REFRESH_MS = 30_000;

/** What the edge of the app needs (auth, limits, docs, probes, metrics); all optional. */
export interface EdgeDeps {
  services: Services;
  queues?: Queue[] | undefined;
  /** For readiness (ping) and pool metrics. */
  database?: Database | undefined;
  /** For readiness: a BullMQ runner pings Redis. */
  jobs?: JobRunner | undefined;
  /** Absent → AUTH=off without an admin key. */
  auth?: AuthOptions | undefined;
  /** Absent or false → no rate limiting. */
  rateLimit?: RateLimitOptions | false | undefined;
  /** Origins allowed by CORS; absent or empty → CORS off. */
  corsOrigins?: string[] | undefined;
  /** Process metrics (default on). */
  defaultMetrics?: boolean | undefined;
  /** Sees every route the app defines (the OpenAPI completeness test uses it). */
  onRoute?: ((route: RouteOptions) => void) | undefined;
  version?: string | undefined;
}

/**
 * Registers, in this order: security headers and CORS, a draining server's refusal, request metrics, the OpenAPI
 * document and docs UI, key lookup, rate limits (which count per key), authorization,
 * then the probe, metrics and key routes. Must come before any other route.
 */
export const edgePlugin = fp(
  async (instance: FastifyInstance, deps: EdgeDeps) => {
    const app = instance.withTypeProvider<ZodTypeProvider>();
    if (deps.onRoute) app.addHook('onRoute', deps.onRoute);
    const auth = deps.auth ?? { mode: 'off' };

    await app.register(securityPlugin, { corsOrigins: deps.corsOrigins });
    // While the server drains, a request arriving on a kept-alive connection is a 503 in the
    // failure envelope, and the connection is closed after it. Refused here, after the security
    // headers and CORS (so the 503 carries them, as every answer does) and before any key lookup.
    let draining = false;
    app.addHook('preClose', (done) => {
      draining = true;
      done();
    });
    app.addHook('onRequest', (request, reply, done) => {
      if (!draining) return done();
      reply.header('connection', 'close');
      sendFailure(reply, request, 'SERVICE_UNAVAILABLE', 'the server is shutting down; retry on a new connection');
    });
    const jobs = deps.jobs;
    // Read for /ready and the workers gauge, at most once a second whatever the probing rate.
    const queueReports = jobs
      ? queueReporter(() => jobs.inspect(), {
          onChange: (queue, report, previous) => {
            if (report.state === 'no_worker')
              app.log.warn({ queue, ...report }, 'jobs are waiting on a queue no worker is connected to');
            else if (previous === 'no_worker') app.log.info({ queue, ...report }, 'the queue has a worker again');
          },
        })
      : async () => ({});
    const metrics = createMetrics({
      queues: deps.queues,
      queueReports,
      pool: deps.database?.pool,
      defaultMetrics: deps.defaultMetrics,
    });
    await app.register(metricsPlugin, { metrics });
    await app.register(openapiPlugin, {
      version: deps.version ?? '0.1.0',
      limits: deps.rateLimit ? deps.rateLimit.limits : null,
    });

    await app.register(authenticatePlugin, { auth, keys: deps.services.keys });
    const limiter = deps.rateLimit
      ? createRateLimiter({
          ...deps.rateLimit,
          onStoreChange: (state, err) =>
            state === 'unavailable'
              ? app.log.warn({ err }, 'rate limit store (Redis) unavailable; limiting per process until it is back')
              : app.log.info('rate limit store (Redis) back; limits are shared again'),
        })
      : null;
    if (limiter) {
      // Organizations with a limit of their own: read at start and every 30 s, so a change made
      // through any replica holds on every replica within that time.
      let organizationLimits = new Map<string, number>();
      const refresh = () =>
        deps.services.organizations.rateLimits().then(
          (limits) => {
            organizationLimits = limits;
          },
          (err) => app.log.warn({ err }, 'organizations’ rate limits could not be read; keeping the last ones'),
        );
      void refresh();
      const timer = setInterval(refresh, ORGANIZATION_LIMITS_REFRESH_MS);
      timer.unref();
      app.addHook('onClose', async () => {
        clearInterval(timer);
        await limiter.close();
      });
      await app.register(rateLimitPlugin, {
        limiter,
        organizationLimit: (organizationId) => organizationLimits.get(organizationId),
      });
    }
    await app.register(authorizePlugin, { auth });

    const database = deps.database;
    const checks: ReadinessChecks = {
      database: database ? [() => database.ping()] : [],
      redis: [...(jobs?.kind === 'bullmq' ? [() => jobs.ping()] : []), ...(limiter?.ping ? [limiter.ping] : [])],
    };
    await app.register(operationsRoutes, { metrics, checks, queues: queueReports });
  },
  { name: 'vouch-edge' },
);
