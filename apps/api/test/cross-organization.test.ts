import { sql } from '@vouch/db';
import {
  bearer,
  createKey,
  createOrganizationKey,
  createTestApp,
  eventsSettled,
  type Receiver,
  randomAddress,
  randomTxHash,
  startReceiver,
  type TestContext,
  until,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Every /api operation of the OpenAPI document, called with another organization's key against
 * the first organization's agent, budget, job, key and webhook: an organization never reads or
 * changes another's budgets, ledger, idempotency keys, keys, jobs, audit log, events or webhooks,
 * and never changes an agent another organization registered. The table below has an entry per operation; a new route
 * without one fails this test.
 */

const ADMIN = 'cross-org-admin-secret-0123456789';

interface Fixtures {
  /** Registered by `alpha`, with alpha's budget (one spend made, one hold held). */
  agent: string;
  jobId: string;
  keyId: string;
  spendId: string;
  authorizationId: string;
  decisionId: string;
  approvalId: string;
  /** Alpha's webhook endpoint, one of its (delivered) deliveries, and that delivery's event. */
  webhookId: string;
  deliveryId: string;
  eventId: string;
}

interface Call {
  method: string;
  url: string;
  payload?: object;
}

/** What the other organization gets. */
type Expect =
  /** The operation is about everyone's data (the registry, scores, screenings): it works the same for both. */
  | { kind: 'global'; status: number }
  /** The operation acts on the caller's own organization only: `status` and, optionally, what it must (not) show. */
  | { kind: 'own'; status: number; code?: string; check?: (body: Record<string, unknown>, fx: Fixtures) => void }
  /** Refused: another organization's agent or an operator-only action. */
  | { kind: 'refused'; status: number; code: string };

const table: Record<string, { call: (fx: Fixtures) => Call; expect: Expect }> = {
  // The registry and the model: global.
  listAgents: { call: () => ({ method: 'GET', url: '/api/agents' }), expect: { kind: 'global', status: 200 } },
  getAgent: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}` }),
    expect: { kind: 'global', status: 200 },
  },
  getAgentScore: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/score` }),
    expect: { kind: 'global', status: 200 },
  },
  getScoreHistory: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/score-history` }),
    expect: { kind: 'global', status: 200 },
  },
  listVerifications: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/verifications` }),
    expect: { kind: 'global', status: 200 },
  },
  registerAgent: {
    call: (fx) => ({ method: 'POST', url: '/api/agents/register', payload: { address: fx.agent } }),
    expect: { kind: 'refused', status: 409, code: 'AGENT_ALREADY_REGISTERED' },
  },
  setAgentScore: {
    call: (fx) => ({ method: 'POST', url: `/api/agents/${fx.agent}/score`, payload: { score: 1000, reason: '0x01' } }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  setAgentOwner: {
    call: (fx) => ({ method: 'POST', url: `/api/agents/${fx.agent}/owner`, payload: { owner: randomAddress() } }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  // Feedback on the chain in the agent's name is its owner organization's to give.
  giveErc8004Feedback: {
    call: (fx) => ({ method: 'POST', url: `/api/agents/${fx.agent}/erc8004/feedback`, payload: {} }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  getErc8004FeedbackFile: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/erc8004/feedback/fb_${'0'.repeat(24)}` }),
    expect: { kind: 'global', status: 404 },
  },
  batchScores: {
    call: (fx) => ({
      method: 'POST',
      url: '/api/agents/batch-scores',
      payload: { agents: [fx.agent], scores: [1000], reasons: ['0x01'] },
    }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  recordTransaction: {
    call: (fx) => ({
      method: 'POST',
      url: '/api/transactions/record',
      payload: { agent: fx.agent, txHash: randomTxHash(), amount: '1', type: 0 },
    }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  listTransactions: {
    call: (fx) => ({ method: 'GET', url: `/api/transactions/${fx.agent}` }),
    expect: { kind: 'global', status: 200 },
  },
  getTransactionStats: {
    call: (fx) => ({ method: 'GET', url: `/api/transactions/${fx.agent}/stats` }),
    expect: { kind: 'global', status: 200 },
  },
  listScores: { call: () => ({ method: 'GET', url: '/api/scores/agents' }), expect: { kind: 'global', status: 200 } },
  getScoreBreakdown: {
    call: (fx) => ({ method: 'GET', url: `/api/scores/${fx.agent}` }),
    expect: { kind: 'global', status: 200 },
  },
  computeScore: {
    call: () => ({
      method: 'POST',
      url: '/api/scores/compute',
      payload: { successRate: 1, totalVolume: '1', transactionCount: 1, budgetCompliance: 1, accountAge: 1 },
    }),
    expect: { kind: 'global', status: 200 },
  },
  // Recomputing would replace the score its organization set.
  recomputeScores: {
    call: (fx) => ({ method: 'POST', url: '/api/scores/recompute', payload: { agents: [fx.agent] } }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  // An anomaly check is the organization's that asked for it: the other's checks are not its risk.
  enrich: {
    call: (fx) => ({ method: 'POST', url: '/api/scores/enrich', payload: { agent: fx.agent } }),
    expect: {
      kind: 'own',
      status: 200,
      // Beta has made no check of the agent: alpha's CRITICAL one is not beta's.
      check: (body) => {
        expect(body).toMatchObject({ sources: { latestAnomaly: null } });
        expect(body.riskLevel).not.toBe('CRITICAL');
      },
    },
  },
  anomalyCheck: {
    call: (fx) => ({
      method: 'POST',
      url: '/api/scores/anomaly-check',
      payload: { agent: fx.agent, amount: '5', type: 0 },
    }),
    expect: { kind: 'own', status: 200 },
  },
  verifyAgent: {
    call: (fx) => ({ method: 'POST', url: '/api/verify', payload: { address: fx.agent } }),
    expect: { kind: 'global', status: 200 },
  },
  screenSanctions: {
    call: (fx) => ({ method: 'POST', url: '/api/verify/sanctions', payload: { address: fx.agent } }),
    expect: { kind: 'global', status: 200 },
  },

  // Budgets and the ledger: the caller's organization's own.
  getBudget: {
    call: (fx) => ({ method: 'GET', url: `/api/budgets/${fx.agent}` }),
    expect: { kind: 'own', status: 404, code: 'BUDGET_NOT_FOUND' },
  },
  checkBudget: {
    call: (fx) => ({ method: 'POST', url: `/api/budgets/${fx.agent}/check`, payload: { amount: '1' } }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.reason).toBe('NO_BUDGET') },
  },
  spend: {
    call: (fx) => ({ method: 'POST', url: `/api/budgets/${fx.agent}/spend`, payload: { amount: '1' } }),
    expect: { kind: 'own', status: 422, code: 'BUDGET_NOT_SET' },
  },
  authorize: {
    call: (fx) => ({ method: 'POST', url: `/api/budgets/${fx.agent}/authorizations`, payload: { amount: '1' } }),
    expect: { kind: 'own', status: 422, code: 'BUDGET_NOT_SET' },
  },
  listAuthorizations: {
    call: (fx) => ({ method: 'GET', url: `/api/budgets/${fx.agent}/authorizations` }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.authorizations).toEqual([]) },
  },
  getAuthorization: {
    call: (fx) => ({ method: 'GET', url: `/api/budgets/${fx.agent}/authorizations/${fx.authorizationId}` }),
    expect: { kind: 'own', status: 404, code: 'AUTHORIZATION_NOT_FOUND' },
  },
  capture: {
    call: (fx) => ({
      method: 'POST',
      url: `/api/budgets/${fx.agent}/authorizations/${fx.authorizationId}/capture`,
      payload: {},
    }),
    expect: { kind: 'own', status: 404, code: 'AUTHORIZATION_NOT_FOUND' },
  },
  void: {
    call: (fx) => ({
      method: 'POST',
      url: `/api/budgets/${fx.agent}/authorizations/${fx.authorizationId}/void`,
      payload: {},
    }),
    expect: { kind: 'own', status: 404, code: 'AUTHORIZATION_NOT_FOUND' },
  },
  listSpends: {
    call: (fx) => ({ method: 'GET', url: `/api/budgets/${fx.agent}/spends` }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.spends).toEqual([]) },
  },
  refund: {
    call: (fx) => ({ method: 'POST', url: `/api/budgets/${fx.agent}/spends/${fx.spendId}/refund`, payload: {} }),
    expect: { kind: 'own', status: 404, code: 'SPEND_NOT_FOUND' },
  },
  // Sets the other organization's own budget; alpha's stays as it was (checked below).
  setBudget: {
    call: (fx) => ({
      method: 'POST',
      url: `/api/budgets/${fx.agent}/set`,
      payload: { dailyLimit: '3', monthlyLimit: '3' },
    }),
    expect: { kind: 'own', status: 200, check: (b) => expect([b.dailyLimit, b.dailySpent]).toEqual(['3', '0']) },
  },

  // Decisions, approvals and policies: the organization's own.
  decide: {
    call: (fx) => ({ method: 'POST', url: '/api/decisions', payload: { agent: fx.agent, amount: '5' } }),
    expect: {
      kind: 'own',
      status: 200,
      // Its own budget (none, or the one it set) and no policy: never alpha's.
      check: (b) => expect([b.decision, (b.policy as { version: number | null }).version]).toEqual(['deny', null]),
    },
  },
  getDecision: {
    call: (fx) => ({ method: 'GET', url: `/api/decisions/${fx.decisionId}` }),
    expect: { kind: 'own', status: 404, code: 'DECISION_NOT_FOUND' },
  },
  listAgentDecisions: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/decisions` }),
    // Its own decisions (`decide` above) only, never the first organization’s.
    expect: {
      kind: 'own',
      status: 200,
      check: (b, fx) =>
        expect((b.decisions as Array<{ decisionId: string }>).map((d) => d.decisionId)).not.toContain(fx.decisionId),
    },
  },
  listApprovals: {
    call: () => ({ method: 'GET', url: '/api/approvals' }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.approvals).toEqual([]) },
  },
  getApproval: {
    call: (fx) => ({ method: 'GET', url: `/api/approvals/${fx.approvalId}` }),
    expect: { kind: 'own', status: 404, code: 'APPROVAL_NOT_FOUND' },
  },
  approve: {
    call: (fx) => ({ method: 'POST', url: `/api/approvals/${fx.approvalId}/approve`, payload: {} }),
    expect: { kind: 'own', status: 404, code: 'APPROVAL_NOT_FOUND' },
  },
  denyApproval: {
    call: (fx) => ({ method: 'POST', url: `/api/approvals/${fx.approvalId}/deny`, payload: {} }),
    expect: { kind: 'own', status: 404, code: 'APPROVAL_NOT_FOUND' },
  },
  getAgentPolicy: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/policy` }),
    expect: { kind: 'own', status: 404, code: 'POLICY_NOT_FOUND' },
  },
  listAgentPolicyVersions: {
    call: (fx) => ({ method: 'GET', url: `/api/agents/${fx.agent}/policy/versions` }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.versions).toEqual([]) },
  },
  deleteAgentPolicy: {
    call: (fx) => ({ method: 'DELETE', url: `/api/agents/${fx.agent}/policy` }),
    expect: { kind: 'own', status: 404, code: 'POLICY_NOT_FOUND' },
  },
  setAgentPolicy: {
    call: (fx) => ({
      method: 'PUT',
      url: `/api/agents/${fx.agent}/policy`,
      payload: { rules: [{ name: 'nothing', action: 'deny' }] },
    }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.version).toBe(1) },
  },
  getDefaultPolicy: {
    call: () => ({ method: 'GET', url: '/api/policies/default' }),
    expect: { kind: 'own', status: 404, code: 'POLICY_NOT_FOUND' },
  },
  listDefaultPolicyVersions: {
    call: () => ({ method: 'GET', url: '/api/policies/default/versions' }),
    expect: { kind: 'own', status: 200, check: (b) => expect(b.versions).toEqual([]) },
  },
  deleteDefaultPolicy: {
    call: () => ({ method: 'DELETE', url: '/api/policies/default' }),
    expect: { kind: 'own', status: 404, code: 'POLICY_NOT_FOUND' },
  },
  setDefaultPolicy: {
    call: () => ({
      method: 'PUT',
      url: '/api/policies/default',
      payload: { rules: [{ name: 'all', action: 'allow' }] },
    }),
    expect: { kind: 'own', status: 200, check: (b) => expect([b.agent, b.version]).toEqual([null, 1]) },
  },

  // Jobs, keys, organizations and the audit log.
  getJob: {
    call: (fx) => ({ method: 'GET', url: `/api/jobs/${fx.jobId}` }),
    expect: { kind: 'own', status: 404, code: 'JOB_NOT_FOUND' },
  },
  listApiKeys: {
    call: () => ({ method: 'GET', url: '/api/keys' }),
    expect: {
      kind: 'own',
      status: 200,
      check: (b, fx) => {
        const keys = b.keys as Array<{ id: string; organizationId: string }>;
        expect(keys.some((k) => k.id === fx.keyId)).toBe(false);
        expect(new Set(keys.map((k) => k.organizationId))).toEqual(new Set(['beta']));
      },
    },
  },
  createApiKey: {
    call: () => ({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'x', scopes: ['read'], organizationId: 'alpha' },
    }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  revokeApiKey: {
    call: (fx) => ({ method: 'DELETE', url: `/api/keys/${fx.keyId}` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  createOrganization: {
    call: () => ({ method: 'POST', url: '/api/organizations', payload: { name: 'mine' } }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  listOrganizations: {
    call: () => ({ method: 'GET', url: '/api/organizations' }),
    expect: {
      kind: 'own',
      status: 200,
      check: (b) => expect((b.organizations as Array<{ id: string }>).map((o) => o.id)).toEqual(['beta']),
    },
  },
  getOrganization: {
    call: () => ({ method: 'GET', url: '/api/organizations/alpha' }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  updateOrganization: {
    call: () => ({ method: 'PATCH', url: '/api/organizations/alpha', payload: { name: 'taken over' } }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  listAudit: {
    call: () => ({ method: 'GET', url: '/api/audit?organizationId=alpha' }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },
  exportAudit: {
    call: () => ({ method: 'GET', url: '/api/audit/export?organizationId=alpha' }),
    expect: { kind: 'refused', status: 403, code: 'FORBIDDEN' },
  },

  // Events and webhooks: the caller's organization's own.
  listEvents: {
    call: () => ({ method: 'GET', url: '/api/events?limit=1000' }),
    expect: {
      kind: 'own',
      status: 200,
      check: (b) => {
        for (const e of b.events as Array<{ organizationId: string }>) expect(e.organizationId).toBe('beta');
      },
    },
  },
  getEvent: {
    call: (fx) => ({ method: 'GET', url: `/api/events/${fx.eventId}` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  createWebhook: {
    call: () => ({
      method: 'POST',
      url: '/api/webhooks',
      payload: { url: 'https://example.com/hooks', eventTypes: ['sanctions.hit'] },
    }),
    expect: { kind: 'own', status: 201, check: (b) => expect(b.organizationId).toBe('beta') },
  },
  listWebhooks: {
    call: () => ({ method: 'GET', url: '/api/webhooks' }),
    expect: {
      kind: 'own',
      status: 200,
      check: (b, fx) => {
        const hooks = b.webhooks as Array<{ id: string; organizationId: string }>;
        expect(hooks.some((w) => w.id === fx.webhookId)).toBe(false);
        expect(hooks.every((w) => w.organizationId === 'beta')).toBe(true);
      },
    },
  },
  getWebhook: {
    call: (fx) => ({ method: 'GET', url: `/api/webhooks/${fx.webhookId}` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  updateWebhook: {
    call: (fx) => ({
      method: 'PATCH',
      url: `/api/webhooks/${fx.webhookId}`,
      payload: { url: 'https://evil.example/' },
    }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  deleteWebhook: {
    call: (fx) => ({ method: 'DELETE', url: `/api/webhooks/${fx.webhookId}` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  rotateWebhookSecret: {
    call: (fx) => ({ method: 'POST', url: `/api/webhooks/${fx.webhookId}/rotate-secret` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  testWebhook: {
    call: (fx) => ({ method: 'POST', url: `/api/webhooks/${fx.webhookId}/test` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  listWebhookDeliveries: {
    call: (fx) => ({ method: 'GET', url: `/api/webhooks/${fx.webhookId}/deliveries` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  retryWebhookDelivery: {
    call: (fx) => ({ method: 'POST', url: `/api/webhooks/${fx.webhookId}/deliveries/${fx.deliveryId}/retry` }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
  replayWebhook: {
    call: (fx) => ({ method: 'POST', url: `/api/webhooks/${fx.webhookId}/replay`, payload: { since: 0 } }),
    expect: { kind: 'own', status: 404, code: 'NOT_FOUND' },
  },
};

let t: TestContext;
let receiver: Receiver;
let alpha: string;
let beta: string;
let fx: Fixtures;
// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document walked generically
let doc: any;

beforeAll(async () => {
  t = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
  alpha = await createOrganizationKey(t.app, ADMIN, 'alpha');
  beta = await createOrganizationKey(t.app, ADMIN, 'beta');
  const agent = randomAddress();
  const as = (method: string, url: string, payload?: object) =>
    t.app.inject({ method: method as 'GET', url, headers: bearer(alpha), ...(payload && { payload }) });
  expect((await as('POST', '/api/agents/register', { address: agent })).statusCode).toBe(201);
  expect((await as('POST', `/api/budgets/${agent}/set`, { dailyLimit: '100', monthlyLimit: '1000' })).statusCode).toBe(
    200,
  );
  const spent = await t.app.inject({
    method: 'POST',
    url: `/api/budgets/${agent}/spend`,
    payload: { amount: '10' },
    headers: { ...bearer(alpha), 'idempotency-key': 'alpha-order' },
  });
  expect(spent.statusCode).toBe(200);
  const held = await as('POST', `/api/budgets/${agent}/authorizations`, { amount: '5' });
  expect(held.statusCode, held.body).toBe(201);
  // Alpha's policies (the agent's and its default) and a review waiting for approval.
  const rules = [
    { name: 'big', action: 'review', when: { amountAbove: '20' } },
    { name: 'rest', action: 'allow' },
  ];
  expect((await as('PUT', `/api/agents/${agent}/policy`, { rules })).statusCode).toBe(200);
  expect((await as('PUT', '/api/policies/default', { rules })).statusCode).toBe(200);
  const reviewed = await as('POST', '/api/decisions', { agent, amount: '30', hold: true });
  expect(reviewed.json().data).toMatchObject({ decision: 'review' });
  const batch = await as('POST', '/api/agents/batch-scores', { agents: [agent], scores: [650], reasons: ['0x01'] });
  expect(batch.statusCode, batch.body).toBe(200);
  const secret = await createKey(t.app, alpha, { name: 'alpha-reader', scopes: ['read'] });
  // Verified once by alpha: the other organization's verification finds the same status and
  // announces nothing to alpha.
  expect((await as('POST', '/api/verify', { address: agent })).statusCode).toBe(200);
  // An anomaly check of alpha's that finds the worst: a payment to a sanctioned counterparty.
  const anomaly = await as('POST', '/api/scores/anomaly-check', {
    agent,
    amount: '5',
    type: 0,
    counterparty: '0x098b716b8aaf21512996dc57eb0615e2383e2f96',
  });
  expect(anomaly.json().data).toMatchObject({ severity: 'CRITICAL' });
  // A webhook of alpha's with one delivered test event.
  receiver = await startReceiver();
  const hook = await as('POST', '/api/webhooks', { url: receiver.url, eventTypes: ['sanctions.hit'] });
  expect(hook.statusCode, hook.body).toBe(201);
  const webhookId = hook.json().data.id as string;
  const test = await as('POST', `/api/webhooks/${webhookId}/test`);
  expect(test.statusCode, test.body).toBe(202);
  await until(async () => {
    const list = (await as('GET', `/api/webhooks/${webhookId}/deliveries`)).json().data.deliveries;
    return list[0]?.status === 'succeeded';
  }, 15_000);
  await eventsSettled(t.database);
  fx = {
    agent,
    jobId: batch.headers['x-job-id'] as string,
    keyId: secret.split('_')[1] as string,
    spendId: spent.json().data.spendId,
    authorizationId: held.json().data.authorizationId,
    decisionId: reviewed.json().data.decisionId,
    approvalId: reviewed.json().data.approvalId,
    webhookId,
    deliveryId: test.json().data.deliveryId as string,
    eventId: test.json().data.eventId as string,
  };
  doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
});
afterAll(async () => {
  await t.close();
  await receiver?.close();
});

/** The codes the OpenAPI document declares for an operation's status. */
function declaredCodes(operationId: string, status: number): string[] {
  type Operation = { operationId?: string; responses?: Record<string, { 'x-error-codes'?: string[] }> };
  for (const item of Object.values<Record<string, Operation>>(doc.paths))
    for (const op of Object.values(item))
      if (op.operationId === operationId) return op.responses?.[status]?.['x-error-codes'] ?? [];
  return [];
}

/** Every row an organization owns, as text, to compare before and after the other organization's calls. */
async function organizationState(organizationId: string) {
  const tables = [
    'budgets',
    'spends',
    'anomaly_checks',
    'authorizations',
    'refunds',
    'policies',
    'decisions',
    'approvals',
    'idempotency_keys',
    'api_keys',
    'audit_log',
    'audit_heads',
    'organizations',
    'events',
    'webhooks',
    'webhook_deliveries',
  ];
  const state: Record<string, unknown> = {};
  for (const table of tables) {
    const column = table === 'organizations' ? 'id' : 'organization_id';
    const rows = await sql<{ row: string }>`SELECT to_jsonb(x)::text AS row FROM ${sql.table(table)} x
      WHERE ${sql.ref(column)} = ${organizationId} ORDER BY 1`.execute(t.database.db);
    // A key's last use is bookkeeping, not state.
    state[table] = rows.rows.map((r) => r.row.replace(/"last_used_at": "[^"]*"/, ''));
  }
  return state;
}

describe('another organization', () => {
  it('has an entry in the table for every /api operation, and the table none for a route that is gone', () => {
    const operations: string[] = [];
    for (const [path, item] of Object.entries<Record<string, { operationId?: string }>>(doc.paths)) {
      if (!path.startsWith('/api/')) continue;
      for (const op of Object.values(item)) if (op.operationId) operations.push(op.operationId);
    }
    expect(operations.length).toBeGreaterThan(40);
    expect(operations.filter((id) => !(id in table))).toEqual([]);
    expect(Object.keys(table).filter((id) => !operations.includes(id))).toEqual([]);
  });

  it('never reads or changes what belongs to the first organization, on any route', async () => {
    const before = await organizationState('alpha');
    for (const [operationId, entry] of Object.entries(table)) {
      const call = entry.call(fx);
      const res = await t.app.inject({
        method: call.method as 'GET',
        url: call.url,
        headers: bearer(beta),
        ...(call.payload && { payload: call.payload }),
      });
      const expected = entry.expect;
      expect(res.statusCode, `${operationId}: ${res.body}`).toBe(expected.status);
      // A refusal is one the OpenAPI document names for that status: clients branch on its code.
      if (res.statusCode >= 400) expect(declaredCodes(operationId, res.statusCode)).toContain(res.json().error.code);
      if (expected.kind !== 'global' && 'code' in expected && expected.code) {
        expect(res.json().error.code, operationId).toBe(expected.code);
      }
      if (expected.kind === 'own' && expected.check) expected.check(res.json().data, fx);
    }
    // The first organization's budgets, ledger, idempotency keys, keys, audit log, events, webhooks and
    // settings are as they were.
    expect(await organizationState('alpha')).toEqual(before);
    // And its budget still reads as it did.
    const budget = await t.app.inject({ method: 'GET', url: `/api/budgets/${fx.agent}`, headers: bearer(alpha) });
    expect([budget.json().data.dailyLimit, budget.json().data.dailySpent]).toEqual(['100', '10']);
    // Its enrich still reads its own anomaly check, whatever the other organization checked since.
    const enriched = await t.app.inject({
      method: 'POST',
      url: '/api/scores/enrich',
      headers: bearer(alpha),
      payload: { agent: fx.agent },
    });
    expect(enriched.json().data).toMatchObject({
      riskLevel: 'CRITICAL',
      sources: { latestAnomaly: { severity: 'CRITICAL' } },
    });
  });
});
