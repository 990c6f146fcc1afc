import type { Services } from '@vouch/core';
import { approval, approvalList, approvalParams, approvalsQuery, approveBody, denyApprovalBody } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/approvals`: reviews waiting for a human, approved or denied with the `approve` scope. */
export const approvalsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/approvals', {
    schema: {
      operationId: 'listApprovals',
      tags: ['decisions'],
      summary: 'The organization’s approval requests, newest first (?status=pending for the queue)',
      querystring: approvalsQuery,
      response: responses({ 200: approvalList }),
    },
    handler: async (req) => ok(await services.approvals.list(actorOf(req), req.query)),
  });

  app.get('/api/approvals/:id', {
    schema: {
      operationId: 'getApproval',
      tags: ['decisions'],
      summary: 'An approval request and its state',
      params: approvalParams,
      response: responses({ 200: approval }, { 404: ['APPROVAL_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.approvals.get(actorOf(req), req.params.id)),
  });

  app.post('/api/approvals/:id/approve', {
    config: { scope: 'approve' },
    schema: {
      operationId: 'approve',
      tags: ['decisions'],
      summary:
        'Approve a pending review: a one-time grant for its payment, redeemed by POST /api/decisions {approvalId}',
      params: approvalParams,
      body: approveBody.nullish(),
      headers: idempotencyHeaders,
      response: responses({ 200: approval }, { 404: ['APPROVAL_NOT_FOUND'], 409: ['APPROVAL_NOT_PENDING'] }),
    },
    handler: async (req, reply) => {
      await services.approvals.assertNotRequester(actorOf(req), req.params.id);
      return idempotent(services, req, reply, (executor, afterCommit) =>
        services.approvals.approve(actorOf(req), req.params.id, req.body ?? {}, executor, afterCommit),
      );
    },
  });

  app.post('/api/approvals/:id/deny', {
    config: { scope: 'approve' },
    schema: {
      operationId: 'denyApproval',
      tags: ['decisions'],
      summary: 'Deny a pending review; a hold reserved for it is released',
      params: approvalParams,
      body: denyApprovalBody.nullish(),
      headers: idempotencyHeaders,
      response: responses({ 200: approval }, { 404: ['APPROVAL_NOT_FOUND'], 409: ['APPROVAL_NOT_PENDING'] }),
    },
    handler: async (req, reply) => {
      await services.approvals.assertNotRequester(actorOf(req), req.params.id);
      return idempotent(services, req, reply, (executor, afterCommit) =>
        services.approvals.deny(actorOf(req), req.params.id, req.body ?? {}, executor, afterCommit),
      );
    },
  });
};
