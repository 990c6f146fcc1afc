import { randomBytes } from 'node:crypto';
import type { App } from '@vouch/api';
import { type Database, sql } from '@vouch/db';
import { MAX_UINT256 } from '@vouch/schemas';
import {
  createAgentWithBudget,
  createTestApp,
  randomAddress,
  recordTx,
  startReceiver,
  type TestContext,
  until,
} from '@vouch/testkit';
import fc from 'fast-check';
import type { RouteOptions } from 'fastify';
import { expect } from 'vitest';

/** A route of the app as the fuzzer sees it. */
export interface FuzzRoute {
  method: string;
  url: string;
}

/**
 * The rest of the fuzz table: routes that take no body, fuzzed through their path, query and
 * headers. Every route of the app is either here or has a body template and a well-formed body
 * (`bodyTemplates`, `validBodies`); `fuzzTableGaps` says which are missing.
 */
export const ROUTES_WITHOUT_BODY: ReadonlySet<string> = new Set([
  'GET /health',
  'GET /ready',
  'GET /metrics',
  'GET /openapi.json',
  'GET /api/agents',
  'GET /api/agents/:address',
  'GET /api/agents/:address/score',
  'GET /api/agents/:address/score-history',
  'GET /api/agents/:address/verifications',
  'GET /api/agents/:address/decisions',
  'GET /api/agents/:address/policy',
  'GET /api/agents/:address/policy/versions',
  'DELETE /api/agents/:address/policy',
  'GET /api/approvals',
  'GET /api/approvals/:id',
  'GET /api/decisions/:id',
  'GET /api/policies/default',
  'GET /api/policies/default/versions',
  'DELETE /api/policies/default',
  'GET /api/agents/:address/erc8004/feedback/:id',
  'GET /api/audit',
  'GET /api/audit/export',
  'GET /api/budgets/:address',
  'GET /api/budgets/:address/authorizations',
  'GET /api/budgets/:address/authorizations/:id',
  'GET /api/budgets/:address/spends',
  'GET /api/events',
  'GET /api/events/:id',
  'GET /api/jobs/:id',
  'GET /api/keys',
  'DELETE /api/keys/:id',
  'GET /api/organizations',
  'GET /api/organizations/:id',
  'GET /api/scores/agents',
  'GET /api/scores/:address',
  'GET /api/transactions/:address',
  'GET /api/transactions/:address/stats',
  'GET /api/webhooks',
  'GET /api/webhooks/:id',
  'DELETE /api/webhooks/:id',
  'POST /api/webhooks/:id/test',
  'GET /api/webhooks/:id/deliveries',
  'POST /api/webhooks/:id/deliveries/:deliveryId/retry',
]);

/** Pages served for browsers (the docs UI, the queue dashboard): not part of the API the table covers. */
const PAGES = ['/docs', '/admin/queues'];

/** What the fuzz table lacks for these routes, and entries it has for routes that no longer exist. */
export function fuzzTableGaps(routes: FuzzRoute[]): string[] {
  const fx: FuzzFixtures = { agent: `0x${'0'.repeat(40)}`, observed: `0x${'0'.repeat(40)}`, adminKey: 'x' };
  const templates = bodyTemplates(fx);
  const valid = validBodies(fx);
  const keys = new Set(
    routes
      .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS')
      .filter((r) => !PAGES.some((page) => r.url === page || r.url.startsWith(`${page}/`)))
      .map((r) => `${r.method} ${r.url}`),
  );
  const gaps: string[] = [];
  for (const key of keys) {
    if (ROUTES_WITHOUT_BODY.has(key)) continue;
    if (!templates[key]) gaps.push(`${key}: no body template`);
    if (!valid[key]) gaps.push(`${key}: no well-formed body`);
  }
  for (const key of [...ROUTES_WITHOUT_BODY, ...Object.keys(templates), ...Object.keys(valid)]) {
    if (!keys.has(key)) gaps.push(`${key}: in the table but not a route of the app`);
  }
  return [...new Set(gaps)];
}

/** Collects every route the app defines (pass `onRoute` in the app's edge options). */
export function routeCollector() {
  const routes: FuzzRoute[] = [];
  return {
    routes,
    onRoute: (route: RouteOptions) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) routes.push({ method: String(method), url: route.url });
    },
  };
}

/**
 * The app the fuzzer targets, with every route collected, auth off (the admin key still
 * works) and background refreshes far away (they would change tables between snapshots),
 * plus the fixtures its requests mix in.
 */
