import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ApiKeyScope, ErrorCode } from '@vouch/schemas';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { stringify as stringifyYaml } from 'yaml';
import type { RateBucket } from '../rate-limiter.ts';
import { requiredScope } from './auth.ts';

export interface OpenapiOptions {
  version: string;
  /** Requests per minute by bucket, to state on each operation; null when limits are off. */
  limits: Record<RateBucket, number> | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The OpenAPI 3.1 document of every route (built once, on first use). */
    openapiDocument(): Record<string, unknown>;
    /** The same document as JSON or YAML text, serialized once: served as is on every request. */
    openapiText(format: 'json' | 'yaml'): string;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked and amended generically
type Json = Record<string, any>;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options']);

const statusText: Record<string, string> = {
  '200': 'OK',
  '201': 'Created',
  '202': 'Accepted: the job outlasted the wait; poll the Location (GET /api/jobs/{id}) for its result',
  '400': 'Invalid request: VALIDATION_ERROR (with details [{path, message}]) or INVALID_JSON',
  '401': 'UNAUTHORIZED: no API key, or one that is unknown, expired or revoked',
  '403': 'FORBIDDEN: the API key lacks the scope this operation needs',
  '404': 'Not found',
  '409': 'Conflict',
  '413': 'PAYLOAD_TOO_LARGE: the body exceeds 1 MiB',
  '415': 'UNSUPPORTED_MEDIA_TYPE: the body must be application/json',
  '422': 'Refused by a business rule',
  '429': 'RATE_LIMITED: too many requests from this client; retry after Retry-After seconds',
  '500': 'INTERNAL_ERROR: logged with the request id',
  '503': 'SERVICE_UNAVAILABLE: a dependency is down; retry after Retry-After seconds',
};

/** A plausible error code for an example of a failure response. */
function exampleCode(status: string, path: string): ErrorCode {
  switch (status) {
    case '400':
      return 'VALIDATION_ERROR';
    case '401':
      return 'UNAUTHORIZED';
    case '403':
      return 'FORBIDDEN';
    case '404':
      return path.includes('/jobs/') ? 'JOB_NOT_FOUND' : path.includes('{address}') ? 'AGENT_NOT_FOUND' : 'NOT_FOUND';
    case '409':
      if (path.endsWith('/register')) return 'AGENT_ALREADY_REGISTERED';
      if (path.endsWith('/rotate-secret')) return 'WEBHOOK_SECRET_LIMIT';
      if (path === '/api/organizations') return 'ORGANIZATION_EXISTS';
      return path.includes('/transactions/') ? 'TRANSACTION_CONFLICT' : 'IDEMPOTENCY_IN_PROGRESS';
    case '413':
      return 'PAYLOAD_TOO_LARGE';
    case '415':
      return 'UNSUPPORTED_MEDIA_TYPE';
    case '422':
      return path.endsWith('/spend') ? 'BUDGET_EXCEEDED' : 'AGENT_NOT_REGISTERED';
    case '429':
      return 'RATE_LIMITED';
    case '503':
      return 'SERVICE_UNAVAILABLE';
    default:
      return 'INTERNAL_ERROR';
  }
}

const exampleMessages: Partial<Record<ErrorCode, string>> = {
  VALIDATION_ERROR: 'request does not match the schema',
  UNAUTHORIZED: 'an API key is required: send Authorization: Bearer <key>',
  FORBIDDEN: 'this API key lacks the scope this operation needs',
  AGENT_NOT_FOUND: 'agent 0x52908400098527886e0f7030069857d2e4169ee7 is not known',
  JOB_NOT_FOUND: 'no job scores-6f1c2a8e',
  NOT_FOUND: 'not found',
  AGENT_ALREADY_REGISTERED: 'agent 0x52908400098527886e0f7030069857d2e4169ee7 is already registered',
  ORGANIZATION_EXISTS: 'organization acme already exists',
  TRANSACTION_CONFLICT: 'transaction 0xab… is already recorded with different content',
  IDEMPOTENCY_IN_PROGRESS: 'a request with this Idempotency-Key is still being processed; retry shortly',
  PAYLOAD_TOO_LARGE: 'request body exceeds the 1048576-byte limit',
  UNSUPPORTED_MEDIA_TYPE: 'Content-Type must be application/json',
  BUDGET_EXCEEDED: 'spend refused: DAILY_LIMIT',
  AGENT_NOT_REGISTERED: 'agent 0x52908400098527886e0f7030069857d2e4169ee7 has been observed but is not registered',
  RATE_LIMITED: 'rate limit of 100 requests per 60 s exceeded; retry in 17 s',
  SERVICE_UNAVAILABLE: 'a dependency is unavailable; retry shortly',
  INTERNAL_ERROR: 'internal error; quote the requestId when reporting it',
};

function failureExample(status: string, path: string, scope: ApiKeyScope | null | undefined) {
  const code = exampleCode(status, path);
  // The operation's own refusal of a key without its scope, as the authorize hook words it.
  const forbidden = code === 'FORBIDDEN' && scope;
  return {
    success: false,
    error: {
      code,
      message: forbidden
        ? `this API key lacks the ${scope} scope`
        : (exampleMessages[code] ?? code.toLowerCase().replaceAll('_', ' ')),
      ...(code === 'VALIDATION_ERROR' && { details: [{ path: 'body.amount', message: 'must be a decimal integer' }] }),
      ...(forbidden && { details: { required: scope, scopes: scope === 'read' ? [] : ['read'] } }),
      requestId: '6f1c2a8e-3b7d-4e0a-9c55-1d2e3f4a5b6c',
    },
  };
}

/** Drops component schemas nothing refers to (the zod provider emits an input and an output variant of each). */
function pruneSchemas(doc: Json): void {
  const schemas: Json = doc.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
          const name = value.slice('#/components/schemas/'.length);
          if (!used.has(name)) {
            used.add(name);
            visit(schemas[name]);
          }
        } else visit(value);
      }
    }
  };
  visit(doc.paths);
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name];
}

