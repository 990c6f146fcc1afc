import type { Services } from '@vouch/core';
import {
  agentParams,
  listTransactionsQuery,
  recordBody,
  transactionList,
  transactionRecord,
  transactionStats,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/transactions`: the ledger of recorded transactions. */
export const transactionsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/transactions/:address', {
    schema: {
      operationId: 'listTransactions',
      tags: ['transactions'],
      summary: 'The agent’s recorded transactions, newest recorded first (paginated)',
      params: agentParams,
      querystring: listTransactionsQuery,
      response: responses({ 200: transactionList }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.transactions.list(req.params.address, req.query)),
  });

  app.get('/api/transactions/:address/stats', {
    schema: {
      operationId: 'getTransactionStats',
      tags: ['transactions'],
      summary: 'Counts and volume from the agent’s recorded transactions',
      params: agentParams,
      response: responses({ 200: transactionStats }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.transactions.stats(req.params.address)),
  });

  app.post('/api/transactions/record', {
    config: { scope: 'score' },
    schema: {
      operationId: 'recordTransaction',
      tags: ['transactions'],
      summary: 'Record a transaction (idempotent on agent + txHash); an unknown agent becomes observed',
      body: recordBody,
      headers: idempotencyHeaders,
      response: responses({ 201: transactionRecord, 200: transactionRecord }, { 409: ['TRANSACTION_CONFLICT'] }),
    },
    handler: async (req, reply) => {
      const result = await idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) => services.transactions.record(actorOf(req), req.body, { executor, afterCommit }),
        (value) => (value.created ? 201 : 200),
      );
      return ok(result.data.record);
    },
  });
};