export async function fuzzTarget(
  adminKey: string,
): Promise<{ t: TestContext; routes: FuzzRoute[]; fixtures: FuzzFixtures }> {
  const collector = routeCollector();
  const app = await createTestApp({
    start: '2026-06-15T12:00:00Z',
    jobs: 'in-process',
    refreshDelayMs: 3_600_000,
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'on', WEBHOOK_SWEEP_INTERVAL_MS: '3600000' },
    edge: { onRoute: collector.onRoute, auth: { mode: 'off', adminKey } },
  });
  // Webhook deliveries go to a receiver that answers 200.
  const receiver = await startReceiver();
  const t: TestContext = {
    ...app,
    close: async () => {
      await app.close();
      await receiver.close();
    },
  };
  // Limits that admit many spends, and a per-transaction limit random amounts can exceed.
  const max = MAX_UINT256.toString();
  const agent = await createAgentWithBudget(t.app, { dailyLimit: max, monthlyLimit: max, perTxLimit: '1000000000000' });
  const observed = randomAddress();
  await recordTx(t.app, observed);
  // An accepted spend and a hold, for the routes that name them.
  const spent = await t.app.inject({ method: 'POST', url: `/api/budgets/${agent}/spend`, payload: { amount: '7' } });
  const held = await t.app.inject({
    method: 'POST',
    url: `/api/budgets/${agent}/authorizations`,
    payload: { amount: '9', expiresIn: 86_400 },
  });
  // A review waiting for its approval: a policy that reviews big amounts, and a decision on one.
  const policy = await t.app.inject({
    method: 'PUT',
    url: `/api/agents/${agent}/policy`,
    payload: {
      rules: [
        { name: 'big', action: 'review', when: { amountAbove: '100' } },
        { name: 'rest', action: 'allow' },
      ],
    },
  });
  const reviewed = await t.app.inject({ method: 'POST', url: '/api/decisions', payload: { agent, amount: '500' } });
  if (spent.statusCode !== 200 || held.statusCode !== 201 || policy.statusCode !== 200 || reviewed.statusCode !== 200) {
    throw new Error(`fixtures: ${spent.body} ${held.body} ${policy.body} ${reviewed.body}`);
  }
  // A webhook with one delivered test event, for the routes that take an endpoint and a delivery.
  const hook = await t.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    payload: { url: receiver.url, eventTypes: ['sanctions.hit'] },
  });
  const webhookId = hook.json().data.id as string;
  const test = await t.app.inject({ method: 'POST', url: `/api/webhooks/${webhookId}/test` });
  const deliveryId = test.json().data.deliveryId as string;
  await until(async () => receiver.requests.length > 0, 15_000);
  // Another one for DELETE, so that the other routes keep theirs.
  const spare = await t.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    payload: { url: receiver.url, eventTypes: ['sanctions.hit'] },
  });
  return {
    t,
    routes: collector.routes,
    fixtures: {
      agent,
      observed,
      adminKey,
      spendId: spent.json().data.spendId,
      authorizationId: held.json().data.authorizationId,
      decisionId: reviewed.json().data.decisionId,
      approvalId: reviewed.json().data.approvalId,
      webhookId,
      deliveryId,
      eventId: test.json().data.eventId as string,
      spareWebhookId: spare.json().data.id as string,
      receiverUrl: receiver.url,
    },
  };
}

/** Data of the app the fuzzer mixes into its requests so that some of them are valid. */
export interface FuzzFixtures {
  /** A registered agent with a budget. */
  agent: string;
  /** An address that has only been observed (a recorded transaction). */
  observed: string;
  adminKey: string;
  /** A finished job's id and an API key's id, for the routes that take an `:id`. */
  jobId?: string;
  keyId?: string;
  /** A hold of the agent and an accepted spend of it, for the routes that take their ids. */
  authorizationId?: string;
  spendId?: string;
  /** A decision that asked for review, and its approval (pending). */
  decisionId?: string;
  approvalId?: string;
  /** A webhook endpoint and one of its deliveries, another for DELETE, and where endpoints may point. */
  webhookId?: string;
  deliveryId?: string;
  /** The webhook's test event. */
  eventId?: string;
  spareWebhookId?: string;
  receiverUrl?: string;
}

/** JSON text written as is: numbers JSON.stringify cannot produce (1e400, 2^300, -0), deep nesting. */
class RawJson {
  constructor(readonly text: string) {}
}

function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

const MAX = MAX_UINT256.toString();

/** encodeURIComponent, or (for lone surrogates, which it refuses) every UTF-8 byte percent-encoded. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  }
}
const hex = (n: number) => randomBytes(n).toString('hex');

/** Strings that have broken parsers before: NUL, lone surrogates, look-alike digits, huge, control characters. */
const nastyString = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1.5',
    '1e3',
    '0x',
    '0x0',
    '007',
    ' 1',
    '1 ',
    '+1',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff\ud800',
    '١٢٣', // Arabic-Indic digits
    '１２３', // full-width digits
    '𝟙𝟚𝟛',
    'NaN',
    'Infinity',
    'null',
    'true',
    '[]',
    '{}',
    '__proto__',
    'constructor',
    'prototype',
    '../../etc/passwd',
    '%00',
    '%',
    '%zz',
    '\r\nX-Injected: 1',
    '<script>alert(1)</script>',
    "'; DROP TABLE agents; --",
    '\\',
    '"',
    MAX,
    (MAX_UINT256 + 1n).toString(),
    `-${MAX}`,
    `${MAX}0`,
    '9'.repeat(400),
    `0x${'f'.repeat(40)}`,
    `0x${'F'.repeat(40)}`,
    `0x${'g'.repeat(40)}`,
    `0x${'a'.repeat(41)}`,
    `0x${'aB'.repeat(20)}`, // mixed case that fails its checksum
    `0x${'0'.repeat(64)}`,
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer({ min: 1, max: 70_000 }).map((n) => 'x'.repeat(n)),
);

const nastyNumber = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    -1,
    1,
    1.5,
    0.1,
    1000,
    1001,
    2 ** 31,
    2 ** 53,
    2 ** 53 + 2,
    Number.MAX_VALUE,
    -Number.MAX_VALUE,
  ),
  fc
    .constantFrom('1e400', '-1e400', '1e-400', '123456789012345678901234567890', MAX, '-0', '0.0', '1E3')
    .map((text) => new RawJson(text)),
  fc.integer(),
  fc.double(),
);

/** Nested arrays or objects `depth` levels deep, as JSON text. */
const deep = fc
  .tuple(fc.integer({ min: 10, max: 60_000 }), fc.boolean())
  .map(([depth, arrays]) =>
    arrays
      ? new RawJson(`${'['.repeat(depth)}1${']'.repeat(depth)}`)
      : new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
  );

const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  { weight: 3, arbitrary: nastyNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { __proto__: null }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: fc.array(nastyString, { maxLength: 5 }) },
);

/** Values for an address field or parameter. */
function addressLike(fx: FuzzFixtures) {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(fx.agent, fx.observed, fx.agent.toUpperCase().replace('0X', '0x')) },
    { weight: 4, arbitrary: fc.constant(null).map(() => `0x${hex(20)}`) },
    { weight: 1, arbitrary: fc.constant('0x52908400098527886E0F7030069857D2E4169EE7') }, // EIP-55
    { weight: 1, arbitrary: fc.constant('0x52908400098527886E0F7030069857D2E4169Ee7') }, // bad checksum
    { weight: 3, arbitrary: nastyValue },
  );
}

/** Values for an asset field: the default, CAIP-19 ids (some malformed), anything. */
const assetLike = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('', 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913') },
  { weight: 1, arbitrary: fc.constantFrom('USDC', 'eip155:8453', 'eip155:8453/erc20:', 'a:b/c:d', 'x'.repeat(300)) },
  { weight: 1, arbitrary: nastyValue },
);