const headerComponents = {
  XRequestId: {
    description: 'The request id (echoed when the request sent a sane one); quote it when reporting a problem',
    schema: { type: 'string' },
  },
  RateLimitPolicy: {
    description: 'The limit and its window, e.g. `100;w=60` (IETF draft)',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'Where the client stands, e.g. `limit=100, remaining=42, reset=17` (IETF draft)',
    schema: { type: 'string' },
  },
  XRateLimitLimit: { description: 'Requests allowed per window', schema: { type: 'integer' } },
  XRateLimitRemaining: { description: 'Requests left in the current window', schema: { type: 'integer' } },
  XRateLimitReset: { description: 'Seconds until the window resets', schema: { type: 'integer' } },
  RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  WWWAuthenticate: { description: 'The authentication scheme expected', schema: { type: 'string' } },
};

const ref = (name: keyof typeof headerComponents) => ({ $ref: `#/components/headers/${name}` });

interface RouteInfo {
  scope: ApiKeyScope | null;
  always: boolean;
  bucket: RateBucket | null;
}

/** Route pattern to OpenAPI path: `/api/agents/:address` → `/api/agents/{address}`. */
function openapiPath(url: string): string {
  return url.replace(/:(\w+)/g, '{$1}');
}

/**
 * Completes what @fastify/swagger generates from the route schemas: a description for
 * every status, the headers every answer carries, an example of every failure, and
 * each operation's scope and rate limit.
 */
function finishDocument(doc: Json, routes: Map<string, RouteInfo>, limits: OpenapiOptions['limits']): Json {
  doc.components = { ...doc.components, headers: headerComponents };
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!METHODS.has(method)) continue;
      const info = routes.get(`${method.toUpperCase()} ${path}`);
      const limit = info?.bucket && limits ? limits[info.bucket] : null;
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        if (!response.description || response.description === 'Default Response') {
          response.description = statusText[status] ?? 'Response';
        }
        response.headers = {
          ...response.headers,
          'X-Request-Id': ref('XRequestId'),
          ...(limit && {
            'RateLimit-Policy': ref('RateLimitPolicy'),
            RateLimit: ref('RateLimit'),
            'X-RateLimit-Limit': ref('XRateLimitLimit'),
            'X-RateLimit-Remaining': ref('XRateLimitRemaining'),
            'X-RateLimit-Reset': ref('XRateLimitReset'),
          }),
          ...((status === '429' || status === '503') && { 'Retry-After': ref('RetryAfter') }),
          ...(status === '401' && { 'WWW-Authenticate': ref('WWWAuthenticate') }),
        };
        const media = response.content?.['application/json'];
        if (media && Number(status) >= 400 && media.example === undefined) {
          media.example = failureExample(status, path, info?.scope);
        }
      }
      const notes: string[] = [];
      if (info?.scope) {
        op['x-required-scope'] = info.scope;
        notes.push(
          info.always
            ? `Needs an API key with the \`${info.scope}\` scope, whatever AUTH is.`
            : `With AUTH=on, needs an API key with the \`${info.scope}\` scope.`,
        );
      } else {
        op.security = [];
      }
      if (limit) {
        op['x-rate-limit'] = { requests: limit, windowSeconds: 60 };
        notes.push(`Rate limit: ${limit} requests per minute per client (API key, else IP address).`);
      }
      if (notes.length) op.description = [op.description, ...notes].filter(Boolean).join('\n\n');
    }
  }
  pruneSchemas(doc);
  return doc;
}

