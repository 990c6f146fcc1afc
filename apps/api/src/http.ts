import type { RunOutcome } from '@vouch/jobs';
import { failureEnvelope, successEnvelope } from '@vouch/schemas';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';

/** The success envelope. */
export function ok<T>(data: T): { success: true; data: T } {
  return { success: true, data };
}

/**
 * Response schemas of a route: the success envelope for each success status and
 * the failure envelope for each listed error status (these feed the OpenAPI document).
 */
export function responses(success: Record<number, z.ZodType>, errors: number[]) {
  const map: Record<number, z.ZodType> = {};
  for (const [status, schema] of Object.entries(success)) map[Number(status)] = successEnvelope(schema);
  // 401/403: any route may refuse a missing or insufficient API key when AUTH is on.
  for (const status of new Set([...errors, 400, 401, 403, 429, 500, 503])) map[status] = failureEnvelope;
  return map;
}

/** Methods whose requests may carry a body: Fastify parses it before any route runs. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Failure statuses a route answers whatever its schema lists: a request whose method may carry
 * a body has it parsed first (413 above the limit, 415 for another type), a route that takes an
 * Idempotency-Key may find the key in use (409) or used for another request (422).
 */
export function implicitFailures(methods: readonly string[], idempotent: boolean): number[] {
  return [...(methods.some((m) => BODY_METHODS.has(m)) ? [413, 415] : []), ...(idempotent ? [409, 422] : [])];
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
