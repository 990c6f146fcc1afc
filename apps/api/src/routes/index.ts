import type { Services } from '@vouch/core';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { agentsRoutes } from './agents.routes.ts';
import { approvalsRoutes } from './approvals.routes.ts';
import { auditRoutes } from './audit.routes.ts';
import { budgetsRoutes } from './budgets.routes.ts';
import { decisionsRoutes } from './decisions.routes.ts';
import { eventsRoutes } from './events.routes.ts';
import { jobsRoutes } from './jobs.routes.ts';
import { keysRoutes } from './keys.routes.ts';
import { organizationsRoutes } from './organizations.routes.ts';
import { policiesRoutes } from './policies.routes.ts';
import { scoresRoutes } from './scores.routes.ts';
import { transactionsRoutes } from './transactions.routes.ts';
import { verifyRoutes } from './verify.routes.ts';
import { webhooksRoutes } from './webhooks.routes.ts';

/**
 * Every `/api` route, one file per URL prefix, registered in this order by buildApp. The
 * routes outside `/api` (/health, /ready, /metrics, /openapi.json, /docs, /admin/queues) belong
 * to the edge (edge.ts), which registers them before these.
 */
export const apiRoutes: ReadonlyArray<{ prefix: string; plugin: FastifyPluginAsyncZod<{ services: Services }> }> = [
  { prefix: '/api/agents', plugin: agentsRoutes },
  { prefix: '/api/approvals', plugin: approvalsRoutes },
  { prefix: '/api/audit', plugin: auditRoutes },
  { prefix: '/api/budgets', plugin: budgetsRoutes },
  { prefix: '/api/decisions', plugin: decisionsRoutes },
  { prefix: '/api/events', plugin: eventsRoutes },
  { prefix: '/api/jobs', plugin: jobsRoutes },
  { prefix: '/api/keys', plugin: keysRoutes },
  { prefix: '/api/organizations', plugin: organizationsRoutes },
  { prefix: '/api/policies', plugin: policiesRoutes },
  { prefix: '/api/scores', plugin: scoresRoutes },
  { prefix: '/api/transactions', plugin: transactionsRoutes },
  { prefix: '/api/verify', plugin: verifyRoutes },
  { prefix: '/api/webhooks', plugin: webhooksRoutes },
];
