import { errorStatus } from '@vouch/core';
import { type ErrorCode, errorCodes, failureEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createTestApp,
  post,
  randomAddress,
  randomTxHash,
  type TestContext,
} from '@vouch/testkit';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document walked generically
type Json = Record<string, any>;

const routes: Array<{ method: string; url: string }> = [];
let t: TestContext;
let doc: Json;

beforeAll(async () => {
  t = await createTestApp({
    // Rate limits on, so that the document shows them.
    edge: {
      onRoute: (route: RouteOptions) => {
        for (const method of [route.method].flat()) routes.push({ method, url: route.url });
      },
      rateLimit: { limits: { default: 100, register: 20, batch: 10, compute: 1000 } },
    },
  });
  const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(() => t.close());

/** The routes the document must describe: all but HEAD/OPTIONS twins and the pages of the docs UI and the queue dashboard. */
function documentedRoutes() {
  const pages = ['/docs', '/admin/queues'];
  return routes.filter(
    (r) =>
      r.method !== 'HEAD' &&
      r.method !== 'OPTIONS' &&
      !pages.some((page) => r.url === page || r.url.startsWith(`${page}/`)),
  );
}

const openapiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with a bearer scheme required by default', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ apiKey: [] }]);
  });

  it('lists every route of the app, each with a 2xx, and a 4xx for every /api route', () => {
    const expected = documentedRoutes();
    // Sanity: the collection saw the whole app.
    expect(expected.map((r) => `${r.method} ${r.url}`)).toEqual(
      expect.arrayContaining([
        'GET /api/agents',
        'POST /api/agents/batch-scores',
        'POST /api/keys',
        'DELETE /api/keys/:id',
        'GET /health',
        'GET /ready',
        'GET /metrics',
        'GET /openapi.json',
      ]),
    );
    expect(expected.length).toBeGreaterThanOrEqual(30);

    const missing: string[] = [];
    for (const route of expected) {
      const op = doc.paths[openapiPath(route.url)]?.[route.method.toLowerCase()];
      if (!op) {
        missing.push(`${route.method} ${route.url}`);
        continue;
      }
      expect(op.operationId, route.url).toEqual(expect.any(String));
      expect(op.tags?.length, route.url).toBeGreaterThan(0);
      expect(op.summary, route.url).toEqual(expect.any(String));
      const statuses = Object.keys(op.responses).map(Number);
      expect(
        statuses.some((s) => s >= 200 && s < 300),
        `${route.url} has a 2xx`,
      ).toBe(true);
      if (route.url.startsWith('/api/')) {
        expect(
          statuses.some((s) => s >= 400 && s < 500),
          `${route.url} has a 4xx`,
        ).toBe(true);
        expect(statuses, route.url).toEqual(expect.arrayContaining([400, 429, 500, 503]));
      }
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        expect(response.description, `${route.url} ${status}`).not.toBe('Default Response');
      }
    }
    expect(missing).toEqual([]);

    // And nothing else: no internals of the dashboard or the docs UI.
    const documented = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(expected.map((r) => `${r.method} ${openapiPath(r.url)}`).sort());
  });

  it('has unique operation ids', () => {
    const ids = Object.values<Json>(doc.paths).flatMap((item) => Object.values<Json>(item).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resolves every $ref', () => {
    const unresolved: string[] = [];
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(visit);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === '$ref' && typeof value === 'string') {
            const target = value
              .replace(/^#\//, '')
              .split('/')
              .reduce<unknown>((at, part) => (at as Json | undefined)?.[part], doc);
            if (target === undefined) unresolved.push(value);
          } else visit(value);
        }
      }
    };
    visit(doc);
    expect(unresolved).toEqual([]);
  });

  it('gives every failure an example that is a valid envelope with a code of that status', () => {
    let count = 0;
    for (const item of Object.values<Json>(doc.paths)) {
      for (const op of Object.values<Json>(item)) {
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          if (Number(status) < 400) continue;
          const example = response.content?.['application/json']?.example;
          const body = failureEnvelope.parse(example);
          expect(errorStatus[body.error.code], `${op.operationId} ${status}`).toBe(Number(status));
          count++;
        }
      }
    }
    expect(count).toBeGreaterThan(100);
    // Request fields carry examples too (from the shared schemas).
    const register = doc.paths['/api/agents/register'].post;
    expect(register.requestBody.content['application/json'].schema.properties.address.example).toMatch(/^0x/);
  });

  it('declares 413 and 415 wherever a body is parsed, and 409 and 422 wherever an Idempotency-Key is taken', () => {
    const missing: string[] = [];
    let bodies = 0;
    let keyed = 0;
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        const wanted: string[] = [];
        // Fastify parses the body of these methods before any route runs, a route without a body too.
        if (['post', 'put', 'patch', 'delete'].includes(method)) {
          wanted.push('413', '415');
          bodies++;
        }
        if ((op.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'idempotency-key')) {
          wanted.push('409', '422');
          keyed++;
        }
        for (const status of wanted)
          if (!op.responses[status]) missing.push(`${method.toUpperCase()} ${path} ${status}`);
      }
    }
    expect(missing).toEqual([]);
    expect(bodies).toBeGreaterThan(30);
    expect(keyed).toBeGreaterThanOrEqual(8);
  });

  it('states the scope and the rate limit of each operation, and the headers of a 429', () => {
    const compute = doc.paths['/api/scores/compute'].post;
    expect(compute['x-required-scope']).toBe('read');
    expect(compute['x-rate-limit']).toEqual({ requests: 1000, windowSeconds: 60 });
    expect(compute.responses['429'].headers).toHaveProperty('Retry-After');
    expect(compute.responses['200'].headers).toHaveProperty('RateLimit');
    expect(doc.paths['/api/agents/register'].post['x-rate-limit'].requests).toBe(20);
    expect(doc.paths['/api/agents/register'].post['x-required-scope']).toBe('manage');
    expect(doc.paths['/api/budgets/{address}/spend'].post['x-required-scope']).toBe('spend');
    expect(doc.paths['/api/agents/{address}/score'].post['x-required-scope']).toBe('score');
    expect(doc.paths['/api/audit'].get['x-required-scope']).toBe('admin');
    expect(doc.paths['/api/keys'].get['x-required-scope']).toBe('admin');
    expect(doc.paths['/api/agents'].get['x-required-scope']).toBe('read');
    expect(doc.paths['/health'].get.security).toEqual([]);
    expect(doc.paths['/health'].get['x-rate-limit']).toBeUndefined();
  });

  it('lists 401 and 403 on every operation that needs a key, and on none open to all (never refused for its key)', () => {
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        const guarded = op['x-required-scope'] !== undefined;
        for (const status of ['401', '403'])
          if ((op.responses[status] !== undefined) !== guarded) wrong.push(`${method.toUpperCase()} ${path} ${status}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(doc.paths['/api/agents/{address}/erc8004/feedback/{id}'].get.security).toEqual([]);
  });

  it('shows in each 403 example the refusal of a key without the operation’s own scope', () => {
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        const scope = op['x-required-scope'];
        if (!scope) continue;
        const error = op.responses['403'].content['application/json'].example.error;
        // What the authorize hook answers (apps/api/src/plugins/auth.ts).
        if (error.message !== `this API key lacks the ${scope} scope` || error.details?.required !== scope)
          wrong.push(`${method.toUpperCase()} ${path}: ${error.message}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('names the codes of every failure status, each a real one of that status, the example showing the first', () => {
    const undeclared: string[] = [];
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          if (Number(status) < 400) continue;
          const where = `${method.toUpperCase()} ${path} ${status}`;
          const codes: string[] = response['x-error-codes'] ?? [];
          // A route that lists a status of its own (404, 409, 422, …) must say which codes it answers with.
          if (codes.length === 0) undeclared.push(where);
          for (const code of codes) {
            if (!errorCodes.includes(code as ErrorCode) || errorStatus[code as ErrorCode] !== Number(status))
              wrong.push(`${where}: ${code}`);
            if (!response.description.includes(code)) wrong.push(`${where}: ${code} not in its description`);
          }
          const example = response.content?.['application/json']?.example;
          if (codes.length && example?.error.code !== codes[0]) wrong.push(`${where}: example ${example?.error.code}`);
        }
      }
    }
    expect(undeclared).toEqual([]);
    expect(wrong).toEqual([]);
  });

  it('adds the Idempotency-Key’s codes to the routes that take one, and only to them', () => {
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        const keyed = (op.parameters ?? []).some((p: Json) => p.in === 'header' && p.name === 'idempotency-key');
        const has = (status: string, code: string) => op.responses[status]?.['x-error-codes']?.includes(code) === true;
        if (has('409', 'IDEMPOTENCY_IN_PROGRESS') !== keyed || has('422', 'IDEMPOTENCY_KEY_REUSED') !== keyed)
          wrong.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(wrong).toEqual([]);
    const approve = doc.paths['/api/approvals/{id}/approve'].post.responses;
    expect(approve['404']['x-error-codes']).toEqual(['APPROVAL_NOT_FOUND']);
    expect(approve['409'].description).toMatch(/^APPROVAL_NOT_PENDING, IDEMPOTENCY_IN_PROGRESS: /);
    // A route without a key keeps its own codes only.
    const verify = doc.paths['/api/verify'].post.responses;
    expect([verify['409'], verify['422']]).toEqual([undefined, undefined]);
    const capture = doc.paths['/api/budgets/{address}/authorizations/{id}/capture'].post.responses;
    expect(capture['409'].description).toMatch(/^AUTHORIZATION_NOT_HELD, IDEMPOTENCY_IN_PROGRESS: /);
  });

  it('states the formats and bounds the server enforces: addresses, amounts, asset ids, a list’s limit and score filters', () => {
    const param = (path: string, name: string) =>
      (doc.paths[path].get.parameters as Json[]).find((p) => p.name === name)?.schema;
    const body = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema.properties;
    expect(param('/api/agents/{address}', 'address')).toMatchObject({ type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' });
    expect(body('/api/agents/register').address).toMatchObject({ pattern: '^0x[0-9a-fA-F]{40}$' });
    expect(body('/api/budgets/{address}/spend').amount).toMatchObject({
      type: 'string',
      pattern: '^(0|[1-9][0-9]*)$',
      maxLength: 78,
    });
    expect(body('/api/transactions/record').amount).toMatchObject({ pattern: '^(0|[1-9][0-9]*)$' });
    // A CAIP-19 id, or '' for the default unit.
    const assetPattern = new RegExp(body('/api/budgets/{address}/spend').asset.pattern);
    for (const id of ['', 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'])
      expect(id).toMatch(assetPattern);
    for (const id of ['usdc', 'eip155:8453']) expect(id).not.toMatch(assetPattern);
    for (const path of ['/api/agents', '/api/scores/agents']) {
      expect(param(path, 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 100 });
      expect(param(path, 'minScore')).toMatchObject({ type: 'integer', minimum: 0, maximum: 1000 });
      expect(param(path, 'maxScore')).toMatchObject({ type: 'integer', minimum: 0, maximum: 1000 });
    }
  });

  it('gives an organization’s creation the 409 it answers', () => {
    const conflict = doc.paths['/api/organizations'].post.responses['409'].content['application/json'].example;
    expect(conflict.error.code).toBe('ORGANIZATION_EXISTS');
  });
});

/** The codes the document declares for this operation's status (the route pattern as Fastify has it). */
function declared(method: string, url: string, status: number): string[] {
  return doc.paths[openapiPath(url)]?.[method.toLowerCase()]?.responses[String(status)]?.['x-error-codes'] ?? [];
}

describe('the codes the document declares', () => {
  /** Sends the request and expects its failure, with a code the document declares for its status. */
  async function refused(method: 'GET' | 'POST' | 'PUT', route: string, url: string, payload?: object) {
    const res = await t.app.inject({ method, url, ...(payload && { payload }) });
    expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
    const { code } = failureEnvelope.parse(res.json()).error;
    expect(declared(method, route, res.statusCode), `${method} ${route} ${res.statusCode}`).toContain(code);
    return { status: res.statusCode, code };
  }

  it('are what the routes answer: an unknown approval, a second registration, a capture of a captured hold', async () => {
    expect(await refused('GET', '/api/approvals/:id', '/api/approvals/987654')).toEqual({
      status: 404,
      code: 'APPROVAL_NOT_FOUND',
    });
    expect((await refused('POST', '/api/approvals/:id/approve', '/api/approvals/987654/approve', {})).status).toBe(404);

    const agent = await createAgent(t.app);
    expect(await refused('POST', '/api/agents/register', '/api/agents/register', { address: agent })).toEqual({
      status: 409,
      code: 'AGENT_ALREADY_REGISTERED',
    });

    const funded = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '5000' });
    const hold = await post(t.app, `/api/budgets/${funded}/authorizations`, { amount: '100' });
    expect(hold.statusCode, hold.body).toBe(201);
    const capture = `/api/budgets/${funded}/authorizations/${hold.json().data.authorizationId}/capture`;
    const route = '/api/budgets/:address/authorizations/:id/capture';
    expect((await t.app.inject({ method: 'POST', url: capture, payload: {} })).statusCode).toBe(200);
    expect(await refused('POST', route, capture, {})).toEqual({ status: 409, code: 'AUTHORIZATION_NOT_HELD' });
    const unknownHold = `/api/budgets/${funded}/authorizations/987654/capture`;
    expect((await refused('POST', route, unknownHold, {})).code).toBe('AUTHORIZATION_NOT_FOUND');
  });

  it('are what a spend answers: over a limit, without a budget, for an unknown or observed agent', async () => {
    const route = '/api/budgets/:address/spend';
    const spend = (agent: string) => refused('POST', route, `/api/budgets/${agent}/spend`, { amount: '2000' });
    const funded = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '5000' });
    expect(await spend(funded)).toEqual({ status: 422, code: 'BUDGET_EXCEEDED' });
    expect(await spend(await createAgent(t.app))).toEqual({ status: 422, code: 'BUDGET_NOT_SET' });
    expect(await spend(randomAddress())).toEqual({ status: 404, code: 'AGENT_NOT_FOUND' });
    const observed = randomAddress();
    const tx = await post(t.app, '/api/transactions/record', {
      agent: observed,
      txHash: randomTxHash(),
      amount: '1',
      type: 0,
    });
    expect(tx.statusCode, tx.body).toBe(201);
    expect(await spend(observed)).toEqual({ status: 422, code: 'AGENT_NOT_REGISTERED' });
    const hold = `/api/budgets/${observed}/authorizations`;
    expect(await refused('POST', '/api/budgets/:address/authorizations', hold, { amount: '1' })).toEqual({
      status: 422,
      code: 'AGENT_NOT_REGISTERED',
    });
  });

  it('are what the policies, refunds and webhooks answer', async () => {
    const conflict = await refused('PUT', '/api/policies/default', '/api/policies/default', {
      rules: [{ name: 'all', action: 'allow' }],
      expectedVersion: 99,
    });
    expect(conflict).toEqual({ status: 409, code: 'POLICY_VERSION_CONFLICT' });
    const agent = await createAgent(t.app);
    const refund = `/api/budgets/${agent}/spends/987654/refund`;
    expect(await refused('POST', '/api/budgets/:address/spends/:spendId/refund', refund, {})).toEqual({
      status: 404,
      code: 'SPEND_NOT_FOUND',
    });
    expect(await refused('GET', '/api/webhooks/:id', '/api/webhooks/wh_0000000000000000')).toEqual({
      status: 404,
      code: 'NOT_FOUND',
    });
  });
});

