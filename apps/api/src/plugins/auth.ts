import {
  type Actor,
  DEFAULT_ORGANIZATION,
  type KeyPrincipal,
  type KeysService,
  scopeAllows,
  secretsEqual,
} from '@vouch/core';
import type { ApiKeyScope } from '@vouch/schemas';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sendFailure } from './errors.ts';

export interface AuthOptions {
  /** `on`: API routes need a key with the right scope; `off`: open (key management excepted). */
  mode: 'on' | 'off';
  /** Acts as a key with the admin scope. */
  adminKey?: string | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a caller needs; GET/HEAD default to `read`, every other /api route names its own; `public` needs none. */
    scope?: ApiKeyScope | 'public';
    /** Require the scope even with AUTH=off (key management). */
    alwaysAuthenticate?: boolean;
  }
  interface FastifyRequest {
    /** The key the request presented, when valid. */
    principal: KeyPrincipal | null;
    /** Why a presented key does not count. */
    credentialProblem: 'unknown' | 'expired' | 'revoked' | null;
  }
}

const ADMIN_PRINCIPAL: KeyPrincipal = {
  id: 'admin',
  organizationId: DEFAULT_ORGANIZATION,
  name: 'ADMIN_API_KEY',
  scopes: ['admin'],
  operator: true,
};
const DASHBOARD = '/admin/queues';
const isDashboard = (url: string) => url === DASHBOARD || url.startsWith(`${DASHBOARD}/`);

/**
 * Who a request acts as: its key's organization and the key; the operator (ADMIN_API_KEY) acts
 * in the default organization and may act across organizations. A request without a key reaches
 * a route only with AUTH off, where the API is open to anyone by choice: it acts anonymously with
 * the operator's reach, in the default organization (routes that always authenticate excepted).
 */
export function actorOf(request: FastifyRequest): Actor {
  const principal = request.principal;
  if (!principal) {
    return {
      organizationId: DEFAULT_ORGANIZATION,
      kind: 'anonymous',
      keyId: null,
      operator: true,
      requestId: request.id,
    };
  }
  const operator = principal.operator === true;
  return {
    organizationId: principal.organizationId,
    kind: operator ? 'admin' : 'key',
    keyId: principal.id,
    operator,
    requestId: request.id,
  };
}

/**
 * The scope a route needs, or null when it needs none: GET and HEAD need `read` unless they say
 * otherwise; every other /api route must name its scope (a write that forgot would otherwise be
 * open to any key), checked when the route is registered.
 */
export function requiredScope(url: string, method: string, config: { scope?: ApiKeyScope | 'public' }) {
  if (isDashboard(url)) return 'admin' as const;
  if (config.scope === 'public' || !url.startsWith('/api/')) return null;
  if (config.scope) return config.scope;
  if (method === 'GET' || method === 'HEAD') return 'read' as const;
  throw new Error(`${method} ${url} must name the scope it needs (config.scope)`);
}

/**
 * The secret a request presents: `Authorization: Bearer <key>`, or the password of
 * HTTP Basic so a browser can open the queue dashboard with its own login prompt.
 */
export function presentedSecret(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  // `<scheme> 1*SP <credentials>` (RFC 9110 §11.4): all that follows the spaces is the key, so
  // more than one key is no key of ours (401), never the first of them.
  const space = header.indexOf(' ');
  if (space < 0) return null;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (!value) return null;
  if (scheme === 'bearer') return value;
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return null;
}

/**
 * What a request needs: null when the route is public or unknown (404). The queue dashboard
 * shows and changes every organization's jobs, so it needs the operator's key (ADMIN_API_KEY),
 * not an organization's `admin` key; once that key is set it is needed with AUTH off too (without
 * one, and AUTH off, the dashboard is anyone's, read-only).
 */
export function requirement(request: FastifyRequest, auth: AuthOptions) {
  const url = request.routeOptions.url;
  if (url === undefined) return null;
  const config = request.routeOptions.config;
  const scope = requiredScope(url, request.method, config);
  if (!scope) return null;
  const operator = isDashboard(url);
  const enforced = auth.mode === 'on' || config.alwaysAuthenticate === true || (operator && Boolean(auth.adminKey));
  return { scope, operator, enforced };
}

/** Resolves the presented key (before rate limiting, which counts per key). Refuses nothing. */
export const authenticatePlugin = fp(
  async (app: FastifyInstance, { auth, keys }: { auth: AuthOptions; keys: KeysService }) => {
    app.decorateRequest('principal', null);
    app.decorateRequest('credentialProblem', null);
    // A route that forgot its scope fails the app's start, not a request.
    app.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) requiredScope(route.url, method, route.config ?? {});
    });
    // Callback style: a request without a key (the common case) costs no promise.
    app.addHook('onRequest', (request, _reply, done) => {
      const secret = presentedSecret(request);
      if (!secret) return done();
      // Only /api and the dashboard look at keys: a key sent to a probe costs no lookup.
      const url = request.routeOptions.url;
      if (url === undefined || !(url.startsWith('/api/') || isDashboard(url))) {
        return done();
      }
      if (auth.adminKey && secretsEqual(secret, auth.adminKey)) {
        request.principal = ADMIN_PRINCIPAL;
        return done();
      }
      keys.authenticate(secret).then((result) => {
        if (result.ok) request.principal = result.key;
        else request.credentialProblem = result.reason;
        done();
      }, done);
    });
  },
  { name: 'vouch-authenticate' },
);

function unauthorized(request: FastifyRequest, reply: FastifyReply, message: string) {
  const dashboard = request.routeOptions.url?.startsWith(DASHBOARD);
  reply.header('www-authenticate', dashboard ? 'Basic realm="vouch admin", charset="UTF-8"' : 'Bearer realm="vouch"');
  return sendFailure(reply, request, 'UNAUTHORIZED', message);
}

const problemMessages = {
  unknown: 'the API key is not valid',
  expired: 'the API key has expired',
  revoked: 'the API key has been revoked',
} as const;

/** Refuses a request whose key is missing (401), not valid (401) or lacks the scope (403). */
export const authorizePlugin = fp(
  async (app: FastifyInstance, { auth }: { auth: AuthOptions }) => {
    // Callback style: answering without calling done() ends the request here.
    app.addHook('onRequest', (request, reply, done) => {
      const need = requirement(request, auth);
      if (!need) return done();
      const principal = request.principal;
      // With auth off the API is open to a request without a key; one that presents a valid key
      // acts in that key's organization, and with that key's scopes, not more.
      if (!need.enforced && !principal) return done();
      if (!principal) {
        const problem = request.credentialProblem;
        unauthorized(
          request,
          reply,
          problem ? problemMessages[problem] : 'an API key is required: send Authorization: Bearer <key>',
        );
        return;
      }
      if (!scopeAllows(principal.scopes, need.scope)) {
        sendFailure(reply, request, 'FORBIDDEN', `this API key lacks the ${need.scope} scope`, {
          required: need.scope,
          scopes: principal.scopes,
        });
        return;
      }
      if (need.enforced && need.operator && principal.operator !== true) {
        sendFailure(
          reply,
          request,
          'FORBIDDEN',
          "the queue dashboard shows every organization's jobs: only the operator's key (ADMIN_API_KEY) opens it",
        );
        return;
      }
      done();
    });
  },
  { name: 'vouch-authorize', dependencies: ['vouch-authenticate'] },
);
