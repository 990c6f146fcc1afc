import type { Services } from '@vouch/core';
import { addressBody, jobAccepted, screeningResult, verificationResult } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { answer, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/verify`: the 8 verification checks and sanctions screening of any well-formed address (queued). */
export const verifyRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/api/verify', {
    // Screenings store their result but change nothing anyone relies on: a read key may run them.
    config: { scope: 'read' },
    schema: {
      operationId: 'verifyAgent',
      tags: ['verification'],
      summary: 'Run the 8 verification checks on an address (queued); the result is stored',
      body: addressBody,
      response: responses({ 200: verificationResult, 202: jobAccepted }),
    },
    handler: async (req, reply) => answer(reply, await services.checks.verify(actorOf(req), req.body.address)),
  });

  app.post('/api/verify/sanctions', {
    config: { scope: 'read' },
    schema: {
      operationId: 'screenSanctions',
      tags: ['verification'],
      summary: 'Screen an address against the OFAC SDN digital-currency addresses (queued); kept',
      body: addressBody,
      response: responses({ 200: screeningResult, 202: jobAccepted }),
    },
    handler: async (req, reply) => answer(reply, await services.checks.screen(actorOf(req), req.body.address)),
  });
};
