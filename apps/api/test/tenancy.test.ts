import { createHash } from 'node:crypto';
import { jobs } from '@vouch/jobs';
import { auditList, failureEnvelope, organization, organizationList, successEnvelope } from '@vouch/schemas';
import {
  bearer,
  createKey,
  createOrganizationKey,
  createTestApp,
  randomAddress,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ADMIN = 'tenancy-admin-secret-0123456789';

let t: TestContext;
let acme: string;
let globex: string;

beforeAll(async () => {
  t = await createTestApp({ start: '2026-06-01T12:00:00Z', edge: { auth: { mode: 'on', adminKey: ADMIN } } });
  acme = await createOrganizationKey(t.app, ADMIN, 'acme');
  globex = await createOrganizationKey(t.app, ADMIN, 'globex');
});
afterAll(() => t.close());

function call(key: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return t.app.inject({ method, url, headers: bearer(key), ...(payload && { payload }) });
}

function code(res: { json(): unknown }) {
  return failureEnvelope.parse(res.json()).error.code;
}

async function register(key: string, address = randomAddress()) {
  const res = await call(key, 'POST', '/api/agents/register', { address });
  expect(res.statusCode, res.body).toBe(201);
  return address;
}

describe('organizations', () => {
  it('are created by the operator only, with unique ids', async () => {
    const created = await call(ADMIN, 'POST', '/api/organizations', {
      id: 'initech',
      name: 'Initech',
      rateLimitPerMinute: 500,
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(successEnvelope(organization).parse(created.json()).data).toMatchObject({
      id: 'initech',
      name: 'Initech',
      rateLimitPerMinute: 500,
    });
    expect(code(await call(ADMIN, 'POST', '/api/organizations', { id: 'initech', name: 'again' }))).toBe(
      'ORGANIZATION_EXISTS',
    );
    // An organization's own admin key administers its organization, not the service.
    const refused = await call(acme, 'POST', '/api/organizations', { name: 'mine' });
    expect(refused.statusCode).toBe(403);
    expect(code(refused)).toBe('FORBIDDEN');
    // A generated id when none is given.
    const generated = await call(ADMIN, 'POST', '/api/organizations', { name: 'No id' });
    expect(generated.json().data.id).toMatch(/^org_[0-9a-f]{16}$/);
    for (const bad of [{ id: 'Upper', name: 'x' }, { name: '' }, { name: 'x', rateLimitPerMinute: 0 }]) {
      expect((await call(ADMIN, 'POST', '/api/organizations', bad)).statusCode, JSON.stringify(bad)).toBe(400);
    }
  });

  it('are listed whole for the operator; an organization sees only itself', async () => {
    const all = successEnvelope(organizationList).parse((await call(ADMIN, 'GET', '/api/organizations')).json()).data;
    expect(all.organizations.map((o) => o.id)).toEqual(expect.arrayContaining(['default', 'acme', 'globex']));
    const own = successEnvelope(organizationList).parse((await call(acme, 'GET', '/api/organizations')).json()).data;
    expect(own.organizations.map((o) => o.id)).toEqual(['acme']);
    expect((await call(acme, 'GET', '/api/organizations/acme')).statusCode).toBe(200);
    expect(code(await call(acme, 'GET', '/api/organizations/globex'))).toBe('NOT_FOUND');
    expect(code(await call(acme, 'PATCH', '/api/organizations/acme', { name: 'Acme!' }))).toBe('FORBIDDEN');
    const renamed = await call(ADMIN, 'PATCH', '/api/organizations/acme', { name: 'Acme Payments' });
    expect(renamed.json().data).toMatchObject({ id: 'acme', name: 'Acme Payments' });
  });
});

describe('keys', () => {
  it('belong to an organization: its admin creates, lists and revokes only its own', async () => {
    const made = await t.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'acme-reader', scopes: ['read'] },
      headers: bearer(acme),
    });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json().data).toMatchObject({ organizationId: 'acme', scopes: ['read'] });
    const id = made.json().data.id as string;

    // Not for another organization, and not another organization's key.
    expect(code(await call(acme, 'POST', '/api/keys', { name: 'x', scopes: ['read'], organizationId: 'globex' }))).toBe(
      'FORBIDDEN',
    );
    expect(code(await call(globex, 'DELETE', `/api/keys/${id}`))).toBe('NOT_FOUND');
    const listed = (await call(globex, 'GET', '/api/keys')).json().data.keys as Array<{ organizationId: string }>;
    expect(listed.length).toBeGreaterThan(0);
    expect(new Set(listed.map((k) => k.organizationId))).toEqual(new Set(['globex']));
    // The operator sees and revokes any.
    expect((await call(ADMIN, 'DELETE', `/api/keys/${id}`)).json().data.status).toBe('revoked');
    // A key for an organization that does not exist is refused.
    const none = await call(ADMIN, 'POST', '/api/keys', { name: 'x', scopes: ['read'], organizationId: 'nobody' });
    expect(none.statusCode).toBe(400);
  });

  it('and organizations are named in Unicode text: a lone surrogate or bytes that are not UTF-8 are 400, nothing stored', async () => {
    const json = { 'content-type': 'application/json' };
    const count = async (table: 'api_keys' | 'organizations' | 'audit_log') =>
      (await t.database.db.selectFrom(table).selectAll().execute()).length;
    const counts = async () => [await count('api_keys'), await count('organizations'), await count('audit_log')];
    const before = await counts();
    const bodies: Array<[string, string | Buffer]> = [
      // An escape of half a surrogate pair is no character: stored, it would read U+FFFD, not as sent.
      ['/api/keys', '{"name":"ops \\ud800","scopes":["read"]}'],
      ['/api/keys', '{"name":"\\udc00\\ud800","scopes":["read"]}'],
      ['/api/keys', '{"name":"x","scopes":["read"],"\\ud83d":1}'],
      // Bytes that are not UTF-8 (I-JSON is UTF-8): decoded as text, they would read U+FFFD as well.
      [
        '/api/keys',
        Buffer.concat([Buffer.from('{"name":"ops '), Buffer.from([0xc3, 0x28]), Buffer.from('","scopes":["read"]}')]),
      ],
      [
        '/api/keys',
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('","scopes":["read"]}')]),
      ],
      ['/api/organizations', '{"name":"Acme \\udfff"}'],
    ];
    for (const [url, payload] of bodies) {
      const res = await t.app.inject({ method: 'POST', url, payload, headers: { ...bearer(ADMIN), ...json } });
      expect(res.statusCode, `${url} ${payload.toString()}: ${res.body}`).toBe(400);
      expect(code(res)).toBe('INVALID_JSON');
    }
    expect(await counts()).toEqual(before);
    // A pair written as two escapes is one character, and is kept as sent.
    const paired = await t.app.inject({
      method: 'POST',
      url: '/api/keys',
      payload: '{"name":"ops \\ud83d\\udd11 \\\\ud800","scopes":["read"]}',
      headers: { ...bearer(acme), ...json },
    });
    expect(paired.statusCode, paired.body).toBe(201);
    expect(paired.json().data.name).toBe('ops 🔑 \\ud800');
  });

  it('made by a key that expires expire with it at the latest, so a key lent for a while leaves none behind', async () => {
    const expires = Math.floor(t.clock.now.getTime() / 1000) + 3600;
    const lent = await call(acme, 'POST', '/api/keys', { name: 'lent', scopes: ['admin'], expiresAt: expires });
    expect(lent.statusCode, lent.body).toBe(201);
    const key = lent.json().data.key as string;
    const keys = async () => (await t.database.db.selectFrom('api_keys').select('id').execute()).length;
    const audited = async () => (await t.database.db.selectFrom('audit_log').select('seq').execute()).length;
    const before = [await keys(), await audited()];
    for (const outliving of [{}, { expiresAt: expires + 1 }]) {
      const res = await call(key, 'POST', '/api/keys', { name: 'heir', scopes: ['admin'], ...outliving });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [
          { path: 'body.expiresAt', message: `must be at most ${expires}, when the key that creates it expires` },
        ],
      });
    }
    expect([await keys(), await audited()]).toEqual(before);
    for (const within of [expires, expires - 60]) {
      const res = await call(key, 'POST', '/api/keys', { name: 'heir', scopes: ['read'], expiresAt: within });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().data.expiresAt).toBe(within);
    }
    // A key that never expires, and the operator, make keys that never expire.
    const forever = await call(acme, 'POST', '/api/keys', { name: 'forever', scopes: ['read'] });
    expect(forever.statusCode, forever.body).toBe(201);
    expect(forever.json().data.expiresAt).toBeNull();
  });
});

