import type { ScoringJobs } from '@vouch/core';
import type { RunOutcome } from '@vouch/jobs';
import {
  batchScoresBody,
  batchScoresResult,
  jobAccepted,
  jobInfo,
  jobParams,
  recomputeBody,
  recomputeResult,
} from '@vouch/schemas';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';

/** A finished job answers 200 with its result; a wait that ran out answers 202 with the job id. */
export function answer<R>(reply: FastifyReply, outcome: RunOutcome<R>) {
  if (outcome.state === 'pending') {
    reply.code(202).header('location', `/api/jobs/${outcome.jobId}`);
    return ok({ jobId: outcome.jobId, status: outcome.status });
  }
  return ok(outcome.result);
}

export const jobsRoutes: FastifyPluginAsyncZod<{ scoring: ScoringJobs }> = async (app, { scoring }) => {
  app.post('/api/agents/batch-scores', {
    config: { rateLimit: 'batch' },
    schema: {
      operationId: 'batchScores',
      tags: ['agents'],
      summary: 'Set many registered agents’ scores atomically (parallel arrays, 1–1000 entries), via the queue',
      body: batchScoresBody,
      response: responses({ 200: batchScoresResult, 202: jobAccepted }, [404, 413, 415, 422]),
    },
    handler: async (req, reply) => answer(reply, await scoring.batch(req.body)),
  });

  app.post('/api/scores/recompute', {
    schema: {
      operationId: 'recomputeScores',
      tags: ['scores'],
      summary: 'Run the score model over the given agents (or all) and store the new scores, split across workers',
      body: recomputeBody,
      response: responses({ 200: recomputeResult, 202: jobAccepted }, [404, 413, 415]),
    },
    handler: async (req, reply) => answer(reply, await scoring.recompute(req.body)),
  });

  app.get('/api/jobs/:id', {
    schema: {
      operationId: 'getJob',
      tags: ['jobs'],
      summary: 'Status, progress and result of a queued job',
      params: jobParams,
      response: responses({ 200: jobInfo }, [404]),
    },
    handler: async (req) => ok(await scoring.get(req.params.id)),
  });
};
