import type { Services } from '@vouch/core';
import { decision, decisionBody, decisionParams } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/decisions`: one answer at the moment of payment, stored with what it saw. */
export const decisionsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/api/decisions', {
    config: { scope: 'spend' },
    schema: {
      operationId: 'decide',
      tags: ['decisions'],
      summary:
        'allow, deny or review, with reasons: score and confidence, sanctions of agent and counterparty, policy, budget; ' +
        'with hold, an allow also holds the amount',
      body: decisionBody,
      headers: idempotencyHeaders,
      response: responses({ 200: decision }),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.decisions.decide(actorOf(req), req.body, executor, afterCommit),
      ),
  });

  app.get('/api/decisions/:id', {
    schema: {
      operationId: 'getDecision',
      tags: ['decisions'],
      summary: 'A stored decision: its inputs, reasons, and the score, list, budget and policy version it saw',
      params: decisionParams,
      response: responses({ 200: decision }, { 404: ['DECISION_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.decisions.get(actorOf(req), req.params.id)),
  });
};
