import type { Services } from '@vouch/core';
import { agentParams, amountBody, budget, budgetCheck, setBudgetBody, spendResult } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { bypassesCache, ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/budgets`: limits, checks and atomic spends. */
export const budgetsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/budgets/:address', {
    schema: {
      operationId: 'getBudget',
      tags: ['budgets'],
      summary: 'Limits and what has been spent in the current UTC day and month',
      params: agentParams,
      response: responses({ 200: budget }, [404]),
    },
    handler: async (req) => ok(await services.budgets.get(actorOf(req), req.params.address)),
  });

  app.post('/api/budgets/:address/set', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'setBudget',
      tags: ['budgets'],
      summary: 'Set limits (first set: dailyLimit and monthlyLimit; perTxLimit defaults to dailyLimit)',
      params: agentParams,
      body: setBudgetBody,
      response: responses({ 200: budget }, [404, 413, 415, 422]),
    },
    handler: async (req) => ok(await services.budgets.set(actorOf(req), req.params.address, req.body)),
  });

  app.post('/api/budgets/:address/check', {
    // Changes nothing: a read key may use it.
    config: { scope: 'read' },
    schema: {
      operationId: 'checkBudget',
      tags: ['budgets'],
      summary: 'Would this spend be allowed now? Changes nothing',
      params: agentParams,
      body: amountBody,
      response: responses({ 200: budgetCheck }, [404, 413, 415]),
    },
    handler: async (req) =>
      ok(
        await services.budgets.check(actorOf(req), req.params.address, req.body.amount, { fresh: bypassesCache(req) }),
      ),
  });

  app.post('/api/budgets/:address/spend', {
    config: { scope: 'spend' },
    schema: {
      operationId: 'spend',
      tags: ['budgets'],
      summary: 'Debit the budget if every limit holds (atomic); a refusal is 422 BUDGET_EXCEEDED',
      params: agentParams,
      body: amountBody,
      headers: idempotencyHeaders,
      response: responses({ 200: spendResult }, [404, 409, 413, 415, 422]),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.budgets.spend(actorOf(req), req.params.address, req.body.amount, executor, afterCommit),
      ),
  });
};