/** A policy body close to a valid one: rules with conditions, some of them hostile. */
function policyTemplate(addr: fc.Arbitrary<unknown>, amount: fc.Arbitrary<unknown>) {
  const condition = fc.record(
    {
      counterpartyIn: fc.oneof(fc.array(addr, { maxLength: 3 }), nastyValue),
      amountAbove: amount,
      agentScoreBelow: fc.oneof(fc.integer({ min: -1, max: 1001 }), nastyNumber),
      agentGradeAtLeast: fc.oneof(fc.constantFrom('AAA', 'B', 'Z'), nastyValue),
      timeWindow: fc.oneof(
        fc.constant({ days: ['mon', 'fri'], from: '09:00', to: '17:00', timeZone: 'Europe/Paris' }),
        fc.constant({ from: '25:00', timeZone: 'Mars/Olympus' }),
        nastyValue,
      ),
      velocity: fc.oneof(fc.record({ max: fc.integer({ min: 0, max: 10 }), windowSeconds: fc.integer() }), nastyValue),
      counterpartyCap: fc.oneof(fc.record({ amount, windowSeconds: fc.integer({ min: 0, max: 10_000 }) }), nastyValue),
      anomalyRiskAtLeast: fc.oneof(fc.constantFrom('HIGH', 'EXTREME'), nastyValue),
    },
    { requiredKeys: [] },
  );
  const rule = fc.record(
    {
      name: fc.oneof(fc.string({ minLength: 1, maxLength: 10 }), nastyValue),
      action: fc.oneof(fc.constantFrom('allow', 'deny', 'review', 'maybe'), nastyValue),
      when: fc.oneof(condition, nastyValue),
    },
    { requiredKeys: ['name', 'action'] },
  );
  return fc.record({ rules: fc.oneof(fc.array(rule, { maxLength: 4 }), nastyValue) });
}

