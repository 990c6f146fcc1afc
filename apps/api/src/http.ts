import type { RunOutcome } from '@vouch/jobs';
import { type ErrorCode, failureEnvelope, successEnvelope } from '@vouch/schemas';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';

/** The success envelope. */
export function ok<T>(data: T): { success: true; data: T } {
  return { success: true, data };
}

/**
 * The codes a route answers with each of its own failure statuses (404, 409, 422, …), the code
 * to show in its example first: clients branch on `error.code`, so the OpenAPI document must
 * name the ones each status can carry, not just the status.
 */
export type Failures = Partial<Record<number, readonly ErrorCode[]>>;

/** Where responses() keeps a route's declared codes: a symbol, so Fastify and the schema tools never see it. */
const declared = Symbol('declared failure codes');

type ResponseMap = Record<number, z.ZodType> & { [declared]?: Failures };

/** The statuses any route may answer, whatever it declares, each with its one fixed code. */
const genericCodes: Record<number, readonly ErrorCode[]> = {
  400: ['VALIDATION_ERROR'],
  401: ['UNAUTHORIZED'],
  403: ['FORBIDDEN'],
  413: ['PAYLOAD_TOO_LARGE'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
  429: ['RATE_LIMITED'],
  500: ['INTERNAL_ERROR'],
  503: ['SERVICE_UNAVAILABLE'],
};

// 401/403: any route may refuse a missing or insufficient API key when AUTH is on; any may meet a
// bad parameter, the rate limit, an outage or a bug.
const ALWAYS = [400, 401, 403, 429, 500, 503];

/**
 * Response schemas of a route: the success envelope for each success status, the failure
 * envelope for each generic status and each of `failures`, whose codes are kept for the OpenAPI
 * document.
 */
export function responses(success: Record<number, z.ZodType>, failures: Failures = {}): Record<number, z.ZodType> {
  const map: ResponseMap = {};
  for (const [status, schema] of Object.entries(success)) map[Number(status)] = successEnvelope(schema);
  for (const status of new Set([...Object.keys(failures).map(Number), ...ALWAYS])) map[status] = failureEnvelope;
  // Enumerable, so that a route spreading this map into its own keeps the codes.
  map[declared] = failures;
  return map;
}

/** Methods whose requests may carry a body: Fastify parses it before any route runs. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Failures a route answers whatever its schema lists: a request whose method may carry a body
 * has it parsed first (400 if it is not JSON, 413 above the limit, 415 for another type), a route
 * that takes an Idempotency-Key may find the key in use (409) or used for another request (422).
 */
export function implicitFailures(methods: readonly string[], idempotent: boolean): Failures {
  return {
    ...(methods.some((m) => BODY_METHODS.has(m)) && {
      400: ['INVALID_JSON'],
      413: ['PAYLOAD_TOO_LARGE'],
      415: ['UNSUPPORTED_MEDIA_TYPE'],
    }),
    ...(idempotent && { 409: ['IDEMPOTENCY_IN_PROGRESS'], 422: ['IDEMPOTENCY_KEY_REUSED'] }),
  };
}

/**
 * Every failure status of a route with all the codes it can carry: the generic code first, else
 * the route's declared ones, then the implicit ones. A status the route lists without declaring
 * its codes (or a schema not built by responses()) has only what is known of it, maybe nothing.
 */
export function failureCodes(
  response: Record<number, unknown>,
  methods: readonly string[],
  idempotent: boolean,
): Record<number, ErrorCode[]> {
  const own = (response as ResponseMap)[declared] ?? {};
  const implicit = implicitFailures(methods, idempotent);
  const statuses = new Set([...Object.keys(response), ...Object.keys(implicit)].map(Number).filter((s) => s >= 400));
  const codes: Record<number, ErrorCode[]> = {};
  for (const status of [...statuses].sort((a, b) => a - b)) {
    codes[status] = [
      ...new Set([...(genericCodes[status] ?? []), ...(own[status] ?? []), ...(implicit[status] ?? [])]),
    ];
  }
  return codes;
}

/**
 * A finished job answers 200 with its result; a wait that ran out answers 202 with the job id.
 * Both carry the job id in `X-Job-Id`, so a 200 can be looked up later at /api/jobs/:id too.
 */
export function answer<R>(reply: FastifyReply, outcome: RunOutcome<R>) {
  reply.header('x-job-id', outcome.jobId);
  if (outcome.state === 'pending') {
    reply.code(202).header('location', `/api/jobs/${outcome.jobId}`);
    return ok({ jobId: outcome.jobId, status: outcome.status });
  }
  return ok(outcome.result);
}

/** `Cache-Control: no-cache` (or `no-store`) on a read or a check: answer from the database, not the read cache. */
export function bypassesCache(request: FastifyRequest): boolean {
  const value = request.headers['cache-control'];
  return typeof value === 'string' && /\bno-(cache|store)\b/i.test(value);
}
