import type { KeyedJob, Services } from '@vouch/core';
import { rebuildError, refusalOutcome } from '@vouch/core';
import type { DB, Kysely } from '@vouch/db';
import type { RunOutcome } from '@vouch/jobs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { answer, ok } from './http.ts';
import { actorOf } from './plugins/auth.ts';

export const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .optional()
    .meta({ description: 'Makes the request safe to retry: the first answer is stored for 24 h and replayed' }),
});

/**
 * Runs a writing use case under the request's Idempotency-Key, if it has one:
 * the effect and the stored answer commit together; a retry gets the stored answer
 * with `Idempotency-Replayed: true`. Without a key the work runs directly.
 */
export async function idempotent<T>(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  work: (executor?: Kysely<DB>, afterCommit?: (effect: () => void) => void) => Promise<T>,
  statusOf: (value: T) => number = () => 200,
) {
  const key = (request.headers['idempotency-key'] as string | undefined) ?? undefined;
  if (!key) {
    const value = await work();
    reply.code(statusOf(value));
    return ok(value);
  }
  // An organization's own and per route: two organizations never collide on a key, and every
  // key of one organization sees the same stored answers.
  const scope = `${request.method} ${request.routeOptions.url}`;
  const effects: Array<() => void> = [];
  // Whatever this throws committed nothing (a 503, a busy database, a key in use): no effect runs.
  const result = await services.idempotency.execute(
    {
      organizationId: actorOf(request).organizationId,
      scope,
      key,
      // A write without fields takes no body, `null` or `{}` as one request (docs/api.md): a retry
      // sent by another client library must replay, not be refused as another request.
      request: { params: request.params, body: request.body ?? {} },
    },
    statusOf,
    (trx) => work(trx, (effect) => effects.push(effect)),
  );
  // Side effects of the work run only once its transaction has committed, a stored refusal's
  // too (a refused spend stays in the ledger, with its event).
  for (const effect of effects) effect();
  if (result.replayed) reply.header('idempotency-replayed', 'true');
  if (!result.outcome.ok) throw rebuildError(result.outcome);
  if (!result.replayed) {
    reply.code(statusOf(result.value as T));
    return ok(result.value as T);
  }
  reply.code(result.outcome.statusCode);
  return ok(result.outcome.data as T);
}

/**
 * Idempotency-Key on a route whose work a worker does (a queued job). The answer stored under
 * the key is replayed; otherwise `work` queues its job under the key's job id (a retry joins the
 * first request's job, or its kept result), and the worker stores the answer under the key in
 * the transaction of its effect. A refusal made here, before the job is queued, is stored too.
 * The first request claims the key before its job is queued, so another request under the key is
 * refused (422) whenever it comes; a retry of the same request while the job runs waits for that
 * job rather than being refused with IDEMPOTENCY_IN_PROGRESS.
 */
export async function idempotentJob<R>(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  job: { queue: string },
  work: (keyed?: { keyed: KeyedJob; joined: boolean }) => Promise<RunOutcome<R>>,
) {
  const key = (request.headers['idempotency-key'] as string | undefined) ?? undefined;
  if (!key) return answer(reply, await work());
  const organizationId = actorOf(request).organizationId;
  const claim = await services.idempotency.forJob({
    organizationId,
    scope: `${request.method} ${request.routeOptions.url}`,
    key,
    request: { params: request.params, body: request.body ?? {} },
  });
  if (claim.stored) {
    reply.header('idempotency-replayed', 'true');
    if (!claim.stored.ok) throw rebuildError(claim.stored);
    // The job that answered, as the first answer named it (it may be gone from the queue by now).
    if (claim.keyed.claim) reply.header('x-job-id', `${job.queue}-${claim.keyed.claim}`);
    reply.code(claim.stored.statusCode);
    return ok(claim.stored.data as R);
  }
  try {
    return answer(reply, await work(claim));
  } catch (error) {
    // A refusal is the key's answer (the job's own, stored by the worker, is stored again alike);
    // anything else (the queue or the database away, the job failed) gives the claim up.
    const refused = refusalOutcome(error);
    if (refused) await services.idempotency.storeRefusal(organizationId, claim.keyed, refused);
    else await services.idempotency.dropClaim(organizationId, claim.keyed).catch(() => {});
    throw error;
  }
}

/**
 * A replayed answer is what was stored when the request first ran. One stored by an older
 * version may lack a field the route's schema now requires (the stored answers live 24 h across
 * an upgrade); the compiled serializer would refuse it with a 500. Such an answer is sent as it
 * was stored instead: a retry gets exactly the first answer.
 */
export const replaySerializationPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('preSerialization', (request, reply, payload, done) => {
      if (reply.getHeader('idempotency-replayed') !== 'true') return done(null, payload);
      const schema = (request.routeOptions.schema?.response as Record<number, z.ZodType> | undefined)?.[
        reply.statusCode
      ];
      if (schema && !schema.safeParse(payload).success) reply.serializer((data) => JSON.stringify(data));
      done(null, payload);
    });
  },
  { name: 'vouch-replay-serialization' },
);