/** The fuzz table's body templates: for each route that takes a body, one close to what it expects. */
function bodyTemplates(fx: FuzzFixtures): Record<string, fc.Arbitrary<Record<string, unknown>>> {
  const addr = addressLike(fx);
  const amount = fc.oneof(
    { weight: 8, arbitrary: fc.bigInt({ min: 1n, max: 10n ** 6n }).map(String) },
    { weight: 2, arbitrary: fc.bigInt({ min: 1n, max: MAX_UINT256 }).map(String) },
    { weight: 2, arbitrary: nastyValue },
  );
  const bytes = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('0x', '0x01', '0xabcd') },
    { weight: 1, arbitrary: nastyValue },
  );
  const score = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 1000 }) },
    { weight: 1, arbitrary: nastyNumber },
    { weight: 1, arbitrary: nastyValue },
  );
  return {
    'POST /api/agents/register': fc.record(
      {
        address: addr,
        owner: addr,
        metadata: fc.oneof(fc.dictionary(fc.string({ maxLength: 70 }), fc.jsonValue({ maxDepth: 3 })), nastyValue),
      },
      { requiredKeys: ['address'] },
    ),
    'POST /api/agents/:address/score': fc.record({ score, reason: bytes }),
    'POST /api/agents/:address/owner': fc.record({ owner: addr }),
    'POST /api/agents/:address/erc8004/feedback': fc.record({ clientAddress: addr }, { requiredKeys: [] }),
    'POST /api/agents/batch-scores': fc.oneof(
      fc.record({
        agents: fc.array(addr, { maxLength: 3 }),
        scores: fc.array(score, { maxLength: 3 }),
        reasons: fc.array(bytes, { maxLength: 3 }),
      }),
      fc.record({ agents: nastyValue, scores: nastyValue, reasons: nastyValue }),
    ),
    'POST /api/budgets/:address/set': fc.record(
      { dailyLimit: amount, monthlyLimit: amount, perTxLimit: amount, asset: assetLike },
      { requiredKeys: [] },
    ),
    'POST /api/budgets/:address/check': fc.record({ amount, asset: assetLike }, { requiredKeys: ['amount'] }),
    'POST /api/budgets/:address/spend': fc.record(
      { amount, asset: assetLike, counterparty: addr },
      { requiredKeys: ['amount'] },
    ),
    'POST /api/budgets/:address/authorizations': fc.record(
      {
        amount,
        asset: assetLike,
        counterparty: addr,
        expiresIn: fc.oneof(fc.integer({ min: -5, max: 40 * 86_400 }), nastyNumber),
        metadata: fc.oneof(fc.jsonValue({ maxDepth: 3 }), deep, nastyValue),
      },
      { requiredKeys: ['amount'] },
    ),
    'POST /api/budgets/:address/authorizations/:id/capture': fc.record(
      { amount, settled: fc.oneof(fc.boolean(), nastyValue) },
      { requiredKeys: [] },
    ),
    'POST /api/budgets/:address/authorizations/:id/void': fc.oneof(fc.constant({}), fc.record({ amount })),
    'POST /api/budgets/:address/spends/:spendId/refund': fc.record(
      { amount, reason: fc.oneof(fc.string({ maxLength: 20 }), nastyValue) },
      { requiredKeys: [] },
    ),
    'POST /api/transactions/record': fc.record(
      {
        agent: addr,
        txHash: fc.oneof(
          fc.constant(null).map(() => `0x${hex(32)}`),
          nastyValue,
        ),
        amount,
        asset: assetLike,
        type: fc.oneof(fc.integer({ min: 0, max: 5 }), nastyNumber, nastyValue),
        success: fc.oneof(fc.boolean(), nastyValue),
        counterparty: addr,
        timestamp: fc.oneof(fc.integer({ min: 0, max: 2 ** 31 }), nastyNumber, nastyValue),
      },
      { requiredKeys: ['agent', 'txHash', 'amount', 'type'] },
    ),
    'POST /api/verify': fc.record({ address: addr }),
    'POST /api/verify/sanctions': fc.record({ address: addr }),
    'POST /api/scores/enrich': fc.record({ agent: addr }),
    'POST /api/scores/anomaly-check': fc.record(
      {
        agent: addr,
        amount,
        type: fc.oneof(fc.integer({ min: 0, max: 5 }), nastyValue),
        counterparty: addr,
        txHash: nastyValue,
      },
      { requiredKeys: ['agent', 'amount', 'type'] },
    ),
    'POST /api/scores/recompute': fc.oneof(
      fc.record({ agents: fc.array(addr, { maxLength: 3 }) }),
      fc.record({ all: fc.oneof(fc.constant(true), nastyValue) }),
    ),
    'POST /api/scores/compute': fc.record({
      successRate: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), nastyNumber, nastyValue),
      totalVolume: amount,
      transactionCount: fc.oneof(fc.integer({ min: 0, max: 10_000 }), nastyNumber, nastyValue),
      budgetCompliance: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), nastyNumber),
      accountAge: fc.oneof(fc.integer({ min: 0, max: 5000 }), nastyNumber),
    }),
    'POST /api/keys': fc.record(
      {
        name: fc.oneof(fc.string({ maxLength: 20 }), nastyValue),
        scopes: fc.oneof(
          fc.subarray(['read', 'spend', 'manage', 'approve', 'score', 'admin', 'write', 'root']),
          nastyValue,
        ),
        expiresAt: fc.oneof(fc.integer({ min: 0, max: 2 ** 33 }), nastyNumber),
        organizationId: fc.oneof(fc.constantFrom('default', 'nobody', 'Default', ''), nastyValue),
      },
      { requiredKeys: ['name', 'scopes'] },
    ),
    'POST /api/decisions': fc.record(
      {
        agent: addr,
        amount,
        asset: assetLike,
        counterparty: addr,
        category: fc.oneof(fc.constantFrom('compute', 'data', ''), nastyValue),
        context: fc.oneof(fc.jsonValue({ maxDepth: 3 }), deep, nastyValue),
        hold: fc.oneof(fc.boolean(), nastyValue),
        expiresIn: fc.oneof(fc.integer({ min: -5, max: 40 * 86_400 }), nastyNumber),
        approvalId: fc.oneof(fc.constantFrom('1', '0', '99999999999999999999'), nastyValue),
      },
      { requiredKeys: ['agent', 'amount'] },
    ),
    'POST /api/approvals/:id/approve': fc.record(
      { note: fc.oneof(fc.string({ maxLength: 20 }), nastyValue), expiresIn: fc.oneof(fc.integer(), nastyNumber) },
      { requiredKeys: [] },
    ),
    'POST /api/approvals/:id/deny': fc.record(
      { note: fc.oneof(fc.string({ maxLength: 20 }), nastyValue) },
      { requiredKeys: [] },
    ),
    'PUT /api/agents/:address/policy': policyTemplate(addr, amount),
    'PUT /api/policies/default': policyTemplate(addr, amount),
    'POST /api/organizations': fc.record(
      {
        id: fc.oneof(
          fc.constant(null).map(() => `fuzz-${hex(4)}`),
          fc.constantFrom('default', 'UPPER', '-x'),
          nastyValue,
        ),
        name: fc.oneof(fc.string({ maxLength: 20 }), nastyValue),
        rateLimitPerMinute: fc.oneof(fc.integer({ min: -1, max: 2 ** 31 }), nastyNumber),
      },
      { requiredKeys: ['name'] },
    ),
    'PATCH /api/organizations/:id': fc.record(
      {
        name: fc.oneof(fc.string({ maxLength: 20 }), nastyValue),
        rateLimitPerMinute: fc.oneof(fc.integer({ min: -1, max: 2 ** 31 }), fc.constant(null), nastyNumber),
      },
      { requiredKeys: [] },
    ),
    'POST /api/webhooks': fc.record(
      { url: webhookUrl, eventTypes: eventTypesLike, description: fc.oneof(fc.string({ maxLength: 40 }), nastyValue) },
      { requiredKeys: ['url', 'eventTypes'] },
    ),
    'PATCH /api/webhooks/:id': fc.record(
      {
        url: webhookUrl,
        eventTypes: eventTypesLike,
        description: fc.oneof(fc.string({ maxLength: 40 }), fc.constant(null), nastyValue),
        enabled: fc.oneof(fc.boolean(), nastyValue),
      },
      { requiredKeys: [] },
    ),
    'POST /api/webhooks/:id/rotate-secret': fc.record(
      { previousSecretExpiresIn: fc.oneof(fc.integer({ min: -10, max: 100_000 }), nastyNumber, nastyValue) },
      { requiredKeys: [] },
    ),
    'POST /api/webhooks/:id/replay': fc.record(
      {
        since: fc.oneof(fc.integer({ min: 0, max: 2 ** 32 }), nastyNumber, nastyValue),
        until: fc.oneof(fc.integer({ min: 0, max: 2 ** 32 }), nastyNumber, nastyValue),
      },
      { requiredKeys: ['since'] },
    ),
  };
}

/**
 * Event types a fuzzed webhook may subscribe to: none that the fuzzed requests emit, so that no
 * delivery is created in the background while a refusal's tables are compared.
 */
const QUIET_TYPES = [
  'sanctions.hit',
  'approval.requested',
  'refund.created',
  'authorization.created',
  'webhook.disabled',
];

const eventTypesLike = fc.oneof(
  { weight: 6, arbitrary: fc.subarray(QUIET_TYPES, { minLength: 1 }) },
  {
    weight: 2,
    arbitrary: fc.array(fc.constantFrom(...QUIET_TYPES, 'webhook.test', 'spend.everything', 'SANCTIONS.HIT', ''), {
      maxLength: 4,
    }),
  },
  { weight: 1, arbitrary: nastyValue },
);

const webhookUrl = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'https://example.com/hooks',
      'http://127.0.0.1:9/hooks',
      'http://[::1]:9/x',
      'ftp://example.com/x',
      'https://user:pw@example.com/',
      'https://example.com/#f',
      'javascript:alert(1)',
      'http://',
      '//example.com',
    ),
  },
  { weight: 2, arbitrary: fc.webUrl() },
  { weight: 1, arbitrary: nastyValue },
);

