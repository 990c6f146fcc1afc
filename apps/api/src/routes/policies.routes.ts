import type { Services } from '@vouch/core';
import { noBody, policy, policyBody, policyQuery, policyVersions, policyVersionsQuery } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/policies/default`: the organization's default rule set, for agents without one of their own. */
export const policiesRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/policies/default', {
    schema: {
      operationId: 'getDefaultPolicy',
      tags: ['decisions'],
      summary: 'The organization’s default policy (?version= for an earlier one)',
      querystring: policyQuery,
      response: responses({ 200: policy }, { 404: ['POLICY_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.policies.get(actorOf(req), null, req.query.version)),
  });

  app.get('/api/policies/default/versions', {
    schema: {
      operationId: 'listDefaultPolicyVersions',
      tags: ['decisions'],
      summary: 'The versions of the default policy, newest first, a page at a time',
      querystring: policyVersionsQuery,
      response: responses({ 200: policyVersions }),
    },
    handler: async (req) => ok(await services.policies.versions(actorOf(req), null, req.query)),
  });

  app.put('/api/policies/default', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'setDefaultPolicy',
      tags: ['decisions'],
      summary: 'Replace the default policy (a new version): ordered rules, first match wins, deny when none matches',
      body: policyBody,
      response: responses({ 200: policy }, { 409: ['POLICY_VERSION_CONFLICT'] }),
    },
    handler: async (req) => ok(await services.policies.put(actorOf(req), null, req.body)),
  });

  app.delete('/api/policies/default', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'deleteDefaultPolicy',
      tags: ['decisions'],
      summary: 'Delete the default policy (a version without rules; the history stays)',
      body: noBody,
      response: responses({ 200: policy }, { 404: ['POLICY_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.policies.remove(actorOf(req), null)),
  });
};
