import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { ApiKeyScope, ErrorCode } from '@vouch/schemas';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { stringify as stringifyYaml } from 'yaml';
import { failureCodes } from '../http.ts';
import { idempotencyHeaders } from '../idempotency.ts';
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
};

/** What a failure status means; its description adds the codes the operation answers it with. */
const failureText: Record<string, string> = {
  '400': "the request is invalid; a VALIDATION_ERROR's details list [{path, message}]",
  '401': 'no API key, or one that is unknown, expired or revoked',
  '403': 'the API key lacks the scope this operation needs, or may not act on this resource',
  '404': 'not found',
  '409': 'conflicts with the current state',
  '410': 'gone',
  '413': 'the body exceeds 1 MiB',
  '415': 'the body must be application/json',
  '422': 'refused by a business rule',
  '429': 'too many requests from this client; retry after Retry-After seconds',
  '500': 'logged with the request id',
  '503': 'a dependency is down; retry after Retry-After seconds',
};

/** `CODE, CODE: what the status means`: the codes a client may branch on, first the one shown in the example. */
function failureDescription(status: string, codes: readonly ErrorCode[]): string {
  const text = failureText[status] ?? 'failure';
  return codes.length ? `${codes.join(', ')}: ${text}` : text;
}

const AGENT = '0x52908400098527886e0f7030069857d2e4169ee7';

/** Each code's message as the service words it, for the examples. */
const exampleMessages: Partial<Record<ErrorCode, string>> = {
  VALIDATION_ERROR: 'request does not match the schema',
  INVALID_JSON: 'request body is not valid JSON',
  UNAUTHORIZED: 'an API key is required: send Authorization: Bearer <key>',
  FORBIDDEN: 'this API key lacks the scope this operation needs',
  AGENT_NOT_FOUND: `agent ${AGENT} is not known`,
  BUDGET_NOT_FOUND: `agent ${AGENT} has no budget`,
  JOB_NOT_FOUND: 'job scores-6f1c2a8e is not known (finished jobs are kept for a limited time)',
  NOT_FOUND: 'what the request names is not known in this organization',
  AUTHORIZATION_NOT_FOUND: 'no authorization 42 of this agent in this organization',
  SPEND_NOT_FOUND: 'no spend 1042 of this agent in this organization',
  DECISION_NOT_FOUND: 'no decision 01936f3e-8a2b-7c4d-9e5f-6a7b8c9d0e1f in this organization',
  APPROVAL_NOT_FOUND: 'no approval 17 in this organization',
  POLICY_NOT_FOUND: `agent ${AGENT} has no policy`,
  AGENT_ALREADY_REGISTERED: `agent ${AGENT} is already registered`,
  ORGANIZATION_EXISTS: 'organization acme already exists',
  TRANSACTION_CONFLICT: 'transaction 0xab… is already recorded with different content',
  IDEMPOTENCY_IN_PROGRESS: 'a request with this Idempotency-Key is still being processed; retry shortly',
  AUTHORIZATION_NOT_HELD: 'authorization 42 is captured, not held',
  APPROVAL_NOT_PENDING: 'approval 17 is approved, not pending',
  POLICY_VERSION_CONFLICT: `agent ${AGENT}'s policy is at version 4, not 3`,
  WEBHOOK_DISABLED: 'webhook wh_3f9a1c0e5b7d2a64 is disabled; turn it on with PATCH {"enabled": true} first',
  WEBHOOK_SECRET_LIMIT:
    'webhook wh_3f9a1c0e5b7d2a64 has 5 previous secrets still signing deliveries: rotate with {"previousSecretExpiresIn": 0} to stop them now, or later',
  WEBHOOK_LIMIT: 'the organization has 100 webhook endpoints, the most it may have: delete one first',
  PAYLOAD_TOO_LARGE: 'request body exceeds the 1048576-byte limit',
  UNSUPPORTED_MEDIA_TYPE: 'Content-Type must be application/json',
  BUDGET_EXCEEDED: 'spend refused: DAILY_LIMIT',
  BUDGET_NOT_SET: `agent ${AGENT} has no budget; set one before spending`,
  AGENT_NOT_REGISTERED: `agent ${AGENT} has been observed but is not registered`,
  ERC8004_IDENTITY_NOT_FOUND: `no ERC-8004 identity is indexed for ${AGENT} (its agentWallet, or the one identity it owns)`,
  ERC8004_FEEDBACK_REFUSED: 'the Reputation Registry refuses it: self-feedback is not allowed',
  IDEMPOTENCY_KEY_REUSED: 'this Idempotency-Key was used with a different request',
  CAPTURE_EXCEEDS_HOLD: 'a capture of 2000 exceeds the 1000 held',
  REFUND_NOT_ALLOWED: 'refund refused: the spend is already refunded in full',
  RATE_LIMITED: 'rate limit of 100 requests per 60 s exceeded; retry in 17 s',
  SERVICE_UNAVAILABLE: 'a dependency is unavailable; retry shortly',
  INTERNAL_ERROR: 'internal error; quote the requestId when reporting it',
};

function failureExample(code: ErrorCode, scope: ApiKeyScope | null | undefined) {
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

/** A failure response names the codes it can carry, in its description and `x-error-codes`; its example shows the first. */
function describeFailure(response: Json, status: string, codes: ErrorCode[], scope: ApiKeyScope | null | undefined) {
  response.description = failureDescription(status, codes);
  response['x-error-codes'] = codes;
  const media = response.content?.['application/json'];
  const [first] = codes;
  if (media && first && media.example === undefined) media.example = failureExample(first, scope);
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
  /** The codes of each failure status (http.ts `failureCodes`). */
  failures: Record<number, ErrorCode[]>;
}

/** Route pattern to OpenAPI path: `/api/agents/:address` → `/api/agents/{address}`. */
function openapiPath(url: string): string {
  return url.replace(/:(\w+)/g, '{$1}');
}

/**
 * Completes what @fastify/swagger generates from the route schemas: a description for
 * every status, the headers every answer carries, the codes of every failure with an
 * example, and each operation's scope and rate limit.
 */
function finishDocument(doc: Json, routes: Map<string, RouteInfo>, limits: OpenapiOptions['limits']): Json {
  doc.components = { ...doc.components, headers: headerComponents };
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!METHODS.has(method)) continue;
      const info = routes.get(`${method.toUpperCase()} ${path}`);
      const limit = info?.bucket && limits ? limits[info.bucket] : null;
      // The authorize hook never looks at the key of an operation open to all: it refuses none.
      if (!info?.scope) for (const status of ['401', '403']) delete op.responses?.[status];
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        if (Number(status) >= 400) {
          describeFailure(response, status, info?.failures[Number(status)] ?? [], info?.scope);
        } else if (!response.description || response.description === 'Default Response') {
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
      const methods = [route.method].flat();
      const failures = failureCodes(
        (route.schema?.response ?? {}) as Record<number, unknown>,
        methods,
        route.schema?.headers === idempotencyHeaders,
      );
      for (const method of methods) {
        // The same rule as the authorize hook; the dashboard's pages are not in the document.
        const scope = api ? requiredScope(url, method, config) : null;
        routes.set(`${method} ${openapiPath(url)}`, {
          scope,
          always: config.alwaysAuthenticate === true,
          bucket,
          failures,
        });
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
