import type { Services } from '@vouch/core';
import { event, eventList, eventParams, eventsQuery } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/events`: the organization's events, in the order they were written. */
export const eventsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/events', {
    schema: {
      operationId: 'listEvents',
      tags: ['events'],
      summary:
        'The organization’s events in the order they were written, after a cursor (filters: type, agent, since); poll with nextCursor',
      querystring: eventsQuery,
      response: responses({ 200: eventList }),
    },
    handler: async (req) => ok(await services.events.list(actorOf(req), req.query)),
  });

  app.get('/api/events/:id', {
    schema: {
      operationId: 'getEvent',
      tags: ['events'],
      summary: 'One event by its id (the `webhook-id` of its deliveries)',
      params: eventParams,
      response: responses({ 200: event }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.events.get(actorOf(req), req.params.id)),
  });
};
