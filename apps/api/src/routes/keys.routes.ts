import type { Services } from '@vouch/core';
import { apiKey, apiKeyList, apiKeyParams, createApiKeyBody, createdApiKey, noBody } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

/** Key management needs the admin scope whatever AUTH says: a key minted while auth is off would outlive that. */
const adminOnly = { scope: 'admin', alwaysAuthenticate: true } as const;

/** `/api/keys`: API key management (admin). */
export const keysRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/api/keys', {
    config: adminOnly,
    schema: {
      operationId: 'createApiKey',
      tags: ['keys'],
      summary:
        'Create an API key in the caller’s organization (the operator: any); the secret is in this response only',
      body: createApiKeyBody,
      response: responses({ 201: createdApiKey }),
    },
    handler: async (req, reply) => {
      reply.code(201);
      return ok(await services.keys.create(actorOf(req), req.body));
    },
  });

  app.get('/api/keys', {
    config: adminOnly,
    schema: {
      operationId: 'listApiKeys',
      tags: ['keys'],
      summary:
        'The organization’s API keys (every organization’s for the operator) with scopes and status, without secrets',
      response: responses({ 200: apiKeyList }),
    },
    handler: async (req) => ok(await services.keys.list(actorOf(req))),
  });

  app.delete('/api/keys/:id', {
    config: adminOnly,
    schema: {
      operationId: 'revokeApiKey',
      tags: ['keys'],
      summary: 'Revoke an API key (at once on this replica, within seconds on the others)',
      params: apiKeyParams,
      body: noBody,
      response: responses({ 200: apiKey }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.keys.revoke(actorOf(req), req.params.id)),
  });
};
