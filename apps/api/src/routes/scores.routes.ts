import type { Services } from '@vouch/core';
import {
  agentBody,
  agentParams,
  anomalyBody,
  anomalyResult,
  computeBody,
  computeResult,
  enrichResult,
  gradeValue,
  jobAccepted,
  listQuery,
  recomputeBody,
  recomputeResult,
  scoreBreakdown,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { answer, ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

const workflowList = z.object({
  agents: z.array(z.object({ address: z.string(), score: z.number().int(), grade: gradeValue })),
  total: z.number().int(),
  nextCursor: z.string().nullable(),
});

/** `/api/scores`: the score model, recomputation, anomaly checks and enrichment. */
export const scoresRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/scores/agents', {
    schema: {
      operationId: 'listScores',
      tags: ['scores'],
      summary: 'Agents as address, score and grade, for external workflows (same pagination as /api/agents)',
      querystring: listQuery,
      response: responses({ 200: workflowList }),
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
      response: responses({ 200: scoreBreakdown }, { 404: ['AGENT_NOT_FOUND'] }),
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
      response: responses({ 200: computeResult }),
    },
    handler: async (req) => ok(services.scores.compute(req.body)),
  });

  app.post('/api/scores/recompute', {
    config: { scope: 'score' },
    schema: {
      operationId: 'recomputeScores',
      tags: ['scores'],
      summary: 'Run the score model over the given agents (or all) and store the new scores, split across workers',
      body: recomputeBody,
      response: responses({ 200: recomputeResult, 202: jobAccepted }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req, reply) => answer(reply, await services.scoring.recompute(actorOf(req), req.body)),
  });

  app.post('/api/scores/anomaly-check', {
    // A screening: it stores its result but changes nothing anyone relies on.
    config: { scope: 'read' },
    schema: {
      operationId: 'anomalyCheck',
      tags: ['scores'],
      summary: 'Four-factor anomaly check of a transaction against the agent’s own history (queued); stored',
      body: anomalyBody,
      response: responses({ 200: anomalyResult, 202: jobAccepted }),
    },
    handler: async (req, reply) => answer(reply, await services.checks.anomaly(actorOf(req), req.body)),
  });

  app.post('/api/scores/enrich', {
    config: { scope: 'read' },
    schema: {
      operationId: 'enrich',
      tags: ['scores'],
      summary: 'Off-chain enrichment: sanctions, reputation 0–100 and risk level from the agent’s data',
      body: agentBody,
      response: responses({ 200: enrichResult }),
    },
    handler: async (req) => ok(await services.enrich.enrich(actorOf(req).organizationId, req.body.agent)),
  });
};
