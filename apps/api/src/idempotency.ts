import type { Services } from '@vouch/core';
import { rebuildError } from '@vouch/core';
import type { DB, Kysely } from '@vouch/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { ok } from './http.ts';
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
