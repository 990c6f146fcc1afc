import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from '../metrics.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts a request that Fastify refused before routing (a bad URL, a parameter past the
     * router's limit), as `unmatched`: no hook runs for it.
     */
    observeUnrouted?: (request: FastifyRequest, reply: FastifyReply) => void;
  }
}

/** Counts and times every answered request by its route pattern (`unmatched` for 404s of unknown routes). */
export const metricsPlugin = fp(
  async (app: FastifyInstance, { metrics }: { metrics: Metrics }) => {
    app.addHook('onResponse', (request, reply, done) => {
      metrics.observeRequest(
        request.method,
        request.routeOptions.url ?? 'unmatched',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });
    app.decorate('observeUnrouted', (request: FastifyRequest, reply: FastifyReply) => {
      const started = performance.now();
      reply.raw.once('finish', () =>
        metrics.observeRequest(request.method, 'unmatched', reply.statusCode, (performance.now() - started) / 1000),
      );
    });
  },
  { name: 'vouch-metrics' },
);