/** A body close to what the route expects, with fields replaced, dropped or added. */
function bodyFor(route: FuzzRoute, fx: FuzzFixtures): fc.Arbitrary<unknown> {
  const template = bodyTemplates(fx)[`${route.method} ${route.url}`] ?? fc.constant({});
  const extra = fc.dictionary(
    fc.oneof(
      fc.constantFrom('__proto__', 'constructor', 'prototype', 'dailylimit', 'extra', ''),
      fc.string({ maxLength: 10 }),
    ),
    nastyValue,
    { maxKeys: 2 },
  );
  return fc.oneof(
    { weight: 12, arbitrary: template },
    { weight: 2, arbitrary: fc.tuple(template, extra).map(([a, b]) => ({ ...a, ...b })) },
    { weight: 2, arbitrary: nastyValue },
    { weight: 1, arbitrary: fc.jsonValue() },
  );
}

/** A raw body: JSON text, broken JSON, prototype pollution, invalid UTF-8, huge, or none. */
function payloadFor(route: FuzzRoute, fx: FuzzFixtures): fc.Arbitrary<string | Buffer | undefined> {
  return fc.oneof(
    { weight: 20, arbitrary: bodyFor(route, fx).map(toJson) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '',
        '{',
        '{"amount":',
        'null',
        '"x"',
        '[',
        '{"__proto__":{"polluted":true}}',
        '{"constructor":{"prototype":{"polluted":true}}}',
        '{"amount":"1","amount":"2"}',
        '\u0000',
        '\ufeff{}',
        'amount=1',
        '{"a":1}{"b":2}',
      ),
    },
    { weight: 1, arbitrary: fc.constant(null).map(() => Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])) },
    { weight: 1, arbitrary: fc.integer({ min: 1_040_000, max: 1_100_000 }).map((n) => `{"x":"${'a'.repeat(n)}"}`) },
  );
}

const contentTypes = fc.oneof(
  { weight: 20, arbitrary: fc.constant('application/json') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=UTF-16',
      'application/json; charset=latin1',
      'APPLICATION/JSON',
      'application/json;',
      'application/json; boundary=x; x=y',
      'application/json, text/plain',
      'application/vnd.api+json',
      'application/problem+json',
      'text/plain',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=----x',
      'application/octet-stream',
      '*/*',
      'json',
      '',
      ' ',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 30 }) },
);

/** Present rarely, absent otherwise. */
function sometimes<T>(arb: fc.Arbitrary<T>, weight = 1, absent = 4): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: absent, arbitrary: fc.constant(undefined) }, { weight, arbitrary: arb });
}

function headersFor(fx: FuzzFixtures): fc.Arbitrary<Record<string, string>> {
  return fc
    .record({
      'content-type': sometimes(contentTypes, 12, 1),
      'idempotency-key': sometimes(
        fc.oneof(
          { weight: 6, arbitrary: fc.constant(null).map(() => `k-${hex(8)}`) },
          { weight: 1, arbitrary: fc.constantFrom('', ' ', 'a b', 'x'.repeat(255), 'x'.repeat(256), 'ü', '\t', '🙂') },
          { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 300 }) },
        ),
        1,
        2,
      ),
      authorization: sometimes(
        fc.oneof(
          fc.constant(`Bearer ${fx.adminKey}`),
          fc.constantFrom('Bearer', 'Bearer ', 'Basic', 'Basic !!!', 'Basic Og==', 'Digest x', 'Bearer vk_0000_0000'),
          fc.constant(null).map(() => `Bearer vk_${hex(8)}_${randomBytes(32).toString('base64url')}`),
          fc.string({ unit: 'binary-ascii', maxLength: 200 }).map((s) => `Bearer ${s}`),
        ),
      ),
      'x-request-id': sometimes(fc.oneof(fc.string({ unit: 'binary-ascii', maxLength: 200 }), fc.constant('ok-id'))),
      accept: sometimes(fc.constantFrom('application/json', 'text/html', '*/*', '', 'application/xml')),
      'content-length': sometimes(fc.constantFrom('0', '1', '99999999', '-1', 'abc'), 1, 30),
    })
    .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined)) as Record<string, string>);
}

/** A path parameter: an address or job/key id, or anything hostile, URL-encoded or raw. */
function paramFor(name: string, fx: FuzzFixtures): fc.Arbitrary<string> {
  const base =
    name === 'address'
      ? addressLike(fx)
      : name === 'id' || name === 'spendId'
        ? fc.oneof(
            fc.constantFrom(
              fx.authorizationId ?? '1',
              fx.spendId ?? '1',
              fx.decisionId ?? '1',
              fx.approvalId ?? '1',
              '0',
              '99999999999999999999',
            ),
            fc.constant(null).map(() => `scores-${crypto.randomUUID()}`),
            fc.constant(null).map(() => `checks-${crypto.randomUUID()}`),
            fc.constant(null).map(() => hex(8)),
            fc.constant(null).map(() => `wh_${hex(8)}`),
            fc.constantFrom('default', 'nobody', 'wh_', 'dlv_1', 'dlv_0', `dlv_${'9'.repeat(30)}`),
            nastyValue,
          )
        : fc.oneof(
            fc.constantFrom(
              'index.html',
              'swagger-ui.css',
              'json',
              '../package.json',
              '..%2f..%2fpackage.json',
              '%2e%2e/%2e%2e/package.json',
            ),
            nastyValue,
          );
  return fc.tuple(base, fc.boolean()).map(([value, encoded]) => {
    const text = typeof value === 'string' ? value : toJson(value);
    return encoded ? encode(text) : text.replace(/[\s?#]/g, encode);
  });
}

const queryKeys = [
  'limit',
  'cursor',
  'minScore',
  'maxScore',
  'grade',
  'registered',
  'sort',
  'action',
  'target',
  'actorKeyId',
  'from',
  'to',
  'organizationId',
  'type',
  'agent',
  'since',
  'status',
  '__proto__',
  'constructor',
  'x',
];

function queryFor() {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant('') },
    {
      weight: 4,
      arbitrary: fc
        .array(
          fc.tuple(
            fc.oneof(fc.constantFrom(...queryKeys), fc.constant('__proto__[polluted]'), fc.string({ maxLength: 8 })),
            fc.oneof(
              fc.constantFrom(
                '1',
                '0',
                '-1',
                '1000',
                '1001',
                '1e3',
                '1.5',
                'NaN',
                'BB',
                'D',
                'true',
                'false',
                'recent',
                'score_asc',
              ),
              fc.constantFrom('eyJzIjo1MDAsImEiOiIweDAwIn0', 'eyJ9', '%', '%00', '%FF%FE', 'a'.repeat(600)),
              nastyString.map(encode),
            ),
          ),
          { maxLength: 5 },
        )
        .map((pairs) => `?${pairs.map(([k, v]) => `${encode(k)}=${v}`).join('&')}`),
    },
  );
}

