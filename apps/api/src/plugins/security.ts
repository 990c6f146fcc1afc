import type { IncomingMessage, ServerResponse } from 'node:http';
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';
import { sendFailure } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Security headers of this route's answers (set by the security plugin from the route's URL). */
    securityHeaders?: Readonly<Record<string, string>>;
  }
}

/** Pages for people (the docs UI and the queue dashboard) load their own scripts, styles and fonts. */
const UI_PREFIXES = ['/docs', '/admin/queues'];

/**
 * JSON answers: the headers the OWASP REST Security Cheat Sheet lists for APIs (a CSP
 * that allows nothing, no framing, nosniff, HSTS, no referrer). Helmet's headers that
 * only mean something for HTML documents a browser renders (cross-origin opener and
 * resource policies, origin-agent clustering, DNS prefetch, IE download and Flash/PDF
 * policies, the retired XSS auditor) are left off; docs/edge.md lists both sets.
 */
const apiHelmet: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"] },
  },
  xFrameOptions: { action: 'deny' },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
};
/** The UI pages: helmet's default CSP. */
const uiHelmet: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: true,
    // Served over plain HTTP too: upgrading subresource requests to https would break the page.
    directives: { upgradeInsecureRequests: null },
  },
};

/**
 * The headers helmet sets for these options. Our options hold no per-request values
 * (no nonces, no directive functions), so helmet runs once here against a recording
 * response instead of on every request.
 */
export function helmetHeaders(options: HelmetOptions): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  };
  let failure: unknown;
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    failure = err;
  });
  if (failure) throw failure;
  return Object.freeze(headers);
}

const isUi = (url: string) => UI_PREFIXES.some((p) => url === p || url.startsWith(`${p}/`));

/**
 * Security headers on every response (helmet): the JSON API gets a CSP that allows
 * nothing; the two UI pages get helmet's default CSP. CORS only for the listed origins.
 */
export const securityPlugin = fp(
  async (app: FastifyInstance, { corsOrigins }: { corsOrigins?: string[] | undefined }) => {
    // API answers are per-caller data: no cache may keep them (OWASP REST Security Cheat Sheet).
    const api = Object.freeze({ ...helmetHeaders(apiHelmet), 'cache-control': 'no-store' });
    const ui = helmetHeaders(uiHelmet);
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config, securityHeaders: isUi(route.url) ? ui : api };
    });
    // Answers without a route (404s, early framework errors) get the API's headers.
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(request.routeOptions.config.securityHeaders ?? api);
      done();
    });
    if (corsOrigins?.length) {
      // An OPTIONS without Origin or Access-Control-Request-Method is no preflight (a scanner's, a
      // curl): @fastify/cors refuses it with a bare text body; refused here first, in the envelope.
      app.addHook('onRequest', (request, reply, done) => {
        const { origin, 'access-control-request-method': method } = request.headers;
        if (request.method !== 'OPTIONS' || (origin && method)) return done();
        sendFailure(
          reply,
          request,
          'VALIDATION_ERROR',
          'an OPTIONS request is a CORS preflight: it needs Origin and Access-Control-Request-Method',
        );
      });
      await app.register(cors, {
        origin: corsOrigins,
        methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
        allowedHeaders: ['authorization', 'cache-control', 'content-type', 'idempotency-key', 'x-request-id'],
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
          // A job answered 200 names its id only here (docs/jobs.md): a browser client needs it too.
          'x-job-id',
        ],
        maxAge: 600,
      });
    }
  },
  { name: 'vouch-security' },
);
