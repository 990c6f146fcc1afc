import type { ChecksJobs, Services } from '@vouch/core';
import {
  addressBody,
  agent,
  agentBody,
  agentParams,
  anomalyBody,
  anomalyResult,
  enrichResult,
  jobAccepted,
  ownerBody,
  screeningResult,
  verificationList,
  verificationResult,
} from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok, responses } from '../http.ts';
import { answer } from './jobs.routes.ts';

/** Verification, sanctions screening, anomaly checks and enrichment; any well-formed address. */
export const checksRoutes: FastifyPluginAsyncZod<{ services: Services; checks: ChecksJobs }> = async (
  app,
  { services, checks },
) => {
  app.post('/api/verify', {
    schema: {
      operationId: 'verifyAgent',
      tags: ['verification'],
      summary: 'Run the 8 verification checks on an address (queued); the result is stored',
      body: addressBody,
      response: responses({ 200: verificationResult, 202: jobAccepted }, [413, 415]),
    },
    handler: async (req, reply) => answer(reply, await checks.verify(req.body.address)),
  });

  app.post('/api/verify/sanctions', {
    schema: {
      operationId: 'screenSanctions',
      tags: ['verification'],
      summary: 'Screen an address against the OFAC SDN digital-currency addresses (queued); kept',
      body: addressBody,
      response: responses({ 200: screeningResult, 202: jobAccepted }, [413, 415]),
    },
    handler: async (req, reply) => answer(reply, await checks.screen(req.body.address)),
  });

  app.post('/api/scores/anomaly-check', {
    schema: {
      operationId: 'anomalyCheck',
      tags: ['scores'],
      summary: 'Four-factor anomaly check of a transaction against the agent’s own history (queued); stored',
      body: anomalyBody,
      response: responses({ 200: anomalyResult, 202: jobAccepted }, [413, 415]),
    },
    handler: async (req, reply) => answer(reply, await checks.anomaly(req.body)),
  });

  app.post('/api/scores/enrich', {
    schema: {
      operationId: 'enrich',
      tags: ['scores'],
      summary: 'Off-chain enrichment: sanctions, reputation 0–100 and risk level from the agent’s data',
      body: agentBody,
      response: responses({ 200: enrichResult }, [413, 415]),
    },
    handler: async (req) => ok(await services.enrich.enrich(req.body.agent)),
  });

  app.get('/api/agents/:address/verifications', {
    schema: {
      operationId: 'listVerifications',
      tags: ['verification'],
      summary: 'Stored verifications of an address, newest first',
      params: agentParams,
      response: responses({ 200: verificationList }, []),
    },
    handler: async (req) => ok({ verifications: await services.verification.list(req.params.address) }),
  });

  app.post('/api/agents/:address/owner', {
    schema: {
      operationId: 'setAgentOwner',
      tags: ['agents'],
      summary: 'Change a registered agent’s owner; the change and its time are recorded',
      params: agentParams,
      body: ownerBody,
      response: responses({ 200: agent }, [404, 413, 415, 422]),
    },
    handler: async (req) => ok(await services.agents.setOwner(req.params.address, req.body.owner)),
  });
};