export interface FuzzRequest {
  route: FuzzRoute;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload: string | Buffer | undefined;
}

/** The fuzz table's well-formed bodies, so that accepted writes change the state later refusals are compared against. */
function validBodies(fx: FuzzFixtures): Record<string, fc.Arbitrary<unknown>> {
  const newAddress = fc.constant(null).map(() => `0x${hex(20)}`);
  const amount = fc.bigInt({ min: 1n, max: 2_000_000_000_000n }).map(String);
  return {
    'POST /api/agents/register': fc.record({ address: newAddress }),
    'POST /api/agents/:address/score': fc.record({
      score: fc.integer({ min: 0, max: 1000 }),
      reason: fc.constant('0x01'),
    }),
    'POST /api/agents/:address/owner': fc.record({ owner: newAddress }),
    'POST /api/agents/:address/erc8004/feedback': fc.record({ clientAddress: newAddress }, { requiredKeys: [] }),
    'POST /api/agents/batch-scores': fc
      .integer({ min: 0, max: 1000 })
      .map((score) => ({ agents: [fx.agent], scores: [score], reasons: ['0x'] })),
    'POST /api/budgets/:address/set': fc.record({ perTxLimit: fc.bigInt({ min: 1n, max: 10n ** 12n }).map(String) }),
    'POST /api/budgets/:address/check': fc.record({ amount }),
    'POST /api/budgets/:address/spend': fc.record({ amount }),
    'POST /api/budgets/:address/authorizations': fc.record({ amount }),
    'POST /api/budgets/:address/authorizations/:id/capture': fc.record({ settled: fc.boolean() }, { requiredKeys: [] }),
    'POST /api/budgets/:address/authorizations/:id/void': fc.constant({}),
    'POST /api/budgets/:address/spends/:spendId/refund': fc.record({
      amount: fc.bigInt({ min: 1n, max: 10n }).map(String),
    }),
    'POST /api/transactions/record': fc.record({
      agent: fc.oneof(fc.constant(fx.agent), newAddress),
      txHash: fc.constant(null).map(() => `0x${hex(32)}`),
      amount,
      type: fc.integer({ min: 0, max: 5 }),
    }),
    'POST /api/verify': fc.record({ address: fc.oneof(fc.constant(fx.agent), newAddress) }),
    'POST /api/verify/sanctions': fc.record({ address: fc.oneof(fc.constant(fx.agent), newAddress) }),
    'POST /api/scores/enrich': fc.record({ agent: fc.constant(fx.agent) }),
    'POST /api/scores/anomaly-check': fc.record({
      agent: fc.constant(fx.agent),
      amount,
      type: fc.integer({ min: 0, max: 5 }),
    }),
    'POST /api/scores/recompute': fc.constant({ agents: [fx.agent] }),
    'POST /api/scores/compute': fc.constant({
      successRate: 0.9,
      totalVolume: '1000',
      transactionCount: 5,
      budgetCompliance: 1,
      accountAge: 10,
    }),
    'POST /api/keys': fc.record({ name: fc.constant('fuzz'), scopes: fc.constant(['read']) }),
    'POST /api/organizations': fc.record({ name: fc.constant('fuzz organization') }),
    'POST /api/decisions': fc.record({
      agent: fc.constant(fx.agent),
      amount,
      hold: fc.boolean(),
      category: fc.constantFrom('compute', 'data'),
    }),
    'POST /api/approvals/:id/approve': fc.constant({}),
    'POST /api/approvals/:id/deny': fc.constant({ note: 'fuzz' }),
    'PUT /api/agents/:address/policy': fc.constant({
      rules: [
        { name: 'review-big', action: 'review', when: { amountAbove: '1000000000' } },
        { name: 'rest', action: 'allow' },
      ],
    }),
    'PUT /api/policies/default': fc.constant({ rules: [{ name: 'all', action: 'allow' }] }),
    'PATCH /api/organizations/:id': fc.record({ name: fc.constantFrom('Default organization', 'Renamed') }),
    'POST /api/webhooks': fc.record({
      url: fc.constant(fx.receiverUrl ?? 'https://example.com/hooks'),
      eventTypes: fc.subarray(QUIET_TYPES, { minLength: 1 }),
    }),
    'PATCH /api/webhooks/:id': fc.record({ description: fc.constantFrom('fuzzed', null) }),
    'POST /api/webhooks/:id/replay': fc.record({ since: fc.integer({ min: 0, max: 2 ** 31 }) }),
    'POST /api/webhooks/:id/rotate-secret': fc.record(
      { previousSecretExpiresIn: fc.integer({ min: 0, max: 86_400 }) },
      { requiredKeys: [] },
    ),
  };
}

function validBody(route: FuzzRoute, fx: FuzzFixtures): fc.Arbitrary<unknown> | undefined {
  return validBodies(fx)[`${route.method} ${route.url}`];
}

