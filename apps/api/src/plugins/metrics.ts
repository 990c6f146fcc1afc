import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from '../metrics.ts';

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
  },
  { name: 'vouch-metrics' },
);
