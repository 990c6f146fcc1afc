import type { Services } from '@vouch/core';
import {
  createOrganizationBody,
  organization,
  organizationList,
  organizationParams,
  updateOrganizationBody,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

/** Organizations are administered with the admin scope whatever AUTH says; creating and changing them is the operator's. */
const adminOnly = { scope: 'admin', alwaysAuthenticate: true } as const;

/** `/api/organizations`: the tenants. The operator (ADMIN_API_KEY) creates them; an organization's admin reads its own. */
export const organizationsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/api/organizations', {
    config: adminOnly,
    schema: {
      operationId: 'createOrganization',
      tags: ['organizations'],
      summary: 'Create an organization (operator only); then create its first key with POST /api/keys {organizationId}',
      body: createOrganizationBody,
      response: responses({ 201: organization }, { 409: ['ORGANIZATION_EXISTS'] }),
    },
    handler: async (req, reply) => {
      reply.code(201);
      return ok(await services.organizations.create(actorOf(req), req.body));
    },
  });

  app.get('/api/organizations', {
    config: adminOnly,
    schema: {
      operationId: 'listOrganizations',
      tags: ['organizations'],
      summary: 'Every organization (operator), or the caller’s own',
      response: responses({ 200: organizationList }),
    },
    handler: async (req) => ok(await services.organizations.list(actorOf(req))),
  });

  app.get('/api/organizations/:id', {
    config: adminOnly,
    schema: {
      operationId: 'getOrganization',
      tags: ['organizations'],
      summary: 'An organization: the caller’s own, or any for the operator',
      params: organizationParams,
      response: responses({ 200: organization }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.organizations.get(actorOf(req), req.params.id)),
  });

  app.patch('/api/organizations/:id', {
    config: adminOnly,
    schema: {
      operationId: 'updateOrganization',
      tags: ['organizations'],
      summary: 'Rename an organization or change its shared rate limit (operator only)',
      params: organizationParams,
      body: updateOrganizationBody,
      response: responses({ 200: organization }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.organizations.update(actorOf(req), req.params.id, req.body)),
  });
};