/** A well-formed request to `route` (the fixtures' agent as the address, the admin key presented). */
function validRequest(route: FuzzRoute, fx: FuzzFixtures): fc.Arbitrary<FuzzRequest> {
  const body = validBody(route, fx);
  return fc
    .record({
      payload: body ? body.map((b) => JSON.stringify(b)) : fc.constant(undefined),
      key: fc.option(
        fc.constant(null).map(() => `k-${hex(8)}`),
        { freq: 3 },
      ),
    })
    .map(({ payload, key }) => {
      const id = route.url.startsWith('/api/jobs/')
        ? fx.jobId
        : route.url.startsWith('/api/keys/')
          ? fx.keyId
          : route.url.startsWith('/api/organizations/')
            ? 'default'
            : route.url.includes('/authorizations/')
              ? fx.authorizationId
              : route.url.includes('/spends/')
                ? fx.spendId
                : route.url.startsWith('/api/decisions/')
                  ? fx.decisionId
                  : route.url.startsWith('/api/approvals/')
                    ? fx.approvalId
                    : route.url.startsWith('/api/webhooks/')
                      ? route.method === 'DELETE'
                        ? fx.spareWebhookId
                        : fx.webhookId
                      : route.url.startsWith('/api/events/')
                        ? fx.eventId
                        : undefined;
      const path = route.url.replace(/:(\w+)|\*/g, (_, name) =>
        name === 'address'
          ? fx.agent
          : name === 'deliveryId'
            ? (fx.deliveryId ?? hex(8))
            : name
              ? (id ?? hex(8))
              : 'index.html',
      );
      const headers: Record<string, string> = { authorization: `Bearer ${fx.adminKey}` };
      if (payload !== undefined) headers['content-type'] = 'application/json';
      if (key) headers['idempotency-key'] = key;
      const request: FuzzRequest = { route, method: route.method, url: path, headers, payload };
      return Object.assign(request, { [fc.toStringMethod]: () => describe(request) });
    });
}

