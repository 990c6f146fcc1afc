import type { Services } from '@vouch/core';
import {
  agentParams,
  amountBody,
  assetQuery,
  authorization,
  authorizationList,
  authorizationParams,
  authorizationResult,
  authorizationState,
  authorizeBody,
  budget,
  budgetCheck,
  captureBody,
  captureResult,
  listAuthorizationsQuery,
  listSpendsQuery,
  noBody,
  refundBody,
  refundResult,
  setBudgetBody,
  spendList,
  spendParams,
  spendResult,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { bypassesCache, ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/budgets`: limits, checks, atomic spends, holds (authorize → capture/void), refunds and the ledger. */
export const budgetsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/budgets/:address', {
    schema: {
      operationId: 'getBudget',
      tags: ['budgets'],
      summary: 'Limits, and what is spent and held in the current UTC day and month (?asset= for a per-asset budget)',
      params: agentParams,
      querystring: assetQuery,
      response: responses({ 200: budget }, { 404: ['BUDGET_NOT_FOUND', 'AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.budgets.get(actorOf(req), req.params.address, req.query.asset)),
  });

  app.post('/api/budgets/:address/set', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'setBudget',
      tags: ['budgets'],
      summary: 'Set limits (first set: dailyLimit and monthlyLimit; perTxLimit defaults to dailyLimit)',
      params: agentParams,
      body: setBudgetBody,
      headers: idempotencyHeaders,
      response: responses({ 200: budget }, { 404: ['AGENT_NOT_FOUND'], 422: ['AGENT_NOT_REGISTERED'] }),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.budgets.set(actorOf(req), req.params.address, req.body, executor, afterCommit),
      ),
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
      response: responses({ 200: budgetCheck }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) =>
      ok(await services.budgets.check(actorOf(req), req.params.address, req.body, { fresh: bypassesCache(req) })),
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
      response: responses(
        { 200: spendResult },
        { 404: ['AGENT_NOT_FOUND'], 422: ['BUDGET_EXCEEDED', 'BUDGET_NOT_SET', 'AGENT_NOT_REGISTERED'] },
      ),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.budgets.spend(actorOf(req), req.params.address, req.body, executor, afterCommit),
      ),
  });

  app.post('/api/budgets/:address/authorizations', {
    config: { scope: 'spend' },
    schema: {
      operationId: 'authorize',
      tags: ['budgets'],
      summary: 'Hold an amount against every limit (atomic) until it is captured, voided or expires',
      params: agentParams,
      body: authorizeBody,
      headers: idempotencyHeaders,
      response: responses(
        { 201: authorizationResult },
        { 404: ['AGENT_NOT_FOUND'], 422: ['BUDGET_EXCEEDED', 'BUDGET_NOT_SET', 'AGENT_NOT_REGISTERED'] },
      ),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) =>
          services.authorizations.authorize(actorOf(req), req.params.address, req.body, executor, afterCommit),
        () => 201,
      ),
  });

  app.get('/api/budgets/:address/authorizations', {
    schema: {
      operationId: 'listAuthorizations',
      tags: ['budgets'],
      summary: 'The agent’s holds in this organization, newest first (paginated, filter by status)',
      params: agentParams,
      querystring: listAuthorizationsQuery,
      response: responses({ 200: authorizationList }),
    },
    handler: async (req) => ok(await services.authorizations.list(actorOf(req), req.params.address, req.query)),
  });

  app.get('/api/budgets/:address/authorizations/:id', {
    schema: {
      operationId: 'getAuthorization',
      tags: ['budgets'],
      summary: 'A hold, its state, and what the sanctions screen would find if it were captured now',
      params: authorizationParams,
      response: responses({ 200: authorizationState }, { 404: ['AUTHORIZATION_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.authorizations.get(actorOf(req), req.params.address, req.params.id)),
  });

  app.post('/api/budgets/:address/authorizations/:id/capture', {
    config: { scope: 'spend' },
    schema: {
      operationId: 'capture',
      tags: ['budgets'],
      summary: 'Spend all or part of a hold (at most what it holds); the rest is released',
      params: authorizationParams,
      body: captureBody.nullish(),
      headers: idempotencyHeaders,
      response: responses(
        { 200: captureResult },
        {
          404: ['AUTHORIZATION_NOT_FOUND'],
          409: ['AUTHORIZATION_NOT_HELD'],
          422: ['CAPTURE_EXCEEDS_HOLD', 'BUDGET_EXCEEDED'],
        },
      ),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.authorizations.capture(
          actorOf(req),
          req.params.address,
          req.params.id,
          req.body ?? {},
          executor,
          afterCommit,
        ),
      ),
  });

  app.post('/api/budgets/:address/authorizations/:id/void', {
    config: { scope: 'spend' },
    schema: {
      operationId: 'void',
      tags: ['budgets'],
      summary: 'Release a hold without spending it',
      params: authorizationParams,
      body: noBody,
      headers: idempotencyHeaders,
      response: responses(
        { 200: authorization },
        { 404: ['AUTHORIZATION_NOT_FOUND'], 409: ['AUTHORIZATION_NOT_HELD'] },
      ),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.authorizations.void(actorOf(req), req.params.address, req.params.id, executor, afterCommit),
      ),
  });

  app.get('/api/budgets/:address/spends', {
    schema: {
      operationId: 'listSpends',
      tags: ['budgets'],
      summary: 'The ledger: spends, captures and refused attempts in this organization, newest first (paginated)',
      params: agentParams,
      querystring: listSpendsQuery,
      response: responses({ 200: spendList }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.budgets.listSpends(actorOf(req), req.params.address, req.query)),
  });

  app.post('/api/budgets/:address/spends/:spendId/refund', {
    // Giving budget back is the budget's manager's, not a spender's: a spend key could otherwise refund and spend again.
    config: { scope: 'manage' },
    schema: {
      operationId: 'refund',
      tags: ['budgets'],
      summary:
        'Refund all or part of a spend; the budget gets it back in the windows the spend counted in, while current',
      params: spendParams,
      body: refundBody.nullish(),
      headers: idempotencyHeaders,
      response: responses({ 201: refundResult }, { 404: ['SPEND_NOT_FOUND'], 422: ['REFUND_NOT_ALLOWED'] }),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) =>
          services.budgets.refund(
            actorOf(req),
            req.params.address,
            req.params.spendId,
            req.body ?? {},
            executor,
            afterCommit,
          ),
        () => 201,
      ),
  });
};
