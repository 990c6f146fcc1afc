import type { Services } from '@vouch/core';
import { jobInfo, jobParams } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/jobs`: status and result of a queued job. */
export const jobsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/jobs/:id', {
    schema: {
      operationId: 'getJob',
      tags: ['jobs'],
      summary: 'Status, progress and result of a queued job',
      params: jobParams,
      response: responses({ 200: jobInfo }, { 404: ['JOB_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.scoring.get(actorOf(req), req.params.id)),
  });
};
