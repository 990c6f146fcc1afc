import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** Pages for people (the docs UI and the queue dashboard) load their own scripts, styles and fonts. */
const UI_PREFIXES = ['/docs', '/admin/queues'];
const uiHelmet = {
  contentSecurityPolicy: {
    useDefaults: true,
    // Served over plain HTTP too: upgrading subresource requests to https would break the page.
    directives: { upgradeInsecureRequests: null },
  },
};

/**
 * Security headers on every response (helmet): the JSON API gets a CSP that allows
 * nothing; the two UI pages get helmet's default CSP. CORS only for the listed origins.
 */
export const securityPlugin = fp(
  async (app: FastifyInstance, { corsOrigins }: { corsOrigins?: string[] | undefined }) => {
    // Added before helmet's own onRoute hook, which turns `route.helmet` into the route's config.
    app.addHook('onRoute', (route) => {
      if (route.helmet === undefined && UI_PREFIXES.some((p) => route.url === p || route.url.startsWith(`${p}/`))) {
        route.helmet = uiHelmet;
      }
    });
    await app.register(helmet, {
      contentSecurityPolicy: {
        useDefaults: false,
        directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"] },
      },
    });
    if (corsOrigins?.length) {
      await app.register(cors, {
        origin: corsOrigins,
        methods: ['GET', 'HEAD', 'POST', 'DELETE'],
        allowedHeaders: ['authorization', 'content-type', 'idempotency-key', 'x-request-id'],
        exposedHeaders: [
          'x-request-id',
          'ratelimit',
          'ratelimit-policy',
          'x-ratelimit-limit',
          'x-ratelimit-remaining',
          'x-ratelimit-reset',
          'retry-after',
          'idempotency-replayed',
          'location',
        ],
        maxAge: 600,
      });
    }
  },
  { name: 'vouch-security' },
);