describe('scopes', () => {
  let agent: string;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    for (const scope of ['read', 'spend', 'manage', 'approve', 'score'] as const) {
      keys[scope] = await createKey(t.app, acme, { name: `acme-${scope}`, scopes: [scope] });
    }
    agent = await register(acme);
    const set = await call(acme, 'POST', `/api/budgets/${agent}/set`, { dailyLimit: '1000', monthlyLimit: '5000' });
    expect(set.statusCode).toBe(200);
  });

  const cases: Array<[string, 'GET' | 'POST', (a: string) => string, (a: string) => object | undefined, string]> = [
    ['read budget', 'GET', (a) => `/api/budgets/${a}`, () => undefined, 'read'],
    ['check', 'POST', (a) => `/api/budgets/${a}/check`, () => ({ amount: '1' }), 'read'],
    ['spend', 'POST', (a) => `/api/budgets/${a}/spend`, () => ({ amount: '1' }), 'spend'],
    ['set limits', 'POST', (a) => `/api/budgets/${a}/set`, () => ({ dailyLimit: '2000' }), 'manage'],
    ['register', 'POST', () => '/api/agents/register', () => ({ address: randomAddress() }), 'manage'],
    ['set score', 'POST', (a) => `/api/agents/${a}/score`, () => ({ score: 500, reason: '0x01' }), 'score'],
    [
      'record',
      'POST',
      () => '/api/transactions/record',
      (a) => ({ agent: a, txHash: `0x${randomAddress().slice(2)}${'0'.repeat(24)}`, amount: '5', type: 0 }),
      'score',
    ],
  ];

  for (const [name, method, url, body, needs] of cases) {
    it(`${name} needs ${needs} (or admin), and no other scope`, async () => {
      for (const [scope, key] of Object.entries(keys)) {
        const res = await call(key, method, url(agent), body(agent));
        const allowed = scope === needs || needs === 'read';
        expect(res.statusCode < 300, `${scope} → ${name}: ${res.statusCode} ${res.body}`).toBe(allowed);
        if (!allowed) expect(code(res)).toBe('FORBIDDEN');
      }
      expect((await call(acme, method, url(agent), body(agent))).statusCode).toBeLessThan(300);
    });
  }
});

