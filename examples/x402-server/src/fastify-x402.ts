import {
  FacilitatorResponseError,
  type HTTPAdapter,
  type HTTPProcessResult,
  type HTTPRequestContext,
  SETTLEMENT_OVERRIDES_HEADER,
  withPrivateCacheControl,
  type x402HTTPResourceServer,
} from '@x402/core/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * x402 for Fastify. The x402 packages ship middleware for Express, Hono and Next.js, not for
 * Fastify; this follows what those do with the framework-agnostic `x402HTTPResourceServer`
 * (@x402/core/http): `processHTTPRequest` before the handler (402 with PAYMENT-REQUIRED, or a
 * verified payment), then `processSettlement` once the handler answered, adding PAYMENT-RESPONSE
 * — or cancelling the verified payment when the handler failed (its hooks void the hold).
 * Fastify's lifecycle gives the two points: `preHandler` and `onSend`.
 */

type Verified = Extract<HTTPProcessResult, { type: 'payment-verified' }>;

declare module 'fastify' {
  interface FastifyRequest {
    x402?: { context: HTTPRequestContext; verified: Verified };
  }
}

class FastifyAdapter implements HTTPAdapter {
  constructor(private readonly req: FastifyRequest) {}
  getHeader(name: string) {
    const value = this.req.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  }
  getMethod() {
    return this.req.method;
  }
  getPath() {
    return this.req.url.split('?')[0] ?? '/';
  }
  getUrl() {
    return `${this.req.protocol}://${this.req.host}${this.req.url}`;
  }
  getAcceptHeader() {
    return this.req.headers.accept ?? '';
  }
  getUserAgent() {
    return this.req.headers['user-agent'] ?? '';
  }
  getQueryParams() {
    return (this.req.query ?? {}) as Record<string, string | string[]>;
  }
  getQueryParam(name: string) {
    return this.getQueryParams()[name];
  }
  getBody() {
    return this.req.body;
  }
}

function send(
  reply: FastifyReply,
  response: { status: number; headers: Record<string, string>; body?: unknown; isHtml?: boolean },
) {
  reply.code(response.status).headers(response.headers);
  return response.isHtml ? reply.type('text/html').send(String(response.body ?? '')) : reply.send(response.body ?? {});
}

/** Protects the routes `httpServer` was configured with; call after `httpServer.initialize()`. */
export function x402Payments(app: FastifyInstance, httpServer: x402HTTPResourceServer): void {
  app.addHook('preHandler', async (req, reply) => {
    const adapter = new FastifyAdapter(req);
    const context: HTTPRequestContext = {
      adapter,
      path: adapter.getPath(),
      method: req.method,
      paymentHeader: adapter.getHeader('payment-signature') ?? adapter.getHeader('x-payment'),
    };
    if (!httpServer.requiresPayment(context)) return;
    let result: HTTPProcessResult;
    try {
      result = await httpServer.processHTTPRequest(context);
    } catch (error) {
      if (error instanceof FacilitatorResponseError) return reply.code(502).send({ error: error.message });
      throw error;
    }
    if (result.type === 'payment-error') return send(reply, result.response);
    if (result.type === 'payment-verified') req.x402 = { context, verified: result };
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const paid = req.x402;
    if (!paid) return payload;
    req.x402 = undefined; // settle once, whatever is sent next
    const { verified, context } = paid;
    const overrides = reply.getHeader(SETTLEMENT_OVERRIDES_HEADER);
    reply.removeHeader(SETTLEMENT_OVERRIDES_HEADER);
    if (reply.statusCode >= 400) {
      // The resource was not served: nothing is settled (the hooks release the hold).
      const cancelled = await verified.cancellationDispatcher.cancel({
        reason: 'handler_failed',
        responseStatus: reply.statusCode,
      });
      const headers = httpServer.createFailurePathSettlementHeaders(
        cancelled,
        verified.beforeHandlerSettlement,
        verified.paymentPayload,
        String(reply.getHeader('cache-control') ?? ''),
      );
      if (headers) reply.headers(headers);
      return payload;
    }
    const body = typeof payload === 'string' || Buffer.isBuffer(payload) ? Buffer.from(payload) : Buffer.alloc(0);
    const responseHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(reply.getHeaders()))
      if (value !== undefined) responseHeaders[name] = String(value);
    if (typeof overrides === 'string') responseHeaders[SETTLEMENT_OVERRIDES_HEADER] = overrides;
    const settled = await httpServer.processSettlement(
      verified.paymentPayload,
      verified.paymentRequirements,
      verified.declaredExtensions,
      { request: context, responseBody: body, responseHeaders },
      undefined,
      verified.beforeHandlerSettlement,
    );
    if (!settled.success) {
      reply.code(settled.response.status).headers(settled.response.headers).type('application/json');
      return JSON.stringify(settled.response.body ?? {});
    }
    reply.headers(settled.headers);
    reply.header('cache-control', withPrivateCacheControl(String(reply.getHeader('cache-control') ?? '') || null));
    return payload;
  });
}