/** A request as one line, long values cut short. */
export function describe(req: FuzzRequest): string {
  const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}…(${text.length} chars)` : text);
  const payload = req.payload === undefined ? 'none' : cut(String(req.payload), 300);
  return cut(`${req.method} ${req.url} headers=${JSON.stringify(req.headers)} payload=${payload}`, 1200);
}

export function requestArbitrary(routes: FuzzRoute[], fx: FuzzFixtures): fc.Arbitrary<FuzzRequest> {
  // Writes are where a refusal could change something: they are drawn most often.
  const weighted = routes.map((route) => ({
    weight: route.url.startsWith('/api/') ? (route.method === 'POST' || route.method === 'DELETE' ? 6 : 2) : 1,
    arbitrary: fc.constant(route),
  }));
  return fc.oneof(...weighted).chain((route) => routeRequest(route, fx));
}

/** A request to one route: hostile most of the time, otherwise one it should accept. */
function routeRequest(route: FuzzRoute, fx: FuzzFixtures): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    { weight: 7, arbitrary: hostileRequest(route, fx) },
    { weight: 3, arbitrary: validRequest(route, fx) },
  );
}

function hostileRequest(route: FuzzRoute, fx: FuzzFixtures): fc.Arbitrary<FuzzRequest> {
  {
    const params = [...route.url.matchAll(/:(\w+)|\*/g)].map((m) => m[1] ?? '*');
    return fc
      .record({
        values: fc.tuple(...params.map((p) => paramFor(p, fx))),
        query: queryFor(),
        headers: headersFor(fx),
        payload: payloadFor(route, fx),
        method: fc.oneof(
          { weight: 20, arbitrary: fc.constant(route.method) },
          { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') },
        ),
      })
      .map(({ values, query, headers, payload, method }) => {
        let i = 0;
        const path = route.url.replace(/:(\w+)|\*/g, () => values[i++] ?? '');
        const request: FuzzRequest = { route, method, url: `${path}${query}`, headers, payload };
        // A counterexample is printed with long values cut short (a payload can be 1 MiB).
        return Object.assign(request, { [fc.toStringMethod]: () => describe(request) });
      });
  }
}

const SNAPSHOT_TABLES: Record<string, string> = {
  agents: 'SELECT * FROM agents',
  budgets: 'SELECT * FROM budgets',
  // What a refusal must never change, even where it may touch the budget's bookkeeping.
  budget_counters:
    'SELECT organization_id, agent, asset, daily_limit, monthly_limit, per_tx_limit, daily_spent, monthly_spent, daily_held, monthly_held, day_start, month_start FROM budgets',
  spends: 'SELECT * FROM spends',
  authorizations: 'SELECT * FROM authorizations',
  refunds: 'SELECT * FROM refunds',
  decisions: 'SELECT * FROM decisions',
  approvals: 'SELECT * FROM approvals',
  policies: 'SELECT * FROM policies',
  organizations: 'SELECT * FROM organizations',
  audit_log: 'SELECT * FROM audit_log',
  audit_heads: 'SELECT * FROM audit_heads',
  transactions: 'SELECT * FROM transactions',
  score_events: 'SELECT * FROM score_events',
  idempotency_keys: 'SELECT * FROM idempotency_keys',
  verifications: 'SELECT * FROM verifications',
  sanctions_snapshots: 'SELECT * FROM sanctions_snapshots',
  sanctions_entries: 'SELECT * FROM sanctions_entries',
  sanctions_screenings: 'SELECT * FROM sanctions_screenings',
  anomaly_checks: 'SELECT * FROM anomaly_checks',
  erc8004_exports: 'SELECT * FROM erc8004_exports',
  // last_used_at is written off the request path by design (docs/edge.md).
  api_keys: 'SELECT id, name, key_hash, scopes, expires_at, revoked_at, created_at FROM api_keys',
  events: 'SELECT id, organization_id, type, agent, data, created_at FROM events',
  // A delivery's attempts and its endpoint's failure record are kept in the background, by design.
  webhooks:
    'SELECT id, organization_id, url, description, event_types, secret, previous_secrets, enabled, updated_at FROM webhooks',
  // Deliveries are created by the fan-out in the background, whenever events of an earlier
  // request reach it: what a request itself can change is a delivery sent again (run > 1).
  webhook_deliveries: 'SELECT id, webhook_id, event_id, run, created_at FROM webhook_deliveries WHERE run > 1',
};

export type Snapshot = Record<string, { rows: number; digest: string }>;

/**
 * Row count and a digest of every row of every table, in one statement (one round trip: it runs
 * twice per refused request, and on the embedded database a statement per table made R9 slow).
 */
export async function snapshot(database: Database): Promise<Snapshot> {
  const columns = Object.entries(SNAPSHOT_TABLES).map(
    ([table, query]) => sql`(SELECT json_build_object('rows', count(*)::int,
        'digest', md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))) FROM (${sql.raw(query)}) AS t) AS ${sql.id(table)}`,
  );
  const result = await sql<Record<string, { rows: number; digest: string } | string>>`
    SELECT ${sql.join(columns)}`.execute(database.db);
  const row = result.rows[0] ?? {};
  const out: Snapshot = {};
  for (const table of Object.keys(SNAPSHOT_TABLES)) {
    const value = row[table];
    // The pg driver parses json; PGlite may hand it over as text.
    out[table] = typeof value === 'string' ? JSON.parse(value) : (value ?? { rows: 0, digest: '' });
  }
  return out;
}

export interface FuzzFigures {
  /** Weighted draws, after one request to every route (`routes` more requests). */
  runs: number;
  byStatus: Record<string, number>;
  routesHit: number;
  routes: number;
  maxMs: number;
  refusedCompared: number;
  /** Routes no generated request got a 2xx/3xx from. */
  routesWithoutSuccess: string[];
}

/**
 * R9: property-based requests to every route. Each must answer in time with a status
 * below 500, and a refused one (4xx) must change nothing — except what the contract says
 * a refusal keeps: a spend refused by BUDGET_EXCEEDED appends its refused ledger row (and
 * touches only the budget's bookkeeping columns), and a domain refusal under an
 * Idempotency-Key stores that answer for replay.
 */
export async function fuzzRoutes(
  app: App,
  database: Database,
  routes: FuzzRoute[],
  fx: FuzzFixtures,
  opts: { runs: number; seed?: number; timeoutMs?: number },
): Promise<FuzzFigures> {
  const byStatus: Record<string, number> = {};
  const hit = new Set<string>();
  const accepted = new Map<string, number>();
  let maxMs = 0;
  let refusedCompared = 0;
  const timeoutMs = opts.timeoutMs ?? 10_000;

  const check = async (req: FuzzRequest) => {
    const before = await snapshot(database);
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const res = await Promise.race([
      app
        .inject({ method: req.method as 'GET', url: req.url, headers: req.headers, payload: req.payload })
        .catch((error: Error) => ({ injectError: error })),
      new Promise<'hang'>((resolve) => {
        timer = setTimeout(() => resolve('hang'), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    const ms = performance.now() - started;
    maxMs = Math.max(maxMs, ms);
    const label = describe(req);
    expect(res, `${label} did not answer within ${timeoutMs} ms`).not.toBe('hang');
    if (res === 'hang') return;
    // Requests the HTTP layer cannot even express (an invalid header value) never reach the app.
    if ('injectError' in res) {
      expect(String(res.injectError.message), label).toMatch(/Invalid character|header|Invalid URL|URI/i);
      byStatus.unsendable = (byStatus.unsendable ?? 0) + 1;
      return;
    }
    byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1;
    hit.add(`${req.route.method} ${req.route.url}`);
    expect(res.statusCode, `${label} → ${res.statusCode} ${res.body.slice(0, 500)}`).toBeLessThan(500);
    if (res.statusCode < 400) {
      const key = `${req.route.method} ${req.route.url}`;
      accepted.set(key, (accepted.get(key) ?? 0) + 1);
      return;
    }

    refusedCompared++;
    const after = await snapshot(database);
    let code: string | undefined;
    try {
      code = res.json()?.error?.code;
    } catch {
      code = undefined;
    }
    const expected = { ...before };
    // A route that honours Idempotency-Key stores its refusal for replay.
    const storedAnswer =
      req.headers['idempotency-key'] !== undefined &&
      req.method === 'POST' &&
      after.idempotency_keys?.rows === (before.idempotency_keys?.rows ?? 0) + 1;
    if (storedAnswer && after.idempotency_keys) expected.idempotency_keys = after.idempotency_keys;
    if (code === 'BUDGET_EXCEEDED') {
      // One refused ledger row; the budget's counters are unchanged.
      expect(after.spends?.rows, label).toBe((before.spends?.rows ?? 0) + 1);
      const last = await database.db
        .selectFrom('spends')
        .select(['accepted'])
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
      expect(last?.accepted, label).toBe(false);
      if (after.spends) expected.spends = after.spends;
      // And its spend.refused event.
      expect(after.events?.rows, label).toBe((before.events?.rows ?? 0) + 1);
      if (after.events) expected.events = after.events;
      // Only last_refusal and updated_at may move; limits, counters and windows may not.
      if (after.budgets) expected.budgets = after.budgets;
      // The refusal is in the organization's audit log: one more entry.
      expect(after.audit_log?.rows, label).toBe((before.audit_log?.rows ?? 0) + 1);
      if (after.audit_log) expected.audit_log = after.audit_log;
      if (after.audit_heads) expected.audit_heads = after.audit_heads;
    }
    expect(after, `${label} → ${res.statusCode} ${code} changed the database`).toEqual(expected);
  };

  // Every route once first, so that each is reached whatever the draw; then the weighted draws.
  for (const [i, route] of routes.entries()) {
    const [req] = fc.sample(routeRequest(route, fx), { numRuns: 1, seed: (opts.seed ?? Date.now()) + i });
    if (req) await check(req);
  }
  await fc.assert(fc.asyncProperty(requestArbitrary(routes, fx), check), {
    numRuns: opts.runs,
    ...(opts.seed !== undefined && { seed: opts.seed }),
    endOnFailure: false,
  });
  return {
    runs: opts.runs,
    byStatus,
    routesHit: hit.size,
    routes: routes.length,
    maxMs: Math.round(maxMs),
    refusedCompared,
    routesWithoutSuccess: routes.map((r) => `${r.method} ${r.url}`).filter((r) => !accepted.has(r)),
  };
}