/** @fastify/swagger over the route schemas (zod), served at /openapi.json, and Swagger UI at /docs. */
export const openapiPlugin = fp(
  async (app: FastifyInstance, options: OpenapiOptions) => {
    const routes = new Map<string, RouteInfo>();
    app.addHook('onRoute', (route) => {
      const config = route.config ?? {};
      const url = route.url;
      const api = url.startsWith('/api/');
      const bucket = api && config.rateLimit !== false ? (config.rateLimit ?? 'default') : null;
      for (const method of [route.method].flat()) {
        // The same rule as the authorize hook; the dashboard's pages are not in the document.
        const scope = api ? requiredScope(url, method, config) : null;
        routes.set(`${method} ${openapiPath(url)}`, { scope, always: config.alwaysAuthenticate === true, bucket });
      }
    });

    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Vouch',
          version: options.version,
          description:
            'Trust and spending limits for AI agents identified by EVM addresses. Every answer is an envelope: ' +
            '`{success: true, data}` or `{success: false, error: {code, message, details?, requestId}}`. ' +
            'Amounts are decimal strings in wei; timestamps are unix seconds.',
        },
        tags: [
          { name: 'agents', description: 'Registry, scores and grades' },
          {
            name: 'budgets',
            description: 'Spending limits, the atomic check-and-debit, holds, refunds and the ledger',
          },
          { name: 'decisions', description: 'One answer at the moment of payment: policies, decisions and approvals' },
          { name: 'transactions', description: 'The transaction ledger and its statistics' },
          { name: 'scores', description: 'The score model' },
          { name: 'verification', description: 'Verification runs and sanctions screening' },
          { name: 'jobs', description: 'Queued work' },
          { name: 'events', description: 'The organization’s events, and webhooks that deliver them (docs/events.md)' },
          { name: 'keys', description: 'API keys (admin scope)' },
          { name: 'organizations', description: 'Organizations (the operator) and the audit log (admin scope)' },
          { name: 'operations', description: 'Health, readiness, metrics and this document' },
        ],
        components: {
          securitySchemes: {
            apiKey: {
              type: 'http',
              scheme: 'bearer',
              description:
                'An API key: `Authorization: Bearer vk_…`. Scopes: `read`; `spend`, `manage`, `approve`, `score` (each also reads); `admin` (all).',
            },
          },
        },
        security: [{ apiKey: [] }],
      },
      // Routes of other plugins (the queue dashboard, the docs UI) carry no tags and stay out.
      hideUntagged: true,
      transform: jsonSchemaTransform,
      transformObject: jsonSchemaTransformObject,
    });

    let finished: Json | undefined;
    app.decorate('openapiDocument', () => {
      finished ??= finishDocument(structuredClone(app.swagger() as Json), routes, options.limits);
      return finished;
    });

    // Serializing the document is the expensive part (YAML especially): once per process.
    const texts: Partial<Record<'json' | 'yaml', string>> = {};
    app.decorate('openapiText', (format: 'json' | 'yaml') => {
      texts[format] ??=
        format === 'json' ? JSON.stringify(app.openapiDocument()) : stringifyYaml(app.openapiDocument());
      return texts[format];
    });
    const served: Record<string, ['json' | 'yaml', string]> = {
      '/docs/json': ['json', 'application/json; charset=utf-8'],
      '/docs/yaml': ['yaml', 'application/x-yaml'],
    };

    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { deepLinking: true, displayOperationId: true, defaultModelsExpandDepth: 0 },
      transformSpecification: () => app.openapiDocument(),
      transformSpecificationClone: false,
      // The UI's own /docs/json and /docs/yaml would serialize the document on every request.
      uiHooks: {
        onRequest: (request, reply, done) => {
          const text = served[request.routeOptions.url ?? ''];
          if (!text) return done();
          reply.type(text[1]).send(app.openapiText(text[0]));
        },
      },
    });
  },
  { name: 'vouch-openapi' },
);
