import type { QueueReports } from '@vouch/jobs';
import { failureEnvelope, successEnvelope } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ok } from '../http.ts';
import type { Metrics } from '../metrics.ts';
import { sendFailure } from '../plugins/errors.ts';
import { probe, type ReadinessChecks } from '../readiness.ts';

/** Probes, scrapes and the API description: open to all, never rate limited. */
const open = { scope: 'public', rateLimit: false } as const;

const checkState = z.enum(['ok', 'unavailable', 'not configured']);
const count = z.number().int().nonnegative();
const queueReadiness = z
  .object({
    state: z.enum(['ok', 'idle', 'no_worker', 'unknown', 'in_process']).meta({
      description:
        'ok: a worker is connected; idle: no worker and no job waiting or delayed; no_worker: jobs waiting or delayed and no worker connected (reported, not a 503); unknown: could not be read within 1 s; in_process: no Redis, this process runs the jobs itself',
    }),
    waiting: count
      .optional()
      .meta({ description: 'Jobs ready to run (waiting, prioritized, paused); absent when unknown' }),
    delayed: count.optional().meta({ description: 'Jobs scheduled for later or waiting for a retry' }),
    workers: count
      .optional()
      .meta({ description: 'BullMQ workers connected to the queue, from any process (absent in process or unknown)' }),
  })
  .meta({ id: 'QueueReadiness' });
const readiness = z
  .object({
    status: z.literal('ready'),
    checks: z.record(z.string(), checkState).meta({ example: { database: 'ok', redis: 'ok' } }),
    queues: z.record(z.string(), queueReadiness).meta({
      description: 'Per job queue, read at most once a second: whether anyone runs its jobs',
      example: {
        scores: { state: 'ok', waiting: 0, delayed: 0, workers: 2 },
        checks: { state: 'no_worker', waiting: 12, delayed: 0, workers: 0 },
      },
    }),
  })
  .meta({ id: 'Readiness' });

export const operationsRoutes: FastifyPluginAsyncZod<{
  metrics: Metrics;
  checks: ReadinessChecks;
  /** The job queues' report (cached briefly, bounded in time; readiness.ts `queueReporter`). */
  queues: () => Promise<Partial<QueueReports>>;
}> = async (app, { metrics, checks, queues }) => {
  app.get('/health', {
    config: open,
    schema: {
      operationId: 'health',
      tags: ['operations'],
      summary: 'Liveness: 200 while the process runs',
      response: { 200: successEnvelope(z.object({ status: z.literal('ok') })) },
    },
    handler: async () => ok({ status: 'ok' as const }),
  });

  app.get('/ready', {
    config: open,
    schema: {
      operationId: 'ready',
      tags: ['operations'],
      summary:
        'Readiness: 200 when PostgreSQL and Redis (when configured) answer within 1 s, else 503; reports each job queue, including one that has jobs and no worker',
      response: { 200: successEnvelope(readiness), 503: failureEnvelope },
    },
    handler: async (req, reply) => {
      const [result, queueReports] = await Promise.all([probe(checks), queues()]);
      if (result.ready) return ok({ status: 'ready' as const, checks: result.checks, queues: queueReports });
      const down = Object.entries(result.checks)
        .filter(([, state]) => state === 'unavailable')
        .map(([name]) => name);
      req.log.warn({ checks: result.checks }, 'not ready');
      return sendFailure(reply, req, 'SERVICE_UNAVAILABLE', `not ready: ${down.join(', ')} unavailable`, {
        checks: result.checks,
      });
    },
  });

  app.get('/metrics', {
    config: open,
    schema: {
      operationId: 'metrics',
      tags: ['operations'],
      summary: 'Prometheus metrics: requests by route and status, job counts and durations by queue, pool usage',
      response: {
        200: {
          description: 'Prometheus text exposition format',
          content: { 'text/plain': { schema: z.string() } },
        },
      },
    },
    handler: async (_req, reply) => {
      const text = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(text);
    },
  });

  app.get('/openapi.json', {
    config: open,
    schema: {
      operationId: 'openapi',
      tags: ['operations'],
      summary: 'This OpenAPI 3.1 document (the docs UI is at /docs)',
      response: { 200: z.record(z.string(), z.unknown()) },
    },
    // Text serialized once (plugins/openapi.ts); Fastify sends a string as it is.
    handler: async (_req, reply) =>
      reply.type('application/json; charset=utf-8').send(app.openapiText('json') as unknown as Record<string, unknown>),
  });
};
