import type { Services } from '@vouch/core';
import {
  createdWebhook,
  createWebhookBody,
  deliveriesQuery,
  delivery,
  deliveryList,
  deliveryParams,
  noBody,
  replayBody,
  replayResult,
  rotatedSecret,
  rotateSecretBody,
  testDelivery,
  updateWebhookBody,
  webhook,
  webhookList,
  webhookParams,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** Webhooks are the organization's settings: every route needs `manage`, reads included (they show where events go). */
const manage = { scope: 'manage' } as const;

/** `/api/webhooks`: endpoints that receive the organization's events, their deliveries, retries and replays. */
export const webhooksRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/api/webhooks', {
    config: manage,
    schema: {
      operationId: 'createWebhook',
      tags: ['events'],
      summary: 'Subscribe an endpoint to event types; the signing secret is in this answer only',
      body: createWebhookBody,
      headers: idempotencyHeaders,
      response: responses({ 201: createdWebhook }, { 409: ['WEBHOOK_LIMIT'] }),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor) => services.webhooks.create(actorOf(req), req.body, executor),
        () => 201,
      ),
  });

  app.get('/api/webhooks', {
    config: manage,
    schema: {
      operationId: 'listWebhooks',
      tags: ['events'],
      summary: 'The organization’s webhook endpoints, without secrets',
      response: responses({ 200: webhookList }),
    },
    handler: async (req) => ok(await services.webhooks.list(actorOf(req))),
  });

  app.get('/api/webhooks/:id', {
    config: manage,
    schema: {
      operationId: 'getWebhook',
      tags: ['events'],
      summary: 'A webhook endpoint and its state (enabled, failing since, last success)',
      params: webhookParams,
      response: responses({ 200: webhook }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.webhooks.get(actorOf(req), req.params.id)),
  });

  app.patch('/api/webhooks/:id', {
    config: manage,
    schema: {
      operationId: 'updateWebhook',
      tags: ['events'],
      summary: 'Change an endpoint’s URL, event types or description, or turn it off and on',
      params: webhookParams,
      body: updateWebhookBody,
      response: responses({ 200: webhook }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.webhooks.update(actorOf(req), req.params.id, req.body)),
  });

  app.delete('/api/webhooks/:id', {
    config: manage,
    schema: {
      operationId: 'deleteWebhook',
      tags: ['events'],
      summary: 'Delete an endpoint and its deliveries (nothing more is sent to it)',
      params: webhookParams,
      body: noBody,
      response: responses({ 200: webhook }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.webhooks.remove(actorOf(req), req.params.id)),
  });

  app.post('/api/webhooks/:id/rotate-secret', {
    config: manage,
    schema: {
      operationId: 'rotateWebhookSecret',
      tags: ['events'],
      summary:
        'A new signing secret; the old one keeps signing (one more signature) for 24 hours, ' +
        'or previousSecretExpiresIn seconds (0: every previous secret stops now)',
      params: webhookParams,
      body: rotateSecretBody,
      headers: idempotencyHeaders,
      response: responses({ 200: rotatedSecret }, { 404: ['NOT_FOUND'], 409: ['WEBHOOK_SECRET_LIMIT'] }),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor) =>
        services.webhooks.rotateSecret(actorOf(req), req.params.id, req.body, executor),
      ),
  });

  app.post('/api/webhooks/:id/test', {
    config: manage,
    schema: {
      operationId: 'testWebhook',
      tags: ['events'],
      summary: 'Send a webhook.test event to this endpoint only; follow it in its deliveries',
      params: webhookParams,
      body: noBody,
      headers: idempotencyHeaders,
      response: responses({ 202: testDelivery }, { 404: ['NOT_FOUND'], 409: ['WEBHOOK_DISABLED'] }),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) => services.webhooks.test(actorOf(req), req.params.id, executor, afterCommit),
        () => 202,
      ),
  });

  app.get('/api/webhooks/:id/deliveries', {
    config: manage,
    schema: {
      operationId: 'listWebhookDeliveries',
      tags: ['events'],
      summary: 'The endpoint’s deliveries, newest first, each with its attempts (status codes and timings)',
      params: webhookParams,
      querystring: deliveriesQuery,
      response: responses({ 200: deliveryList }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.webhooks.deliveries(actorOf(req), req.params.id, req.query)),
  });

  app.post('/api/webhooks/:id/deliveries/:deliveryId/retry', {
    config: manage,
    schema: {
      operationId: 'retryWebhookDelivery',
      tags: ['events'],
      summary: 'Send one delivery again now (its attempts start over)',
      params: deliveryParams,
      body: noBody,
      headers: idempotencyHeaders,
      response: responses({ 202: delivery }, { 404: ['NOT_FOUND'], 409: ['WEBHOOK_DISABLED'] }),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) =>
          services.webhooks.retry(actorOf(req), req.params.id, req.params.deliveryId, executor, afterCommit),
        () => 202,
      ),
  });

  app.post('/api/webhooks/:id/replay', {
    config: manage,
    schema: {
      operationId: 'replayWebhook',
      tags: ['events'],
      summary: 'Send the events of a time range again to this endpoint (those it has not received)',
      params: webhookParams,
      body: replayBody,
      headers: idempotencyHeaders,
      response: responses({ 202: replayResult }, { 404: ['NOT_FOUND'], 409: ['WEBHOOK_DISABLED'] }),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) =>
          services.webhooks.replay(actorOf(req), req.params.id, req.body, executor, afterCommit),
        () => 202,
      ),
  });
};
