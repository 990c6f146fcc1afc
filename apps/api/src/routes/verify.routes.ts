import type { Services } from '@vouch/core';
import { addressBody, jobAccepted, screeningResult, verificationResult } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { answer, responses } from '../http.ts';

/** `/api/verify`: the 8 verification checks and sanctions screening of any well-formed address (queued). */
export const verifyRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/api/verify', {
    schema: {
      operationId: 'verifyAgent',
      tags: ['verification'],
      summary: 'Run the 8 verification checks on an address (queued); the result is stored',
      body: addressBody,
      response: responses({ 200: verificationResult, 202: jobAccepted }, [413, 415]),
    },
    handler: async (req, reply) => answer(reply, await services.checks.verify(req.body.address)),
  });

  app.post('/api/verify/sanctions', {
    schema: {
      operationId: 'screenSanctions',
      tags: ['verification'],
      summary: 'Screen an address against the OFAC SDN digital-currency addresses (queued); kept',
      body: addressBody,
      response: responses({ 200: screeningResult, 202: jobAccepted }, [413, 415]),
    },
    handler: async (req, reply) => answer(reply, await services.checks.screen(req.body.address)),
  });
};
