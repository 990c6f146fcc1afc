import { randomUUID } from 'node:crypto';
import type { Services } from '@vouch/core';
import type { Runtime } from '@vouch/runtime';
import { failureEnvelope } from '@vouch/schemas';
import type { Queue } from 'bullmq';
import Fastify, { type FastifyBaseLogger, LogController } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type EdgeDeps, edgePlugin } from './edge.ts';
import { edgeDeps } from './edge-config.ts';
import { implicitFailures } from './http.ts';
import { idempotencyHeaders, replaySerializationPlugin } from './idempotency.ts';
import { strictJsonBodies } from './json-body.ts';
import { coalesceWritesPlugin } from './plugins/coalesce-writes.ts';
import { clientErrorHandler, errorsPlugin, frameworkErrors } from './plugins/errors.ts';
import { queueDashboard } from './plugins/queue-dashboard.ts';
import { apiRoutes } from './routes/index.ts';
import { responseSerializerCompiler } from './serializer.ts';

/** EdgeDeps: auth, rate limits, CORS, database and jobs for readiness and metrics (edge.ts). */
export interface AppDeps extends EdgeDeps {
  services: Services;
  /** A pino logger; none means silent. */
  logger?: FastifyBaseLogger;
  trustProxy?: string | undefined;
  bodyLimit?: number;
  /** BullMQ queues to show at /admin/queues (none with the in-process runner). */
  queues?: Queue[];
  /** A request must arrive within this long (default 30 s): a body that never comes is answered 408. */
  requestTimeoutMs?: number;
  /** An idle connection is closed after this long (default 120 s). */
  connectionTimeoutMs?: number;
  /** Write the answers of one event-loop turn together (default on; plugins/coalesce-writes.ts). */
  coalesceWrites?: boolean;
}

const REQUEST_ID_RE = /^[\w.:-]{1,128}$/;
/** The query of a route that takes none. */
const noQuery = z.strictObject({});

/** Builds the HTTP app from its dependencies; no env, no listen. */
export async function buildApp(deps: AppDeps) {
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit: deps.bodyLimit ?? 1024 * 1024,
    requestTimeout: deps.requestTimeoutMs ?? 30_000,
    connectionTimeout: deps.connectionTimeoutMs ?? 120_000,
    // Given to Node's server at creation too: Node then enforces it (with a headers timeout no
    // longer than it), and looks for requests past it every second instead of every 30 s.
    http: {
      requestTimeout: deps.requestTimeoutMs ?? 30_000,
      connectionsCheckingInterval: Math.min(1000, deps.requestTimeoutMs ?? 30_000),
    },
    trustProxy: deps.trustProxy ? deps.trustProxy.split(',').map((s) => s.trim()) : false,
    requestIdHeader: false,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && REQUEST_ID_RE.test(sent) ? sent : randomUUID();
    },
    logController: new LogController({
      requestIdLogLabel: 'requestId',
      // The per-request "incoming request"/"request completed" lines are info; below that
      // level they are skipped outright instead of being built for a logger that drops them.
      disableRequestLogging: !deps.logger || !['trace', 'debug', 'info'].includes(deps.logger.level),
    }),
    // Refused in the failure envelope by the hook below instead of Fastify's own body.
    return503OnClosing: false,
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  // JSON only: anything else (text/plain included) is 415; a member named twice is refused.
  app.removeContentTypeParser('text/plain');
  strictJsonBodies(app);
  // First of all hooks, so that every answer carries it (a drain's 503 and a CORS preflight included).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // An /api route that takes no query parameter refuses any (400), as unknown body fields are: a
  // spend sent with `?asset=…` (which GET of a budget reads) would otherwise spend the wei budget.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/') && route.schema && !route.schema.querystring)
      route.schema = { ...route.schema, querystring: noQuery };
  });
  // Statuses every route of a kind answers, declared once here rather than in each route's list.
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<number, unknown> | undefined;
    if (!response) return;
    const implicit = implicitFailures([route.method].flat(), route.schema?.headers === idempotencyHeaders);
    for (const status of Object.keys(implicit).map(Number)) response[status] ??= failureEnvelope;
  });

  if (deps.coalesceWrites ?? true) await app.register(coalesceWritesPlugin);
  await app.register(errorsPlugin);
  await app.register(replaySerializationPlugin);
  await app.register(edgePlugin, deps);
  for (const { prefix, plugin } of apiRoutes) {
    await app.register(async (scope) => {
      // A route file holds exactly the routes of its prefix, so a URL has one file to look in.
      scope.addHook('onRoute', (route) => {
        if (route.url !== prefix && !route.url.startsWith(`${prefix}/`))
          throw new Error(`${route.url} is not under ${prefix}: move it to the route file of its prefix`);
      });
      await scope.register(plugin, { services: deps.services });
    });
  }
  // With AUTH off and no admin key the dashboard is anyone's: it may show, not change.
  const dashboardReadOnly = (deps.auth?.mode ?? 'off') === 'off' && !deps.auth?.adminKey;
  await app.register(queueDashboard, {
    queues: deps.queues ?? [],
    readOnly: dashboardReadOnly,
    ping: () => deps.jobs?.ping() ?? Promise.resolve(),
  });
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;

/** The app's dependencies from a process's runtime and configuration. */
export function appDeps(runtime: Runtime, overrides: Partial<AppDeps> = {}): AppDeps {
  const { config } = runtime;
  return {
    services: runtime.services,
    database: runtime.database,
    jobs: runtime.jobs,
    queues: runtime.queues,
    logger: runtime.logger,
    trustProxy: config.TRUST_PROXY,
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
    connectionTimeoutMs: config.HTTP_CONNECTION_TIMEOUT_MS,
    coalesceWrites: config.COALESCE_WRITES,
    ...edgeDeps(config),
    ...overrides,
  };
}
