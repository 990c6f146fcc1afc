import type { Services } from '@vouch/core';
import { agentParams, computeBody, computeResult, gradeValue, listQuery, scoreBreakdown } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ok, responses } from '../http.ts';

const workflowList = z.object({
  agents: z.array(z.object({ address: z.string(), score: z.number().int(), grade: gradeValue })),
  total: z.number().int(),
  nextCursor: z.string().nullable(),
});

export const scoresRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/scores/agents', {
    schema: {
      operationId: 'listScores',
      tags: ['scores'],
      summary: 'Agents as address, score and grade, for external workflows (same pagination as /api/agents)',
      querystring: listQuery,
      response: responses({ 200: workflowList }, [400]),
    },
    handler: async (req) => {
      const page = await services.agents.list(req.query);
      return ok({
        agents: page.agents.map(({ address, score, grade }) => ({ address, score, grade })),
        total: page.total,
        nextCursor: page.nextCursor,
      });
    },
  });

  app.get('/api/scores/:address', {
    schema: {
      operationId: 'getScoreBreakdown',
      tags: ['scores'],
      summary: 'The score model applied to the agent’s recorded data, factor by factor',
      params: agentParams,
      response: responses({ 200: scoreBreakdown }, [404]),
    },
    handler: async (req) => ok(await services.scores.breakdown(req.params.address)),
  });

  app.post('/api/scores/compute', {
    // Stateless: a read key may use it.
    config: { rateLimit: 'compute', scope: 'read' },
    schema: {
      operationId: 'computeScore',
      tags: ['scores'],
      summary: 'Stateless: the score model over the data given; nothing is stored',
      body: computeBody,
      response: responses({ 200: computeResult }, [413, 415]),
    },
    handler: async (req) => ok(services.scores.compute(req.body)),
  });
};