describe('serving the document', () => {
  it('serializes it once: later requests send the same text without building it again', async () => {
    const first = {
      json: (await t.app.inject({ method: 'GET', url: '/openapi.json' })).body,
      ui: (await t.app.inject({ method: 'GET', url: '/docs/json' })).body,
      yaml: await t.app.inject({ method: 'GET', url: '/docs/yaml' }),
    };
    expect(first.yaml.headers['content-type']).toMatch(/yaml/);
    expect(first.yaml.body).toContain('openapi: 3.1.0');
    expect(JSON.parse(first.ui)).toEqual(JSON.parse(first.json));
    // A change to the document object after the first requests shows whether a request
    // serializes it again: none may.
    const built = t.app.openapiDocument() as { info: { title: string } };
    const title = built.info.title;
    built.info.title = 'changed after serializing';
    try {
      expect((await t.app.inject({ method: 'GET', url: '/openapi.json' })).body).toBe(first.json);
      expect((await t.app.inject({ method: 'GET', url: '/docs/json' })).body).toBe(first.ui);
      expect((await t.app.inject({ method: 'GET', url: '/docs/yaml' })).body).toBe(first.yaml.body);
    } finally {
      built.info.title = title;
    }
  });
});

describe('the docs UI', () => {
  it('serves Swagger UI at /docs with its own assets and the same document', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toContain('swagger-ui');
    const bundle = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(bundle.statusCode).toBe(200);
    const init = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.statusCode).toBe(200);
    const json = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.json()).toEqual(doc);
    // Its scripts are its own files; the CSP lets them run.
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
  });
});
