import type { Services } from '@vouch/core';
import { jobs } from '@vouch/jobs';
import {
  agent,
  agentList,
  agentParams,
  agentScore,
  batchScoresBody,
  batchScoresResult,
  decisionList,
  erc8004FeedbackBody,
  erc8004FeedbackResult,
  erc8004FileParams,
  jobAccepted,
  listDecisionsQuery,
  listQuery,
  noBody,
  ownerBody,
  policy,
  policyBody,
  policyQuery,
  policyVersions,
  policyVersionsQuery,
  registerBody,
  scoreChange,
  scoreHistory,
  scoreHistoryQuery,
  setScoreBody,
  verificationList,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { bypassesCache, ok, responses } from '../http.ts';
import { idempotencyHeaders, idempotent, idempotentJob } from '../idempotency.ts';
import { actorOf } from '../plugins/auth.ts';

/** `/api/agents`: the registry, scores set by hand or in batches, owners, stored verifications. */
export const agentsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/agents', {
    schema: {
      operationId: 'listAgents',
      tags: ['agents'],
      summary: 'List agents (paginated, filterable)',
      querystring: listQuery,
      response: responses({ 200: agentList }),
    },
    handler: async (req) => ok(await services.agents.list(req.query)),
  });

  app.get('/api/agents/:address', {
    schema: {
      operationId: 'getAgent',
      tags: ['agents'],
      summary: 'An agent with its score and transaction totals',
      params: agentParams,
      response: responses({ 200: agent }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.agents.get(req.params.address)),
  });

  app.get('/api/agents/:address/score', {
    schema: {
      operationId: 'getAgentScore',
      tags: ['agents'],
      summary: 'The stored score, grade and color',
      params: agentParams,
      response: responses({ 200: agentScore }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.agents.getScore(req.params.address, { fresh: bypassesCache(req) })),
  });

  app.get('/api/agents/:address/score-history', {
    schema: {
      operationId: 'getScoreHistory',
      tags: ['agents'],
      summary: 'Every change of the agent’s score, with its source and reason, newest first (paginated)',
      params: agentParams,
      querystring: scoreHistoryQuery,
      response: responses({ 200: scoreHistory }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.agents.scoreHistory(req.params.address, req.query)),
  });

  app.post('/api/agents/register', {
    config: { rateLimit: 'register', scope: 'manage' },
    schema: {
      operationId: 'registerAgent',
      tags: ['agents'],
      summary: 'Register an agent (an observed agent keeps its history)',
      body: registerBody,
      headers: idempotencyHeaders,
      response: responses({ 201: agent }, { 409: ['AGENT_ALREADY_REGISTERED'] }),
    },
    handler: async (req, reply) =>
      idempotent(
        services,
        req,
        reply,
        (executor, afterCommit) => services.agents.register(actorOf(req), req.body, executor, afterCommit),
        () => 201,
      ),
  });

  app.post('/api/agents/:address/score', {
    config: { scope: 'score' },
    schema: {
      operationId: 'setAgentScore',
      tags: ['agents'],
      summary: 'Set a registered agent’s score; the change is kept in its score history',
      params: agentParams,
      body: setScoreBody,
      headers: idempotencyHeaders,
      response: responses({ 200: scoreChange }, { 404: ['AGENT_NOT_FOUND'], 422: ['AGENT_NOT_REGISTERED'] }),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.agents.setScore(actorOf(req), req.params.address, req.body, executor, afterCommit),
      ),
  });

  app.post('/api/agents/batch-scores', {
    config: { rateLimit: 'batch', scope: 'score' },
    schema: {
      operationId: 'batchScores',
      tags: ['agents'],
      summary: 'Set many registered agents’ scores atomically (parallel arrays, 1–1000 entries), via the queue',
      body: batchScoresBody,
      headers: idempotencyHeaders,
      response: responses(
        { 200: batchScoresResult, 202: jobAccepted },
        { 404: ['AGENT_NOT_FOUND'], 422: ['AGENT_NOT_REGISTERED'] },
      ),
    },
    handler: async (req, reply) =>
      idempotentJob(services, req, reply, jobs.batchScores, (keyed) =>
        services.scoring.batch(actorOf(req), req.body, keyed),
      ),
  });

  app.post('/api/agents/:address/owner', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'setAgentOwner',
      tags: ['agents'],
      summary: 'Change a registered agent’s owner; the change and its time are recorded',
      params: agentParams,
      body: ownerBody,
      headers: idempotencyHeaders,
      response: responses({ 200: agent }, { 404: ['AGENT_NOT_FOUND'], 422: ['AGENT_NOT_REGISTERED'] }),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor, afterCommit) =>
        services.agents.setOwner(actorOf(req), req.params.address, req.body.owner, executor, afterCommit),
      ),
  });

  app.get('/api/agents/:address/decisions', {
    schema: {
      operationId: 'listAgentDecisions',
      tags: ['decisions'],
      summary:
        'The decisions this organization asked about the agent, newest first (paginated; filters: decision, from, to)',
      params: agentParams,
      querystring: listDecisionsQuery,
      response: responses({ 200: decisionList }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.decisions.list(actorOf(req), req.params.address, req.query)),
  });

  app.get('/api/agents/:address/policy', {
    schema: {
      operationId: 'getAgentPolicy',
      tags: ['decisions'],
      summary: 'The organization’s policy for this agent (?version= for an earlier one)',
      params: agentParams,
      querystring: policyQuery,
      response: responses({ 200: policy }, { 404: ['POLICY_NOT_FOUND', 'AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.policies.get(actorOf(req), req.params.address, req.query.version)),
  });

  app.get('/api/agents/:address/policy/versions', {
    schema: {
      operationId: 'listAgentPolicyVersions',
      tags: ['decisions'],
      summary: 'The versions of the organization’s policy for this agent, newest first, a page at a time',
      params: agentParams,
      querystring: policyVersionsQuery,
      response: responses({ 200: policyVersions }, { 404: ['AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.policies.versions(actorOf(req), req.params.address, req.query)),
  });

  app.put('/api/agents/:address/policy', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'setAgentPolicy',
      tags: ['decisions'],
      summary: 'Replace the organization’s policy for this agent (a new version): ordered rules, first match wins',
      params: agentParams,
      body: policyBody,
      response: responses({ 200: policy }, { 404: ['AGENT_NOT_FOUND'], 409: ['POLICY_VERSION_CONFLICT'] }),
    },
    handler: async (req) => ok(await services.policies.put(actorOf(req), req.params.address, req.body)),
  });

  app.delete('/api/agents/:address/policy', {
    config: { scope: 'manage' },
    schema: {
      operationId: 'deleteAgentPolicy',
      tags: ['decisions'],
      summary: 'Delete the organization’s policy for this agent (the default policy applies again)',
      params: agentParams,
      body: noBody,
      response: responses({ 200: policy }, { 404: ['POLICY_NOT_FOUND', 'AGENT_NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.policies.remove(actorOf(req), req.params.address)),
  });

  app.get('/api/agents/:address/verifications', {
    schema: {
      operationId: 'listVerifications',
      tags: ['verification'],
      summary: 'Stored verifications of an address, newest first',
      params: agentParams,
      response: responses({ 200: verificationList }),
    },
    handler: async (req) => ok({ verifications: await services.verification.list(req.params.address) }),
  });

  app.post('/api/agents/:address/erc8004/feedback', {
    config: { scope: 'score' },
    schema: {
      operationId: 'giveErc8004Feedback',
      tags: ['agents'],
      summary:
        'Prepare Vouch’s feedback on the agent for the ERC-8004 Reputation Registry (its score, with a feedback file), and send it when a signer key is configured',
      params: agentParams,
      body: erc8004FeedbackBody,
      headers: idempotencyHeaders,
      response: responses(
        { 200: erc8004FeedbackResult },
        {
          404: ['AGENT_NOT_FOUND'],
          422: ['ERC8004_IDENTITY_NOT_FOUND', 'AGENT_NOT_REGISTERED', 'ERC8004_FEEDBACK_REFUSED'],
        },
      ),
    },
    handler: async (req, reply) =>
      idempotent(services, req, reply, (executor) =>
        services.erc8004.exportFeedback(actorOf(req), req.params.address, req.body, executor),
      ),
  });

  app.get('/api/agents/:address/erc8004/feedback/:id', {
    // Read by anyone who follows the feedbackURI on the chain: no key.
    config: { scope: 'public' },
    schema: {
      operationId: 'getErc8004FeedbackFile',
      tags: ['agents'],
      summary: 'A feedback file Vouch gave (the feedbackURI), exactly the bytes its feedbackHash covers',
      params: erc8004FileParams,
      response: {
        ...responses({}, { 404: ['NOT_FOUND'] }),
        200: z.unknown().meta({ description: 'application/json: the feedback file as it was hashed' }),
      },
    },
    handler: async (req, reply) => {
      const file = await services.erc8004.feedbackFile(req.params.address, req.params.id);
      reply.type('application/json; charset=utf-8');
      return reply.send(file);
    },
  });
};