describe('agents are global, budgets are each organization’s own', () => {
  it('only the registering organization changes an agent’s score, owner and history', async () => {
    const agent = await register(acme);
    const forbidden = [
      await call(globex, 'POST', `/api/agents/${agent}/score`, { score: 1000, reason: '0x01' }),
      await call(globex, 'POST', `/api/agents/${agent}/owner`, { owner: randomAddress() }),
      await call(globex, 'POST', '/api/agents/batch-scores', { agents: [agent], scores: [1000], reasons: ['0x01'] }),
      await call(globex, 'POST', '/api/transactions/record', {
        agent,
        txHash: `0x${'ab'.repeat(32)}`,
        amount: '1',
        type: 0,
      }),
    ];
    for (const res of forbidden) {
      expect(res.statusCode, res.body).toBe(403);
      expect(code(res)).toBe('FORBIDDEN');
    }
    // Everyone reads the same agent and score.
    expect((await call(globex, 'GET', `/api/agents/${agent}`)).json().data.score).toBe(0);
    expect((await call(acme, 'POST', `/api/agents/${agent}/score`, { score: 720, reason: '0x01' })).statusCode).toBe(
      200,
    );
    expect((await call(globex, 'GET', `/api/agents/${agent}/score`)).json().data.score).toBe(720);
    // Registering someone else's agent is a conflict, not a takeover.
    expect(code(await call(globex, 'POST', '/api/agents/register', { address: agent }))).toBe(
      'AGENT_ALREADY_REGISTERED',
    );
  });

  it('only the owner organization’s spends count in the shared score’s budget compliance', async () => {
    const agent = await register(acme);
    const compliance = async () =>
      (await call(globex, 'GET', `/api/scores/${agent}`)).json().data.factors.budgetCompliance.value;
    const limits = { dailyLimit: '100', monthlyLimit: '100', perTxLimit: '2' };
    // Another organization's refused spends are its own business, not the agent's reputation.
    expect((await call(globex, 'POST', `/api/budgets/${agent}/set`, limits)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) {
      expect((await call(globex, 'POST', `/api/budgets/${agent}/spend`, { amount: '5' })).statusCode).toBe(422);
    }
    expect(await compliance()).toBe(1);
    // The owner's count: one accepted, one refused.
    expect((await call(acme, 'POST', `/api/budgets/${agent}/set`, limits)).statusCode).toBe(200);
    expect((await call(acme, 'POST', `/api/budgets/${agent}/spend`, { amount: '1' })).statusCode).toBe(200);
    expect((await call(acme, 'POST', `/api/budgets/${agent}/spend`, { amount: '5' })).statusCode).toBe(422);
    expect(await compliance()).toBe(0.5);
  });

  it('two organizations hold different budgets for the same agent and spend them apart', async () => {
    const agent = await register(acme);
    expect(
      (await call(acme, 'POST', `/api/budgets/${agent}/set`, { dailyLimit: '100', monthlyLimit: '1000' })).statusCode,
    ).toBe(200);
    // Globex has no budget of this agent yet: it sees none of Acme's.
    expect(code(await call(globex, 'GET', `/api/budgets/${agent}`))).toBe('BUDGET_NOT_FOUND');
    expect((await call(globex, 'POST', `/api/budgets/${agent}/check`, { amount: '1' })).json().data.reason).toBe(
      'NO_BUDGET',
    );
    expect(code(await call(globex, 'POST', `/api/budgets/${agent}/spend`, { amount: '1' }))).toBe('BUDGET_NOT_SET');

    expect(
      (await call(globex, 'POST', `/api/budgets/${agent}/set`, { dailyLimit: '7', monthlyLimit: '70' })).statusCode,
    ).toBe(200);
    expect((await call(acme, 'POST', `/api/budgets/${agent}/spend`, { amount: '60' })).json().data.dailySpent).toBe(
      '60',
    );
    expect((await call(globex, 'POST', `/api/budgets/${agent}/spend`, { amount: '5' })).json().data.dailySpent).toBe(
      '5',
    );
    const refused = await call(globex, 'POST', `/api/budgets/${agent}/spend`, { amount: '5' });
    expect(refused.json().error.details.reason).toBe('DAILY_LIMIT');
    const a = (await call(acme, 'GET', `/api/budgets/${agent}`)).json().data;
    const g = (await call(globex, 'GET', `/api/budgets/${agent}`)).json().data;
    expect([a.dailyLimit, a.dailySpent]).toEqual(['100', '60']);
    expect([g.dailyLimit, g.dailySpent]).toEqual(['7', '5']);
    // The ledger rows carry their organization and the key that spent.
    const rows = await t.database.db
      .selectFrom('spends')
      .select(['organization_id', 'accepted', 'actor_key_id'])
      .where('agent', '=', agent)
      .orderBy('id')
      .execute();
    expect(rows.map((r) => [r.organization_id, r.accepted])).toEqual([
      ['acme', true],
      ['globex', true],
      ['globex', false],
    ]);
    expect(rows.every((r) => r.actor_key_id !== null)).toBe(true);
  });

  it('a queued job is read by the organization that queued it', async () => {
    const agent = await register(acme);
    const batch = await call(acme, 'POST', '/api/agents/batch-scores', {
      agents: [agent],
      scores: [640],
      reasons: ['0x02'],
    });
    expect(batch.statusCode, batch.body).toBe(200);
    const jobId = batch.headers['x-job-id'] as string;
    expect((await call(acme, 'GET', `/api/jobs/${jobId}`)).statusCode).toBe(200);
    expect(code(await call(globex, 'GET', `/api/jobs/${jobId}`))).toBe('JOB_NOT_FOUND');
    expect((await call(ADMIN, 'GET', `/api/jobs/${jobId}`)).statusCode).toBe(200);
  });

  it('a job of the service’s own (a webhook delivery, a sweep) is read by the operator only', async () => {
    const queued = await t.jobs.enqueue(jobs.expireHolds, {});
    for (const key of [acme, globex]) {
      expect(code(await call(key, 'GET', `/api/jobs/${queued.jobId}`))).toBe('JOB_NOT_FOUND');
    }
    expect((await call(ADMIN, 'GET', `/api/jobs/${queued.jobId}`)).statusCode).toBe(200);
  });
});

describe('the audit log', () => {
  it('records every write with its organization and key, newest first, filtered and paginated', async () => {
    const org = await createOrganizationKey(t.app, ADMIN, 'umbrella');
    const spender = await createKey(t.app, org, { name: 'umbrella-spender', scopes: ['spend'] });
    const agent = await register(org);
    await call(org, 'POST', `/api/budgets/${agent}/set`, { dailyLimit: '10', monthlyLimit: '100' });
    await call(spender, 'POST', `/api/budgets/${agent}/spend`, { amount: '4' });
    await call(spender, 'POST', `/api/budgets/${agent}/spend`, { amount: '40' });
    await call(org, 'POST', `/api/agents/${agent}/score`, { score: 300, reason: '0xbeef' });

    const page = successEnvelope(auditList).parse((await call(org, 'GET', '/api/audit?limit=100')).json()).data;
    expect(page.entries.map((e) => e.action)).toEqual([
      'score.set',
      'spend.refused',
      'spend.accepted',
      'budget.set',
      'agent.registered',
      'key.created',
      'key.created',
      'organization.created',
    ]);
    expect(page.entries.every((e) => e.organizationId === 'umbrella')).toBe(true);
    const spends = page.entries.filter((e) => e.action.startsWith('spend.'));
    expect(spends.every((e) => e.target === agent && e.actor === 'key' && e.actorKeyId !== null)).toBe(true);
    expect(spends.map((e) => e.details)).toEqual([
      { spendId: expect.any(String), amount: '40', asset: '', reason: 'PER_TX_LIMIT', authorizationId: null },
      { spendId: expect.any(String), amount: '4', asset: '', reason: null, authorizationId: null },
    ]);
    expect(page.entries.at(-1)?.actor).toBe('admin');
    // Each entry chains to the one before.
    const chronological = [...page.entries].reverse();
    chronological.forEach((e, i) => {
      expect(e.seq).toBe(String(i + 1));
      expect(e.prevHash).toBe(i === 0 ? '0'.repeat(64) : chronological[i - 1]?.hash);
    });

    // Filters and pages.
    const filtered = (await call(org, 'GET', `/api/audit?action=spend.accepted&target=${agent}`)).json().data;
    expect(filtered.entries).toHaveLength(1);
    const first = (await call(org, 'GET', '/api/audit?limit=3')).json().data;
    expect(first.entries.map((e: { seq: string }) => e.seq)).toEqual(['8', '7', '6']);
    const second = (await call(org, 'GET', `/api/audit?limit=3&cursor=${first.nextCursor}`)).json().data;
    expect(second.entries.map((e: { seq: string }) => e.seq)).toEqual(['5', '4', '3']);
    expect((await call(org, 'GET', '/api/audit?cursor=bm9wZQ')).statusCode).toBe(400);
    expect((await call(org, 'GET', '/api/audit?from=10000000000000')).statusCode).toBe(400);
  });

  it('is read by an organization’s admin only, and another organization’s by the operator only', async () => {
    const reader = await createKey(t.app, acme, { name: 'acme-audit-reader', scopes: ['read'] });
    expect(code(await call(reader, 'GET', '/api/audit'))).toBe('FORBIDDEN');
    expect(code(await call(acme, 'GET', '/api/audit?organizationId=globex'))).toBe('FORBIDDEN');
    const theirs = (await call(ADMIN, 'GET', '/api/audit?organizationId=globex')).json().data.entries;
    expect(theirs.length).toBeGreaterThan(0);
    expect(theirs.every((e: { organizationId: string }) => e.organizationId === 'globex')).toBe(true);
  });

  it('names an organization that does not exist as not found to the operator, not as an empty log', async () => {
    for (const url of ['/api/audit?organizationId=no-such-org', '/api/audit/export?organizationId=no-such-org']) {
      const res = await call(ADMIN, 'GET', url);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json().error).toMatchObject({ code: 'NOT_FOUND', message: 'organization no-such-org is not known' });
      // An organization's own admin learns nothing of which organizations exist.
      expect(code(await call(acme, 'GET', url))).toBe('FORBIDDEN');
    }
  });

  it('records the operator’s change of an organization’s agent in that organization’s log', async () => {
    const agent = await register(acme);
    const owner = randomAddress();
    expect((await call(ADMIN, 'POST', `/api/agents/${agent}/owner`, { owner })).statusCode).toBe(200);
    expect((await call(ADMIN, 'POST', `/api/agents/${agent}/score`, { score: 640, reason: '0x01' })).statusCode).toBe(
      200,
    );
    const entries = auditList.parse((await call(acme, 'GET', `/api/audit?target=${agent}`)).json().data).entries;
    expect(entries.map((e) => [e.action, e.actor, e.organizationId])).toEqual([
      ['score.set', 'admin', 'acme'],
      ['agent.owner_changed', 'admin', 'acme'],
      ['agent.registered', 'key', 'acme'],
    ]);
  });

  it('exports the chain as JSON lines whose hashes anyone can check with sha256', async () => {
    const res = await call(acme, 'GET', '/api/audit/export');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const lines = res.body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(3);
    let previous = '0'.repeat(64);
    for (const [i, line] of lines.entries()) {
      expect(line.seq).toBe(String(i + 1));
      expect(line.prevHash).toBe(previous);
      const hash = createHash('sha256').update(`${line.prevHash}\n${line.seq}\n${line.entry}`).digest('hex');
      expect(hash).toBe(line.hash);
      expect(JSON.parse(line.entry).organizationId).toBe('acme');
      previous = line.hash;
    }
  });

  it('verifies whole, and is append-only in the database', async () => {
    const verified = await t.services.audit.verify();
    expect(verified.broken).toEqual([]);
    expect(verified.organizations).toBeGreaterThanOrEqual(4);
    await expect(t.database.db.deleteFrom('audit_log').where('organization_id', '=', 'acme').execute()).rejects.toThrow(
      /append-only/,
    );
    await expect(
      t.database.db
        .updateTable('audit_log')
        .set({ action: 'nothing.happened' })
        .where('organization_id', '=', 'acme')
        .execute(),
    ).rejects.toThrow(/append-only/);
  });
});

describe('rate limits per organization', () => {
  it('are shared by all the keys of an organization, on top of each key’s own', async () => {
    const limited = await createTestApp({
      edge: {
        auth: { mode: 'on', adminKey: ADMIN },
        rateLimit: { limits: { default: 100, register: 20, batch: 10, compute: 1000 }, organizationLimit: 5 },
      },
    });
    try {
      const owner = await createOrganizationKey(limited.app, ADMIN, 'small');
      const other = await createKey(limited.app, owner, { name: 'small-2', scopes: ['read'] });
      const statuses: number[] = [];
      for (const key of [owner, other, owner, other, owner, other, other]) {
        const res = await limited.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(key) });
        statuses.push(res.statusCode);
        if (res.statusCode === 429) {
          expect(code(res)).toBe('RATE_LIMITED');
          expect(res.headers['retry-after']).toBeDefined();
        }
      }
      // Creating the second key spent one request of the five.
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429]);
      // Another organization is not affected.
      const elsewhere = await createOrganizationKey(limited.app, ADMIN, 'elsewhere');
      expect(
        (await limited.app.inject({ method: 'GET', url: '/api/agents', headers: bearer(elsewhere) })).statusCode,
      ).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
