import { randomUUID } from 'node:crypto';
import { createProcessors } from '@vouch/core';
import { sql } from '@vouch/db';
import {
  approval,
  decision,
  decisionList,
  failureEnvelope,
  policy,
  policyVersions,
  successEnvelope,
} from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createKey,
  createOrganizationKey,
  createTestApp,
  deactivateSanctionsList,
  get,
  listOnActiveSnapshot,
  lockWaiters,
  post,
  randomAddress,
  recordTx,
  type TestContext,
  until,
  withoutSanctionsList,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  // A Wednesday, 10:00 UTC.
  t = await createTestApp({ start: '2026-06-10T10:00:00Z' });
});
afterAll(() => t.close());

/** On the bundled OFAC list (data/sanctions). */
const SANCTIONED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';
const limits = { dailyLimit: '1000', monthlyLimit: '10000', perTxLimit: '800' };

async function decideRaw(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return post(t.app, '/api/decisions', body, headers);
}
async function decideOk(body: Record<string, unknown>) {
  const res = await decideRaw(body);
  expect(res.statusCode, res.body).toBe(200);
  return successEnvelope(decision).parse(res.json()).data;
}
const codes = (d: { reasons: Array<{ code: string }> }) => d.reasons.map((r) => r.code);
async function setPolicy(agent: string | null, rules: unknown[]) {
  const res = await t.app.inject({
    method: 'PUT',
    url: agent ? `/api/agents/${agent}/policy` : '/api/policies/default',
    payload: { rules },
  });
  expect(res.statusCode, res.body).toBe(200);
  return successEnvelope(policy).parse(res.json()).data;
}

describe('a decision', () => {
  it('allows a payment within budget with no policy, says why, and is stored as it was answered', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const counterparty = randomAddress();
    const d = await decideOk({ agent, amount: '100', counterparty, category: 'compute', context: { order: 'o-7' } });
    expect(d).toMatchObject({
      decision: 'allow',
      agent,
      amount: '100',
      asset: '',
      counterparty,
      category: 'compute',
      score: 0,
      grade: 'D',
      confidence: 0,
      sanctions: {
        agent: 'clear',
        counterparty: 'clear',
        list: { name: expect.any(String), snapshotDate: '2024-09-27', entries: 156, contentHash: expect.any(String) },
      },
      budget: { allowed: true, reason: null, dailyRemaining: '1000', monthlyRemaining: '10000' },
      policy: { agent: null, version: null, matchedRule: null },
      modelVersion: 'vouch-score-1',
      authorization: null,
      approvalId: null,
    });
    expect(codes(d)).toEqual(['NO_POLICY']);
    // Its id is a UUIDv7: a later decision's sorts after it (the primary key's index grows at its right edge).
    const uuidV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    expect(d.decisionId).toMatch(uuidV7);
    // Ids of one millisecond are in no order among themselves: the next one is made in a later one.
    await new Promise((resolve) => setTimeout(resolve, 2));
    const later = await decideOk({ agent, amount: '1' });
    expect(later.decisionId).toMatch(uuidV7);
    expect(later.decisionId > d.decisionId).toBe(true);
    // A decision changes no budget by itself.
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailySpent).toBe('0');
    const stored = await get(t.app, `/api/decisions/${d.decisionId}`);
    expect(stored.json().data).toEqual(d);
    const row = await t.database.db
      .selectFrom('decisions')
      .select(['context'])
      .where('id', '=', d.decisionId)
      .executeTakeFirstOrThrow();
    expect(row.context).toEqual({ order: 'o-7' });
    expect((await get(t.app, `/api/decisions/${randomUUID()}`)).json().error.code).toBe('DECISION_NOT_FOUND');
    expect((await get(t.app, '/api/decisions/99999999')).statusCode).toBe(400);
  });

  it('decided together, each is stored exactly as answered: quotes, backslashes, unicode and 78-digit amounts', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const huge = (2n ** 256n - 1n).toString(); // 78 digits
    const contexts = [
      { note: 'a "quoted" \\ back\\slash', nested: { list: [1, 'two', null, true] } },
      { emoji: '💸 é ü', braces: '{},"[]"' },
      null,
    ];
    // Sent at once, so the batch writer stores them in one statement.
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(t.app, '/api/decisions', {
          agent,
          amount: i % 2 ? huge : String(i + 1),
          counterparty: randomAddress(),
          ...(contexts[i % 3] && { context: contexts[i % 3] }),
        }),
      ),
    );
    for (const [i, res] of answers.entries()) {
      expect(res.statusCode, res.body).toBe(200);
      const d = res.json().data;
      expect(d.amount).toBe(i % 2 ? huge : String(i + 1));
      expect((await get(t.app, `/api/decisions/${d.decisionId}`)).json().data).toEqual(d);
      const row = await t.database.db
        .selectFrom('decisions')
        .select(['context', sql<string>`amount::text`.as('amount')])
        .where('id', '=', d.decisionId)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ context: contexts[i % 3] ?? null, amount: d.amount });
    }
  });

  it('denies an unknown agent, one without a budget, and a payment over a limit, listing every reason', async () => {
    const unknown = await decideOk({ agent: randomAddress(), amount: '1' });
    expect(unknown.decision).toBe('deny');
    expect(codes(unknown)).toEqual(['AGENT_UNKNOWN', 'NO_BUDGET', 'NO_POLICY']);
    expect(unknown.score).toBeNull();

    const observed = randomAddress();
    await recordTx(t.app, observed);
    expect(codes(await decideOk({ agent: observed, amount: '1' }))).toEqual([
      'AGENT_NOT_REGISTERED',
      'NO_BUDGET',
      'NO_POLICY',
    ]);

    const agent = await createAgentWithBudget(t.app, limits);
    expect(codes(await decideOk({ agent, amount: '801' }))).toEqual(['PER_TX_LIMIT', 'NO_POLICY']);
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '700' });
    const over = await decideOk({ agent, amount: '301' });
    expect([over.decision, codes(over), over.budget?.dailyRemaining]).toEqual([
      'deny',
      ['DAILY_LIMIT', 'NO_POLICY'],
      '300',
    ]);
  });

  it('denies when the agent, its owner or the counterparty is sanctioned', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const toListed = await decideOk({ agent, amount: '10', counterparty: SANCTIONED });
    expect([toListed.decision, codes(toListed), toListed.sanctions.counterparty]).toEqual([
      'deny',
      ['COUNTERPARTY_SANCTIONED', 'NO_POLICY'],
      'listed',
    ]);
    const owned = await createAgent(t.app, { owner: SANCTIONED });
    await post(t.app, `/api/budgets/${owned}/set`, limits);
    const byOwned = await decideOk({ agent: owned, amount: '10' });
    expect([byOwned.decision, codes(byOwned), byOwned.sanctions.agent]).toEqual([
      'deny',
      ['OWNER_SANCTIONED', 'NO_POLICY'],
      'listed',
    ]);
  });

  it('fails closed without an active sanctions list: nobody passes', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await withoutSanctionsList(t.database.db, async () => {
      const d = await decideOk({ agent, amount: '10', counterparty: randomAddress() });
      expect([d.decision, codes(d)]).toEqual(['deny', ['SANCTIONS_LIST_UNAVAILABLE', 'NO_POLICY']]);
      expect(d.sanctions).toEqual({ agent: 'unavailable', counterparty: 'unavailable', list: null });
    });
  });

  it('is idempotent on its key: a retry gets the stored decision, not a second one or a second hold', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const body = { agent, amount: '40', hold: true };
    const first = await decideRaw(body, { 'idempotency-key': 'pay-1' });
    const again = await decideRaw(body, { 'idempotency-key': 'pay-1' });
    expect([first.statusCode, again.statusCode, again.headers['idempotency-replayed']]).toEqual([200, 200, 'true']);
    expect(again.json().data.decisionId).toBe(first.json().data.decisionId);
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('40');
    expect((await decideRaw({ ...body, amount: '41' }, { 'idempotency-key': 'pay-1' })).json().error.code).toBe(
      'IDEMPOTENCY_KEY_REUSED',
    );
    // An approval named under a key is read in the key's transaction too.
    const invalid = await decideRaw({ agent, amount: '5', approvalId: '99999999' }, { 'idempotency-key': 'pay-2' });
    expect(codes(invalid.json().data)).toContain('APPROVAL_INVALID');
    expect(invalid.json().data.approvalId).toBeNull();
  });

  it('refuses bad input with 400 and stores nothing', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const before = await t.database.db
      .selectFrom('decisions')
      .select(sql<number>`count(*)::int`.as('n'))
      .executeTakeFirst();
    for (const body of [
      {},
      { agent },
      { agent, amount: '0' },
      { agent, amount: '1', asset: 'USDC' },
      { agent, amount: '1', counterparty: 'x' },
      { agent, amount: '1', hold: 'yes' },
      { agent, amount: '1', approvalId: 'abc' },
      { agent, amount: '1', extra: 1 },
    ]) {
      expect((await decideRaw(body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    const after = await t.database.db
      .selectFrom('decisions')
      .select(sql<number>`count(*)::int`.as('n'))
      .executeTakeFirst();
    expect(after).toEqual(before);
  });
});

describe('an agent’s decisions', () => {
  async function list(agent: string, query = '') {
    const res = await get(t.app, `/api/agents/${agent}/decisions${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return successEnvelope(decisionList).parse(res.json()).data;
  }

  it('are listed newest first, a page at a time, each as its GET answers it, filtered by verdict and time', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const made: string[] = [];
    // Three decisions in one millisecond and two later: time orders them, then the id.
    for (const amount of ['1', '2', '3']) made.push((await decideOk({ agent, amount })).decisionId);
    t.clock.advance(5_000);
    made.push((await decideOk({ agent, amount: '900' })).decisionId); // over perTxLimit: deny
    t.clock.advance(5_000);
    made.push((await decideOk({ agent, amount: '4' })).decisionId);
    const all = await list(agent, '?limit=100');
    expect(all.nextCursor).toBeNull();
    expect(new Set(all.decisions.map((d) => d.decisionId))).toEqual(new Set(made));
    expect(all.decisions.slice(0, 2).map((d) => d.decisionId)).toEqual([made[4], made[3]]);
    for (const d of all.decisions) {
      const one = await get(t.app, `/api/decisions/${d.decisionId}`);
      expect(successEnvelope(decision).parse(one.json()).data).toEqual(d);
    }
    // Two at a time: the pages together are the whole list, in its order, none twice.
    const paged: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const pageOf: { decisions: Array<{ decisionId: string }>; nextCursor: string | null } = await list(
        agent,
        `?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(pageOf.decisions.length).toBeLessThanOrEqual(2);
      paged.push(...pageOf.decisions.map((d) => d.decisionId));
      cursor = pageOf.nextCursor;
    }
    expect(paged).toEqual(all.decisions.map((d) => d.decisionId));
    expect((await list(agent, '?decision=deny')).decisions.map((d) => d.decisionId)).toEqual([made[3]]);
    const at = Math.floor(t.clock.now.getTime() / 1000);
    expect((await list(agent, `?from=${at - 5}&to=${at}`)).decisions.map((d) => d.decisionId)).toEqual([made[3]]);
    expect((await list(agent, `?from=${at}`)).decisions.map((d) => d.decisionId)).toEqual([made[4]]);
  });

  it('are this organization’s only; an unknown address is 404, one decided about is listed', async () => {
    const unknown = randomAddress();
    const res = await get(t.app, `/api/agents/${unknown}/decisions`);
    expect(res.statusCode).toBe(404);
    expect(failureEnvelope.parse(res.json()).error.code).toBe('AGENT_NOT_FOUND');
    const denied = await decideOk({ agent: unknown, amount: '1' });
    expect(denied.decision).toBe('deny');
    expect((await list(unknown)).decisions.map((d) => d.decisionId)).toEqual([denied.decisionId]);
    expect((await list(unknown, '?decision=allow')).decisions).toEqual([]);
  });

  it('refuses a cursor it did not give out, a bad filter and an empty time range', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await decideOk({ agent, amount: '1' });
    await decideOk({ agent, amount: '2' });
    const { nextCursor } = await list(agent, '?limit=1');
    expect(nextCursor).not.toBeNull();
    const bad = [
      `${nextCursor}=`,
      Buffer.from('12_not-a-uuid').toString('base64url'),
      Buffer.from(`1_${randomUUID()} `).toString('base64url'),
      'x',
    ].map((c) => `?cursor=${encodeURIComponent(c)}`);
    for (const query of [...bad, '?decision=maybe', '?limit=0', '?limit=101', '?from=10&to=10', '?agent=x']) {
      const res = await get(t.app, `/api/agents/${agent}/decisions${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(failureEnvelope.parse(res.json()).error.code, query).toBe('VALIDATION_ERROR');
    }
  });
});

describe('policies', () => {
  it('apply the first matching rule; a rule set that matches nothing denies', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const blocked = randomAddress();
    await setPolicy(agent, [
      { name: 'blocked', action: 'deny', when: { counterpartyIn: [blocked] } },
      { name: 'big', action: 'review', when: { amountAbove: '500' } },
      { name: 'compute', action: 'allow', when: { categoryIn: ['compute'] } },
    ]);
    const denied = await decideOk({ agent, amount: '10', counterparty: blocked, category: 'compute' });
    expect([denied.decision, codes(denied), denied.policy]).toEqual([
      'deny',
      ['POLICY_DENY'],
      { agent, version: 1, matchedRule: 'blocked' },
    ]);
    expect((await decideOk({ agent, amount: '600', category: 'compute' })).decision).toBe('review');
    const allowed = await decideOk({ agent, amount: '10', category: 'compute' });
    expect([allowed.decision, codes(allowed)]).toEqual(['allow', ['POLICY_ALLOW']]);
    const unmatched = await decideOk({ agent, amount: '10', category: 'travel' });
    expect([unmatched.decision, codes(unmatched)]).toEqual(['deny', ['POLICY_NO_MATCH']]);
  });

  it('fall back to the organization’s default policy; an agent’s own policy takes its place', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const other = await createAgentWithBudget(t.app, limits);
    await setPolicy(null, [{ name: 'small only', action: 'allow', when: { amountAtMost: '50' } }]);
    try {
      const d = await decideOk({ agent: other, amount: '60' });
      expect([d.decision, d.policy.agent, codes(d)]).toEqual(['deny', null, ['POLICY_NO_MATCH']]);
      await setPolicy(agent, [{ name: 'anything', action: 'allow' }]);
      expect((await decideOk({ agent, amount: '60' })).policy).toMatchObject({ agent, matchedRule: 'anything' });
    } finally {
      await t.app.inject({ method: 'DELETE', url: '/api/policies/default' });
    }
    expect(codes(await decideOk({ agent: other, amount: '60' }))).toEqual(['NO_POLICY']);
  });

  it('are versioned: every change a version, earlier ones readable, a deletion kept in the history', async () => {
    const agent = await createAgent(t.app);
    expect((await get(t.app, `/api/agents/${agent}/policy`)).json().error.code).toBe('POLICY_NOT_FOUND');
    const v1 = await setPolicy(agent, [{ name: 'a', action: 'allow' }]);
    const v2 = await setPolicy(agent, [{ name: 'b', action: 'deny' }]);
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect((await get(t.app, `/api/agents/${agent}/policy`)).json().data.rules[0].name).toBe('b');
    expect((await get(t.app, `/api/agents/${agent}/policy?version=1`)).json().data.rules[0].name).toBe('a');
    // A version beyond what can be stored is refused as such, not passed to the database.
    const huge = await get(t.app, `/api/agents/${agent}/policy?version=2147483648`);
    expect([huge.statusCode, huge.json().error.details?.[0]?.path]).toEqual([400, 'querystring.version']);
    expect((await get(t.app, `/api/agents/${agent}/policy?version=2147483647`)).json().error.code).toBe(
      'POLICY_NOT_FOUND',
    );
    const deleted = await t.app.inject({ method: 'DELETE', url: `/api/agents/${agent}/policy` });
    expect(deleted.json().data).toMatchObject({ version: 3, rules: null });
    expect((await get(t.app, `/api/agents/${agent}/policy`)).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/agents/${agent}/policy` })).statusCode).toBe(404);
    const versions = (await get(t.app, `/api/agents/${agent}/policy/versions`)).json().data.versions;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    expect((await get(t.app, `/api/agents/${randomAddress()}/policy`)).json().error.code).toBe('AGENT_NOT_FOUND');
  });

  it('list their versions a page at a time, newest first, for an agent and for the default', async () => {
    const agent = await createAgent(t.app);
    // The default policy is the file's organization's: it is put back as it was afterwards.
    const before = await get(t.app, '/api/policies/default');
    try {
      for (const [url, versionsUrl] of [
        [`/api/agents/${agent}/policy`, `/api/agents/${agent}/policy/versions`],
        ['/api/policies/default', '/api/policies/default/versions'],
      ] as const) {
        let latest = 0;
        for (let i = 0; i < 5; i++) {
          const put = await t.app.inject({
            method: 'PUT',
            url,
            payload: { rules: [{ name: `r${i}`, action: 'deny' }] },
          });
          latest = successEnvelope(policy).parse(put.json()).data.version;
        }
        const seen: number[] = [];
        let cursor: string | null = null;
        do {
          const query: string = cursor === null ? '?limit=2' : `?limit=2&cursor=${cursor}`;
          const body = successEnvelope(policyVersions).parse((await get(t.app, `${versionsUrl}${query}`)).json()).data;
          // Two a page; the last holds what is left.
          expect(body.versions.length).toBe(body.nextCursor === null ? latest - seen.length : 2);
          seen.push(...body.versions.map((v) => v.version));
          cursor = body.nextCursor;
        } while (cursor !== null);
        expect(seen).toEqual(Array.from({ length: latest }, (_, i) => latest - i));
        // Twenty by default, fifty at most; a cursor the service did not give out is refused.
        expect((await get(t.app, versionsUrl)).json().data.versions).toHaveLength(Math.min(latest, 20));
        for (const query of ['?limit=51', '?limit=0', '?cursor=Mw==', '?cursor=x']) {
          const refused = await get(t.app, `${versionsUrl}${query}`);
          expect([refused.statusCode, refused.json().error.code], query).toEqual([400, 'VALIDATION_ERROR']);
        }
        // A version is an integer column: a cursor past 2^31 - 1 (never given out) is refused as a
        // cursor, naming the parameter, not by the database as a value it cannot store.
        const beyond = await get(t.app, `${versionsUrl}?cursor=${Buffer.from('2147483648').toString('base64url')}`);
        expect([beyond.statusCode, beyond.json().error.details]).toEqual([
          400,
          [{ path: 'querystring.cursor', message: 'is not a cursor this service issued' }],
        ]);
      }
    } finally {
      if (before.statusCode === 200) await setPolicy(null, before.json().data.rules);
      else await t.app.inject({ method: 'DELETE', url: '/api/policies/default' });
    }
  });

  it('written with expectedVersion are written only over that version', async () => {
    const agent = await createAgent(t.app);
    const put = (expectedVersion: unknown, name = 'a') =>
      t.app.inject({
        method: 'PUT',
        url: `/api/agents/${agent}/policy`,
        payload: { rules: [{ name, action: 'allow' }], expectedVersion },
      });
    // 0: only if it never had one.
    expect((await put(0)).json().data.version).toBe(1);
    const stale = await put(0, 'b');
    expect(stale.statusCode).toBe(409);
    expect(failureEnvelope.parse(stale.json()).error).toMatchObject({
      code: 'POLICY_VERSION_CONFLICT',
      details: { expectedVersion: 0, currentVersion: 1 },
    });
    expect((await put(1, 'b')).json().data.version).toBe(2);
    // A deletion is a version too.
    expect((await t.app.inject({ method: 'DELETE', url: `/api/agents/${agent}/policy` })).statusCode).toBe(200);
    expect((await put(2, 'c')).json().error.details).toEqual({ expectedVersion: 2, currentVersion: 3 });
    expect((await put(3, 'c')).json().data).toMatchObject({ version: 4, rules: [{ name: 'c' }] });
    for (const bad of [-1, 1.5, '4']) expect((await put(bad)).statusCode, String(bad)).toBe(400);
    // Two editors that read version 4 at once: one writes, the other is told.
    const both = await Promise.all([put(4, 'd'), put(4, 'e')]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    // The default policy alike.
    const onDefault = await t.app.inject({
      method: 'PUT',
      url: '/api/policies/default',
      payload: { rules: [{ name: 'x', action: 'deny' }], expectedVersion: 999 },
    });
    expect(onDefault.json().error.code).toBe('POLICY_VERSION_CONFLICT');
  });

  it('deleted twice at once are deleted once: one 200, one 404, one deletion in the history', async () => {
    const agent = await createAgent(t.app);
    await setPolicy(agent, [{ name: 'a', action: 'allow' }]);
    const deletes = await Promise.all(
      Array.from({ length: 4 }, () => t.app.inject({ method: 'DELETE', url: `/api/agents/${agent}/policy` })),
    );
    expect(deletes.map((d) => d.statusCode).sort()).toEqual([200, 404, 404, 404]);
    const versions = (await get(t.app, `/api/agents/${agent}/policy/versions`)).json().data.versions;
    expect(versions.map((v: { version: number; rules: unknown }) => [v.version, v.rules === null])).toEqual([
      [2, true],
      [1, false],
    ]);
  });

  it('written at once for one agent each get their own version, none a 500', async () => {
    const agent = await createAgent(t.app);
    const writes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.app.inject({
          method: 'PUT',
          url: `/api/agents/${agent}/policy`,
          payload: { rules: [{ name: `r${i}`, action: 'allow' }] },
        }),
      ),
    );
    expect(writes.map((w) => w.statusCode)).toEqual(Array(12).fill(200));
    const versions = writes.map((w) => successEnvelope(policy).parse(w.json()).data.version);
    expect(versions.sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  });

  it('are validated: unknown conditions, bad times and zones, repeated names are 400', async () => {
    const agent = await createAgent(t.app);
    for (const rules of [
      [],
      [{ name: 'x', action: 'maybe' }],
      [{ name: 'x', action: 'allow', when: { amountOver: '5' } }],
      [{ name: 'x', action: 'allow', when: { timeWindow: { from: '24:00' } } }],
      [{ name: 'x', action: 'allow', when: { timeWindow: { timeZone: 'Mars/Olympus' } } }],
      // An offset is not an IANA name, although Intl takes it.
      [{ name: 'x', action: 'allow', when: { timeWindow: { timeZone: '+05:00' } } }],
      [{ name: 'x', action: 'allow', when: { agentGradeAtLeast: 'Z' } }],
      [{ name: 'x', action: 'allow', when: { velocity: { max: 5, windowSeconds: 1 } } }],
      [
        { name: 'x', action: 'allow' },
        { name: 'x', action: 'deny' },
      ],
    ]) {
      const res = await t.app.inject({ method: 'PUT', url: `/api/agents/${agent}/policy`, payload: { rules } });
      expect(res.statusCode, JSON.stringify(rules)).toBe(400);
      expect(failureEnvelope.parse(res.json()).error.code).toBe('VALIDATION_ERROR');
    }
    expect((await get(t.app, `/api/agents/${agent}/policy/versions`)).json().data.versions).toEqual([]);
  });

  it('see the time of day in a named zone, the agent’s and the counterparty’s standing', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const known = await createAgent(t.app);
    await post(t.app, `/api/agents/${known}/score`, { score: 820, reason: '0x01' });
    await setPolicy(agent, [
      // 10:00 UTC on a Wednesday is 19:00 in Tokyo: outside 09:00–18:00 there.
      {
        name: 'tokyo office hours',
        action: 'deny',
        when: { timeWindow: { days: ['wed'], from: '18:00', to: '09:00', timeZone: 'Asia/Tokyo' } },
      },
      { name: 'good counterparty', action: 'allow', when: { counterpartyGradeAtLeast: 'BBB' } },
      { name: 'unknown counterparty', action: 'review', when: { counterpartyKnown: false } },
      { name: 'new agent', action: 'deny', when: { agentConfidenceBelow: 0.5 } },
    ]);
    const night = await decideOk({ agent, amount: '10', counterparty: known });
    expect(night.policy.matchedRule).toBe('tokyo office hours');
    t.clock.set('2026-06-10T01:00:00Z'); // 10:00 in Tokyo
    try {
      expect((await decideOk({ agent, amount: '10', counterparty: known })).policy.matchedRule).toBe(
        'good counterparty',
      );
      expect((await decideOk({ agent, amount: '10', counterparty: randomAddress() })).policy.matchedRule).toBe(
        'unknown counterparty',
      );
      expect((await decideOk({ agent, amount: '10' })).policy.matchedRule).toBe('new agent');
    } finally {
      t.clock.set('2026-06-10T10:00:00Z');
    }
  });

  it('count velocity and what went to a counterparty in a trailing window', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100000', monthlyLimit: '1000000' });
    const shop = randomAddress();
    await setPolicy(agent, [
      { name: 'too fast', action: 'review', when: { velocity: { max: 3, windowSeconds: 3600 } } },
      { name: 'shop cap', action: 'deny', when: { counterpartyCap: { amount: '100', windowSeconds: 86_400 } } },
      { name: 'rest', action: 'allow' },
    ]);
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '60', counterparty: shop });
    expect((await decideOk({ agent, amount: '40', counterparty: shop })).decision).toBe('allow');
    expect((await decideOk({ agent, amount: '41', counterparty: shop })).policy.matchedRule).toBe('shop cap');
    await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '5' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '5' });
    expect((await decideOk({ agent, amount: '1' })).policy.matchedRule).toBe('too fast');
    t.clock.advance(3601_000);
    expect((await decideOk({ agent, amount: '1' })).decision).toBe('allow');
  });

  it('count voided and expired holds as no payment', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100000', monthlyLimit: '1000000' });
    await setPolicy(agent, [
      { name: 'busy', action: 'deny', when: { velocity: { max: 2, windowSeconds: 3600 } } },
      { name: 'rest', action: 'allow' },
    ]);
    const hold = async (expiresIn?: number) => {
      const res = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '5', expiresIn });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().data.authorizationId as string;
    };
    const voided = await hold();
    expect((await post(t.app, `/api/budgets/${agent}/authorizations/${voided}/void`, {})).statusCode).toBe(200);
    await hold(60);
    t.clock.advance(61_000);
    await t.services.authorizations.expireDue();
    // Neither the voided nor the expired hold is a payment: the agent made none.
    expect((await decideOk({ agent, amount: '1' })).decision).toBe('allow');
    // A captured one is, once; a held one too.
    const captured = await hold();
    expect((await post(t.app, `/api/budgets/${agent}/authorizations/${captured}/capture`, {})).statusCode).toBe(200);
    expect((await decideOk({ agent, amount: '1' })).decision).toBe('allow');
    await hold();
    expect((await decideOk({ agent, amount: '1' })).policy.matchedRule).toBe('busy');
  });

  it('hold no more than a cap allows when decisions with a hold come at once', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100000', monthlyLimit: '1000000' });
    const shop = randomAddress();
    await setPolicy(agent, [
      { name: 'shop cap', action: 'deny', when: { counterpartyCap: { amount: '1000', windowSeconds: 86_400 } } },
      { name: 'busy', action: 'deny', when: { velocity: { max: 4, windowSeconds: 3600 } } },
      { name: 'rest', action: 'allow' },
    ]);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => decideOk({ agent, amount: '300', counterparty: shop, hold: true })),
    );
    // 3 × 300 fit under 1000; each later one counts the holds of those before it.
    expect(answers.filter((d) => d.decision === 'allow').map((d) => d.authorization?.status)).toEqual([
      'held',
      'held',
      'held',
    ]);
    expect(answers.filter((d) => d.decision === 'deny').map((d) => d.policy.matchedRule)).toEqual([
      'shop cap',
      'shop cap',
      'shop cap',
    ]);
    // Velocity too: one more hold to another counterparty fits (3 payments), the next does not (4).
    const other = await Promise.all(
      Array.from({ length: 3 }, () => decideOk({ agent, amount: '1', counterparty: randomAddress(), hold: true })),
    );
    expect(other.map((d) => d.decision).sort()).toEqual(['allow', 'deny', 'deny']);
  });

  it('cap what went to a counterparty in the payment’s own asset only', async () => {
    const usdc = 'eip155:8453/erc20:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100000', monthlyLimit: '1000000' });
    const set = await post(t.app, `/api/budgets/${agent}/set`, { asset: usdc, ...limits });
    expect(set.statusCode, set.body).toBe(200);
    const shop = randomAddress();
    await setPolicy(agent, [
      { name: 'shop cap', action: 'deny', when: { counterpartyCap: { amount: '100', windowSeconds: 86_400 } } },
      { name: 'rest', action: 'allow' },
    ]);
    // 500 of the default unit went to the shop; nothing in USDC.
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '500', counterparty: shop })).statusCode).toBe(
      200,
    );
    expect((await decideOk({ agent, amount: '60', asset: usdc, counterparty: shop })).decision).toBe('allow');
    await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '60', asset: usdc, counterparty: shop });
    expect((await decideOk({ agent, amount: '41', asset: usdc, counterparty: shop })).policy.matchedRule).toBe(
      'shop cap',
    );
  });

  it('can ask the anomaly model', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10000000', monthlyLimit: '100000000' });
    for (let i = 0; i < 5; i++) await recordTx(t.app, agent, { amount: '100' });
    await setPolicy(agent, [
      { name: 'odd', action: 'review', when: { anomalyRiskAtLeast: 'MEDIUM' } },
      { name: 'rest', action: 'allow' },
    ]);
    expect((await decideOk({ agent, amount: '100' })).decision).toBe('allow');
    // Far above the agent's average, from a sanctioned counterparty.
    const odd = await decideOk({ agent, amount: '5000000' });
    expect(odd.policy.matchedRule).toBe('odd');
  });
});

describe('holds and approvals', () => {
  /** An agent with a budget whose payments above 200 go to review (after `rules`), and a counterparty. */
  async function reviewsAbove200(rules: unknown[] = []) {
    const agent = await createAgentWithBudget(t.app, limits);
    const cp = randomAddress();
    await setPolicy(agent, [
      ...rules,
      { name: 'big', action: 'review', when: { amountAbove: '200' } },
      { name: 'rest', action: 'allow' },
    ]);
    return { agent, cp };
  }

  it('an allow with hold holds the amount in the same transaction', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const d = await decideOk({ agent, amount: '300', hold: true, expiresIn: 120 });
    expect(d.decision).toBe('allow');
    expect(d.authorization).toMatchObject({ status: 'held', amount: '300', decisionId: d.decisionId });
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data).toMatchObject({ dailyHeld: '300' });
    expect((await get(t.app, `/api/decisions/${d.decisionId}`)).json().data.authorization.authorizationId).toBe(
      d.authorization?.authorizationId,
    );
    // A deny holds nothing.
    const denied = await decideOk({ agent, amount: '801', hold: true });
    expect([denied.decision, denied.authorization]).toEqual(['deny', null]);
  });

  it('review → approve → redeem: the reserved hold becomes capturable, the grant is used once', async () => {
    const { agent, cp } = await reviewsAbove200();
    const review = await decideOk({ agent, amount: '500', counterparty: cp, hold: true });
    expect(review).toMatchObject({ decision: 'review', authorization: { status: 'pending_approval', amount: '500' } });
    expect(codes(review)).toEqual(['POLICY_REVIEW']);
    const approvalId = review.approvalId as string;
    // Reserved while pending: it counts, but cannot be captured yet.
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('500');
    const early = await post(
      t.app,
      `/api/budgets/${agent}/authorizations/${review.authorization?.authorizationId}/capture`,
      {},
    );
    expect(early.json().error).toMatchObject({
      code: 'AUTHORIZATION_NOT_HELD',
      details: { status: 'pending_approval' },
    });
    const pending = (await get(t.app, '/api/approvals?status=pending')).json().data.approvals;
    expect(pending.map((a: { approvalId: string }) => a.approvalId)).toContain(approvalId);

    const approved = await post(t.app, `/api/approvals/${approvalId}/approve`, {
      note: 'ok by finance',
      expiresIn: 600,
    });
    expect(successEnvelope(approval).parse(approved.json()).data).toMatchObject({
      status: 'approved',
      note: 'ok by finance',
      expiresAt: Math.floor(t.clock.now.getTime() / 1000) + 600,
    });
    expect((await post(t.app, `/api/approvals/${approvalId}/approve`, {})).json().error.code).toBe(
      'APPROVAL_NOT_PENDING',
    );

    // A redemption for another amount is refused and leaves the grant as it was.
    const wrong = await decideOk({ agent, amount: '499', counterparty: cp, approvalId });
    expect([wrong.decision, codes(wrong)]).toEqual(['deny', ['APPROVAL_INVALID', 'POLICY_REVIEW']]);
    const redeemed = await decideOk({ agent, amount: '500', counterparty: cp, approvalId });
    expect([redeemed.decision, codes(redeemed)]).toEqual(['allow', ['POLICY_REVIEW', 'APPROVAL_REDEEMED']]);
    expect(redeemed.authorization).toMatchObject({
      authorizationId: review.authorization?.authorizationId,
      status: 'held',
    });
    const capture = await post(
      t.app,
      `/api/budgets/${agent}/authorizations/${review.authorization?.authorizationId}/capture`,
      {},
    );
    expect(capture.statusCode, capture.body).toBe(200);
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data).toMatchObject({
      dailySpent: '500',
      dailyHeld: '0',
    });
    // Once.
    const again = await decideOk({ agent, amount: '500', counterparty: cp, approvalId });
    expect(codes(again)).toContain('APPROVAL_INVALID');
    expect((await get(t.app, `/api/approvals/${approvalId}`)).json().data.status).toBe('redeemed');
  });

  it('a grant is bound to the category the approver saw: another category, or none, is another payment', async () => {
    const { agent, cp } = await reviewsAbove200();
    const review = await decideOk({ agent, amount: '500', counterparty: cp, category: 'travel' });
    expect(review.decision).toBe('review');
    const approvalId = review.approvalId as string;
    expect((await get(t.app, `/api/approvals/${approvalId}`)).json().data.category).toBe('travel');
    expect((await post(t.app, `/api/approvals/${approvalId}/approve`, {})).statusCode).toBe(200);

    for (const category of ['gambling', undefined]) {
      const other = await decideOk({ agent, amount: '500', counterparty: cp, approvalId, category });
      expect([other.decision, codes(other)]).toEqual(['deny', ['APPROVAL_INVALID', 'POLICY_REVIEW']]);
      expect(other.reasons.find((r) => r.code === 'APPROVAL_INVALID')?.detail).toContain('category');
    }
    expect((await get(t.app, `/api/approvals/${approvalId}`)).json().data.status).toBe('approved');
    const redeemed = await decideOk({ agent, amount: '500', counterparty: cp, approvalId, category: 'travel' });
    expect([redeemed.decision, codes(redeemed)]).toEqual(['allow', ['POLICY_REVIEW', 'APPROVAL_REDEEMED']]);
  });

  it('a grant whose hold was captured is used up; one whose hold was voided reserves a new hold', async () => {
    const { agent, cp } = await reviewsAbove200();
    const approvedReview = async () => {
      const review = await decideOk({ agent, amount: '300', counterparty: cp, hold: true });
      expect((await post(t.app, `/api/approvals/${review.approvalId}/approve`, {})).statusCode).toBe(200);
      return { approvalId: review.approvalId as string, holdId: review.authorization?.authorizationId as string };
    };
    const budgetNow = async () => (await get(t.app, `/api/budgets/${agent}`)).json().data;

    // Captured straight after the approval: that capture is the approved payment.
    const first = await approvedReview();
    const captured = await post(t.app, `/api/budgets/${agent}/authorizations/${first.holdId}/capture`, {});
    expect(captured.statusCode, captured.body).toBe(200);
    expect((await get(t.app, `/api/approvals/${first.approvalId}`)).json().data.status).toBe('redeemed');
    const twice = await decideOk({ agent, amount: '300', counterparty: cp, approvalId: first.approvalId, hold: true });
    expect([twice.decision, codes(twice), twice.authorization]).toEqual([
      'deny',
      ['APPROVAL_INVALID', 'POLICY_REVIEW'],
      null,
    ]);
    expect(await budgetNow()).toMatchObject({ dailySpent: '300', dailyHeld: '0' });

    // Voided after the approval: the grant still pays once, and the payment gets a hold of its own.
    const second = await approvedReview();
    expect((await post(t.app, `/api/budgets/${agent}/authorizations/${second.holdId}/void`, {})).statusCode).toBe(200);
    const redeemed = await decideOk({
      agent,
      amount: '300',
      counterparty: cp,
      approvalId: second.approvalId,
      hold: true,
    });
    expect([redeemed.decision, codes(redeemed)]).toEqual(['allow', ['POLICY_REVIEW', 'APPROVAL_REDEEMED']]);
    expect(redeemed.authorization).toMatchObject({ status: 'held', amount: '300' });
    expect(redeemed.authorization?.authorizationId).not.toBe(second.holdId);
    expect(await budgetNow()).toMatchObject({ dailySpent: '300', dailyHeld: '300' });
  });

  it('redeeming a grant whose hold is reserved does not count that hold against the payment again', async () => {
    // Each limit alone would refuse the payment if its own hold counted as another payment.
    const cap = { name: 'cap', action: 'deny', when: { counterpartyCap: { amount: '500', windowSeconds: 86_400 } } };
    const busy = { name: 'busy', action: 'deny', when: { velocity: { max: 1, windowSeconds: 3600 } } };
    const cases: Array<[string, string, unknown[]]> = [
      ['the budget', '600', []],
      ['a counterparty cap', '300', [cap]],
      ['velocity', '300', [busy]],
    ];
    const outcomes = [];
    for (const [what, amount, rules] of cases) {
      const { agent, cp } = await reviewsAbove200(rules);
      const review = await decideOk({ agent, amount, counterparty: cp, hold: true });
      expect(review.decision, what).toBe('review');
      expect((await post(t.app, `/api/approvals/${review.approvalId}/approve`, {})).statusCode).toBe(200);
      const redeemed = await decideOk({ agent, amount, counterparty: cp, approvalId: review.approvalId });
      const sameHold = redeemed.authorization?.authorizationId === review.authorization?.authorizationId;
      outcomes.push([what, redeemed.decision, codes(redeemed), sameHold]);
      // Still one payment held: nothing more may be held beside it than the rest of the day.
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe(amount);
      const over = String(1000 - Number(amount) + 1);
      expect(codes(await decideOk({ agent, amount: over })), what).toContain('DAILY_LIMIT');
    }
    expect(outcomes).toEqual(cases.map(([what]) => [what, 'allow', ['POLICY_REVIEW', 'APPROVAL_REDEEMED'], true]));
  });

  it('a grant held before midnight pays with its hold after it, however much the new day has spent', async () => {
    const saved = t.clock.now;
    try {
      t.clock.set('2026-06-10T23:50:00Z');
      const { agent, cp } = await reviewsAbove200();
      const review = await decideOk({ agent, amount: '300', counterparty: cp, hold: true });
      expect(review.decision).toBe('review');
      t.clock.set('2026-06-11T00:10:00Z');
      expect((await post(t.app, `/api/approvals/${review.approvalId}/approve`, {})).statusCode).toBe(200);
      // The new day spends 800 of its 1,000; the hold is yesterday's.
      expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '800' })).statusCode).toBe(200);
      const redeemed = await decideOk({ agent, amount: '300', counterparty: cp, approvalId: review.approvalId });
      expect([redeemed.decision, codes(redeemed)]).toEqual(['allow', ['POLICY_REVIEW', 'APPROVAL_REDEEMED']]);
      expect(redeemed.authorization?.authorizationId).toBe(review.authorization?.authorizationId);
      // Beside it, the new day's room, 200, and no more: the hold is not counted in it.
      expect(codes(await decideOk({ agent, amount: '201' }))).toContain('DAILY_LIMIT');
      expect((await decideOk({ agent, amount: '200' })).decision).toBe('allow');
    } finally {
      t.clock.set(saved);
    }
  });

  it('a grant whose hold is voided while it is redeemed is judged as any payment, and kept', async () => {
    const saved = t.clock.now;
    try {
      t.clock.set('2026-06-10T23:50:00Z');
      const { agent, cp } = await reviewsAbove200();
      const review = await decideOk({ agent, amount: '300', counterparty: cp, hold: true });
      t.clock.set('2026-06-11T00:10:00Z');
      expect((await post(t.app, `/api/approvals/${review.approvalId}/approve`, {})).statusCode).toBe(200);
      expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '800' })).statusCode).toBe(200);
      // The hold is read with the budget, then voided before the decision redeems the grant: it
      // no longer pays, and the new day has 200 left for a payment of 300.
      const holdId = review.authorization?.authorizationId;
      const forDecision = t.services.sanctions.forDecision;
      vi.spyOn(t.services.sanctions, 'forDecision').mockImplementationOnce(async (...args) => {
        const screened = await forDecision(...args);
        const voided = await post(t.app, `/api/budgets/${agent}/authorizations/${holdId}/void`, {});
        expect(voided.statusCode).toBe(200);
        return screened;
      });
      const raced = await decideOk({ agent, amount: '300', counterparty: cp, approvalId: review.approvalId });
      vi.restoreAllMocks();
      expect([raced.decision, codes(raced)]).toEqual(['deny', ['DAILY_LIMIT', 'POLICY_REVIEW']]);
      expect(raced.authorization).toBeNull();
      expect(raced.budget).toMatchObject({ allowed: false, reason: 'DAILY_LIMIT', dailyRemaining: '200' });
      // The grant was not spent on a refusal.
      expect((await get(t.app, `/api/approvals/${review.approvalId}`)).json().data.status).toBe('approved');
    } finally {
      vi.restoreAllMocks();
      t.clock.set(saved);
    }
  });

  it('an approval made at a fraction of a second: its hold and grant end at the expiresAt answered', async () => {
    const { agent, cp } = await reviewsAbove200();
    const saved = t.clock.now;
    t.clock.set('2026-06-10T10:20:00.600Z');
    try {
      const review = await decideOk({ agent, amount: '300', counterparty: cp, hold: true });
      const made = t.clock.now.getTime();
      const approved = (await post(t.app, `/api/approvals/${review.approvalId}/approve`, { expiresIn: 600 })).json()
        .data;
      const url = `/api/budgets/${agent}/authorizations/${review.authorization?.authorizationId}`;
      const hold = (await get(t.app, url)).json().data;
      expect(hold.expiresAt).toBe(approved.expiresAt);
      t.clock.set(new Date(approved.expiresAt * 1000 + 200));
      // Past the expiresAt answered: neither the hold nor the grant pays.
      const late = await post(t.app, `${url}/capture`, {});
      expect([late.statusCode, late.json().error?.details?.status]).toEqual([409, 'expired']);
      const redeem = await decideOk({ agent, amount: '300', counterparty: cp, approvalId: review.approvalId });
      expect(codes(redeem)).toContain('APPROVAL_INVALID');
      // The grant lasted at least the seconds given.
      expect(approved.expiresAt * 1000).toBeGreaterThanOrEqual(made + 600_000);
    } finally {
      t.clock.set(saved);
    }
  });

  it('a review asked at a fraction of a second: its approval can no longer be decided past the expiresAt answered', async () => {
    const { agent, cp } = await reviewsAbove200();
    const saved = t.clock.now;
    t.clock.set('2026-06-10T10:20:00.600Z');
    try {
      const review = await decideOk({ agent, amount: '300', counterparty: cp, hold: true });
      const asked = (await get(t.app, `/api/approvals/${review.approvalId}`)).json().data;
      const hold = (
        await get(t.app, `/api/budgets/${agent}/authorizations/${review.authorization?.authorizationId}`)
      ).json().data;
      // The hold reserved meanwhile lasts at least as long as the approval it waits for.
      expect(hold.expiresAt).toBeGreaterThanOrEqual(asked.expiresAt);
      t.clock.set(new Date(asked.expiresAt * 1000 + 200));
      const late = await post(t.app, `/api/approvals/${review.approvalId}/approve`, {});
      expect([late.statusCode, late.json().error?.code]).toEqual([409, 'APPROVAL_NOT_PENDING']);
    } finally {
      t.clock.set(saved);
    }
  });

  it('a review asked at a fraction of a second: its hold ends with its approval, not a second after it', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await setPolicy(agent, [{ name: 'all', action: 'review' }]);
    const saved = t.clock.now;
    t.clock.set('2026-06-10T10:25:00.600Z');
    try {
      const review = await decideOk({ agent, amount: '300', hold: true });
      const asked = (await get(t.app, `/api/approvals/${review.approvalId}`)).json().data;
      const url = `/api/budgets/${agent}/authorizations/${review.authorization?.authorizationId}`;
      expect((await get(t.app, url)).json().data.expiresAt).toBe(asked.expiresAt);
      // At the approval's expiresAt the sweep expires it, and nothing is reserved for it any more.
      t.clock.set(new Date(asked.expiresAt * 1000));
      expect((await t.services.approvals.expireDue()).map((a) => String(a.id))).toContain(review.approvalId);
      await t.services.authorizations.expireDue();
      expect((await get(t.app, url)).json().data.status).toBe('expired');
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.monthlyHeld).toBe('0');
    } finally {
      t.clock.set(saved);
    }
  });

  it('a denied review releases its hold; an unanswered one expires with it', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await setPolicy(agent, [{ name: 'all', action: 'review' }]);
    const first = await decideOk({ agent, amount: '100', hold: true });
    const second = await decideOk({ agent, amount: '200', hold: true });
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('300');
    const denied = await post(t.app, `/api/approvals/${first.approvalId}/deny`, { note: 'no' });
    expect(denied.json().data.status).toBe('denied');
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('200');
    expect(
      (await get(t.app, `/api/budgets/${agent}/authorizations/${first.authorization?.authorizationId}`)).json().data
        .status,
    ).toBe('voided');
    // 24 h later, the other review has expired with its hold.
    t.clock.advance(86_400_000 + 1000);
    try {
      // Before the sweep, it already reads as what approving it would be told: expired.
      expect((await get(t.app, `/api/approvals/${second.approvalId}`)).json().data.status).toBe('expired');
      const ids = async (status: string) =>
        (await get(t.app, `/api/approvals?status=${status}&agent=${agent}`))
          .json()
          .data.approvals.map((a: { approvalId: string }) => a.approvalId);
      expect(await ids('pending')).not.toContain(second.approvalId);
      expect(await ids('expired')).toContain(second.approvalId);
      const hold = `/api/budgets/${agent}/authorizations/${second.authorization?.authorizationId}`;
      expect((await get(t.app, hold)).json().data).toMatchObject({ status: 'expired', releasedAt: null });
      expect((await t.services.approvals.expireDue()).map((a) => String(a.id))).toContain(second.approvalId);
      await t.services.authorizations.expireDue();
      expect((await get(t.app, `/api/approvals/${second.approvalId}`)).json().data.status).toBe('expired');
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('0');
      const late = await post(t.app, `/api/approvals/${second.approvalId}/approve`, {});
      expect(late.json().error).toMatchObject({ code: 'APPROVAL_NOT_PENDING', details: { status: 'expired' } });
    } finally {
      t.clock.advance(-(86_400_000 + 1000));
    }
  });

  it('the sweep expires holds even when expiring approvals fails, and fails the job after', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const held = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '100', expiresIn: 60 });
    expect(held.statusCode, held.body).toBe(201);
    await setPolicy(agent, [{ name: 'all', action: 'review' }]);
    const review = await decideOk({ agent, amount: '50' });
    // A fault of the approvals' sweep alone: their table refuses every change.
    const db = t.database.db;
    await sql`CREATE FUNCTION test_refuse_approvals() RETURNS trigger LANGUAGE plpgsql
      AS $$ BEGIN RAISE EXCEPTION 'approvals refuse changes'; END $$`.execute(db);
    await sql`CREATE TRIGGER test_refuse_approvals BEFORE UPDATE ON approvals
      FOR EACH ROW EXECUTE FUNCTION test_refuse_approvals()`.execute(db);
    const sweep = createProcessors(t.services, 'test')['maintenance.expire-holds'];
    const context = { jobId: 'sweep', attempt: 1, updateProgress: async () => {}, childrenValues: async () => [] };
    t.clock.advance(86_400_000 + 1000);
    try {
      await expect(sweep({}, context)).rejects.toThrow(/approvals refuse changes/);
      const hold = (await get(t.app, `/api/budgets/${agent}/authorizations/${held.json().data.authorizationId}`)).json()
        .data;
      expect(hold).toMatchObject({ status: 'expired', releasedAt: expect.any(Number) });
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.monthlyHeld).toBe('0');
      const row = await db
        .selectFrom('approvals')
        .select('status')
        .where('id', '=', review.approvalId)
        .executeTakeFirst();
      expect(row?.status).toBe('pending');
      await sql`DROP TRIGGER test_refuse_approvals ON approvals`.execute(db);
      // Once the fault is gone, the next sweep expires the approval.
      expect((await sweep({}, context)).expired).toBeGreaterThanOrEqual(1);
      const after = await db
        .selectFrom('approvals')
        .select('status')
        .where('id', '=', review.approvalId)
        .executeTakeFirst();
      expect(after?.status).toBe('expired');
    } finally {
      t.clock.advance(-(86_400_000 + 1000));
      await sql`DROP TRIGGER IF EXISTS test_refuse_approvals ON approvals`.execute(db);
      await sql`DROP FUNCTION IF EXISTS test_refuse_approvals()`.execute(db);
    }
  });

  // A held decision reads, judges and holds in one transaction. On PostgreSQL another connection's
  // write can still land between its reads and its hold; on the embedded database the decision's
  // transaction holds the one connection, so nothing can, and these cases cannot arise there.
  const interleaves = inject('testDbMode') === 'postgres';

  /** Decides with a hold while `change` alters the list after the screening, before the hold's statement. */
  async function decideAcrossListChange(agent: string, counterparty: string, change: () => Promise<unknown>) {
    const forDecision = t.services.sanctions.forDecision;
    vi.spyOn(t.services.sanctions, 'forDecision').mockImplementationOnce(async (...args) => {
      const screened = await forDecision(...args);
      await change();
      return screened;
    });
    try {
      return await decideOk({ agent, amount: '100', counterparty, hold: true });
    } finally {
      vi.restoreAllMocks();
    }
  }

  it.runIf(interleaves)(
    'an agent listed between the screening and the hold is denied: SANCTIONED, nothing held',
    async () => {
      const agent = await createAgentWithBudget(t.app, limits);
      const d = await decideAcrossListChange(agent, randomAddress(), () => listOnActiveSnapshot(t.database.db, agent));
      expect([d.decision, codes(d), d.authorization, d.sanctions.agent]).toEqual([
        'deny',
        ['SANCTIONED', 'NO_POLICY'],
        null,
        'listed',
      ]);
      expect((await get(t.app, `/api/decisions/${d.decisionId}`)).json().data).toMatchObject({
        decision: 'deny',
        sanctions: { agent: 'listed' },
      });
      const budget = (await get(t.app, `/api/budgets/${agent}`)).json().data;
      expect(budget.dailyHeld).toBe('0');
    },
  );

  it('a decision without a hold stores the sanctions its budget refusal found, not a clear screening', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await listOnActiveSnapshot(t.database.db, agent);
    // The budget is read while the agent is listed; the agent is off the list before the screening.
    const budgetOf = t.services.budgets.budgetOf;
    vi.spyOn(t.services.budgets, 'budgetOf').mockImplementationOnce(async (...args) => {
      const read = await budgetOf(...args);
      await sql`DELETE FROM sanctions_entries WHERE address = ${agent}`.execute(t.database.db);
      await until(async () => !(await t.services.sanctions.forDecision(agent, null, null)).agent, 5_000);
      return read;
    });
    let d: Awaited<ReturnType<typeof decideOk>>;
    try {
      d = await decideOk({ agent, amount: '100' });
    } finally {
      vi.restoreAllMocks();
    }
    expect([d.decision, codes(d)]).toEqual(['deny', ['SANCTIONED', 'NO_POLICY']]);
    // The reason and the facts agree, in the answer and as stored.
    expect(d.sanctions.agent).toBe('listed');
    expect((await get(t.app, `/api/decisions/${d.decisionId}`)).json().data.sanctions.agent).toBe('listed');
  });

  it.runIf(interleaves)(
    'a counterparty listed, or the list gone, between the screening and the hold is denied, nothing held',
    async () => {
      const agent = await createAgentWithBudget(t.app, limits);
      const shop = randomAddress();
      const listed = await decideAcrossListChange(agent, shop, () => listOnActiveSnapshot(t.database.db, shop));
      expect([listed.decision, codes(listed), listed.authorization, listed.sanctions]).toEqual([
        'deny',
        ['COUNTERPARTY_SANCTIONED', 'NO_POLICY'],
        null,
        expect.objectContaining({ agent: 'clear', counterparty: 'listed' }),
      ]);
      // The list is gone from the hold's statement on: nobody can be screened, so nothing is held.
      let restore = async () => {};
      const unscreened = await decideAcrossListChange(agent, randomAddress(), async () => {
        restore = await deactivateSanctionsList(t.database.db);
      }).finally(() => restore());
      expect([unscreened.decision, codes(unscreened), unscreened.authorization, unscreened.sanctions]).toEqual([
        'deny',
        ['SANCTIONS_LIST_UNAVAILABLE', 'NO_POLICY'],
        null,
        { agent: 'unavailable', counterparty: 'unavailable', list: null },
      ]);
      expect((await get(t.app, `/api/decisions/${unscreened.decisionId}`)).json().data.sanctions.list).toBeNull();
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('0');
    },
  );

  /** An agent whose policy reviews everything, and an approved grant of 400 for it. */
  async function approvedGrant() {
    const agent = await createAgentWithBudget(t.app, limits);
    await setPolicy(agent, [{ name: 'all', action: 'review' }]);
    const approvalId = (await decideOk({ agent, amount: '400' })).approvalId as string;
    expect((await post(t.app, `/api/approvals/${approvalId}/approve`, {})).statusCode).toBe(200);
    const grant = sql<{ status: string; redeemed_decision_id: string | null }>`
      SELECT status, redeemed_decision_id::text FROM approvals WHERE id = ${approvalId}::bigint`;
    return { agent, approvalId, grant: async () => (await grant.execute(t.database.db)).rows[0] };
  }

  it('a decision denied for another reason leaves the grant it names untouched, and usable', async () => {
    const { agent, approvalId, grant } = await approvedGrant();
    // Over the per-transaction limit: denied whatever the approval, which it does not claim.
    const denied = await decideOk({ agent, amount: '900', approvalId });
    expect([denied.decision, codes(denied)]).toEqual(['deny', ['PER_TX_LIMIT', 'POLICY_REVIEW']]);
    expect(await grant()).toEqual({ status: 'approved', redeemed_decision_id: null });
    const redeemed = await decideOk({ agent, amount: '400', approvalId });
    expect(redeemed.decision).toBe('allow');
    expect((await grant())?.status).toBe('redeemed');
  });

  it.runIf(interleaves)(
    'a grant whose hold a spend refused between the read and the hold goes back to approved',
    async () => {
      const { agent, approvalId, grant } = await approvedGrant();
      // A spend lands between the redeeming decision's budget read and its hold: the hold's statement
      // refuses, and the grant goes back to approved for a later try.
      const budgetOf = t.services.budgets.budgetOf;
      vi.spyOn(t.services.budgets, 'budgetOf').mockImplementationOnce(async (...args) => {
        const read = await budgetOf(...args);
        expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '700' })).statusCode).toBe(200);
        return read;
      });
      const refused = await decideOk({ agent, amount: '400', approvalId, hold: true });
      vi.restoreAllMocks();
      expect([refused.decision, codes(refused)]).toEqual(['deny', ['DAILY_LIMIT', 'POLICY_REVIEW']]);
      // The answer's budget, and the stored one, are what the hold's statement found.
      const refusedBudget = { allowed: false, reason: 'DAILY_LIMIT', dailyRemaining: '300' };
      expect(refused.budget).toMatchObject(refusedBudget);
      expect((await get(t.app, `/api/decisions/${refused.decisionId}`)).json().data.budget).toMatchObject(
        refusedBudget,
      );
      expect(await grant()).toEqual({ status: 'approved', redeemed_decision_id: null });
    },
  );

  /** A review with a hold, for `amount`: its approval and its hold (pending approval). */
  async function reviewWithHold(agent: string, amount: string) {
    await setPolicy(agent, [{ name: 'all', action: 'review' }]);
    const review = await decideOk({ agent, amount, hold: true });
    expect(review.decision).toBe('review');
    return { approvalId: review.approvalId as string, holdId: review.authorization?.authorizationId as string };
  }
  const holdsOf = async (agent: string) =>
    (
      await sql<{ id: string; status: string }>`
        SELECT id::text, status FROM authorizations WHERE agent = ${agent} ORDER BY authorizations.id`.execute(
        t.database.db,
      )
    ).rows;

  it.runIf(interleaves)(
    'pays with the grant’s hold when the approval comes between the decision’s first read and its redemption',
    async () => {
      const agent = await createAgentWithBudget(t.app, limits);
      const { approvalId, holdId } = await reviewWithHold(agent, '400');
      const budgetOf = t.services.budgets.budgetOf;
      vi.spyOn(t.services.budgets, 'budgetOf').mockImplementationOnce(async (...args) => {
        const read = await budgetOf(...args);
        expect((await post(t.app, `/api/approvals/${approvalId}/approve`, {})).statusCode).toBe(200);
        return read;
      });
      const paid = await decideOk({ agent, amount: '400', approvalId, hold: true });
      vi.restoreAllMocks();
      expect([paid.decision, paid.authorization?.authorizationId, paid.authorization?.status]).toEqual([
        'allow',
        holdId,
        'held',
      ]);
      // One payable hold for one grant, and the budget holds its amount once.
      expect(await holdsOf(agent)).toEqual([{ id: holdId, status: 'held' }]);
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('400');
    },
  );

  // A lock held open by the test's own transaction: PostgreSQL only.
  it.runIf(inject('testDbMode') === 'postgres')(
    'a capture of a grant’s hold takes the grant before the hold, as a redeeming decision does: no deadlock',
    async () => {
      const agent = await createAgentWithBudget(t.app, limits);
      const { approvalId, holdId } = await reviewWithHold(agent, '200');
      expect((await post(t.app, `/api/approvals/${approvalId}/approve`, {})).statusCode).toBe(200);
      let capture: ReturnType<typeof post> | undefined;
      await t.database.db.transaction().execute(async (trx) => {
        // As a decision redeeming the grant: the approval's row first…
        await sql`SELECT id FROM approvals WHERE id = ${approvalId}::bigint FOR UPDATE`.execute(trx);
        capture = post(t.app, `/api/budgets/${agent}/authorizations/${holdId}/capture`, {});
        await until(async () => (await lockWaiters(t.database.db, '%grant_lock%')) >= 1, 10_000, 20);
        // …then the hold's, which the waiting capture has not taken.
        await sql`SELECT id FROM authorizations WHERE id = ${holdId}::bigint FOR UPDATE NOWAIT`.execute(trx);
      });
      const captured = await (capture as ReturnType<typeof post>);
      expect(captured.statusCode, captured.body).toBe(200);
      expect(captured.json().data.authorization).toMatchObject({ status: 'captured' });
    },
  );

  it.runIf(interleaves)(
    'reserves a new hold when the grant’s hold is voided between the decision’s first read and its redemption',
    async () => {
      const agent = await createAgentWithBudget(t.app, limits);
      const { approvalId, holdId } = await reviewWithHold(agent, '300');
      expect((await post(t.app, `/api/approvals/${approvalId}/approve`, {})).statusCode).toBe(200);
      const budgetOf = t.services.budgets.budgetOf;
      vi.spyOn(t.services.budgets, 'budgetOf').mockImplementationOnce(async (...args) => {
        const read = await budgetOf(...args);
        const voided = await post(t.app, `/api/budgets/${agent}/authorizations/${holdId}/void`, {});
        expect(voided.statusCode, voided.body).toBe(200);
        return read;
      });
      const paid = await decideOk({ agent, amount: '300', approvalId, hold: true });
      vi.restoreAllMocks();
      expect(paid.decision).toBe('allow');
      expect(paid.authorization?.status).toBe('held');
      expect(paid.authorization?.authorizationId).not.toBe(holdId);
      expect(await holdsOf(agent)).toEqual([
        { id: holdId, status: 'voided' },
        { id: paid.authorization?.authorizationId, status: 'held' },
      ]);
      expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailyHeld).toBe('300');
    },
  );
});

describe('an approval time that is not whole seconds', () => {
  it("reserves the review's hold at least until its approval expires", async () => {
    const app = await createTestApp({ start: '2026-03-10T12:00:00Z', env: { APPROVAL_TTL_MS: '90400' } });
    try {
      const agent = await createAgentWithBudget(app.app, limits);
      await app.app.inject({
        method: 'PUT',
        url: `/api/agents/${agent}/policy`,
        payload: { rules: [{ name: 'all', action: 'review' }] },
      });
      const review = (await post(app.app, '/api/decisions', { agent, amount: '10', hold: true })).json().data;
      expect(review.decision).toBe('review');
      const times = await sql<{ hold: Date; approval: Date }>`
        SELECT a.expires_at AS hold, p.expires_at AS approval FROM approvals p
        JOIN authorizations a ON a.id = p.authorization_id WHERE p.id = ${review.approvalId}::bigint`.execute(
        app.database.db,
      );
      const row = times.rows[0];
      expect(row && row.hold.getTime() >= row.approval.getTime()).toBe(true);
    } finally {
      await app.close();
    }
  });
});

describe('approvals with keys', () => {
  const ADMIN = 'decisions-admin-secret-0123456789';
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  /** An agent registered under `key`'s organization, with a budget and a policy that sends every payment to review. */
  async function reviewedAgent(app: TestContext, key: string): Promise<string> {
    const agent = randomAddress();
    await post(app.app, '/api/agents/register', { address: agent }, as(key));
    await post(app.app, `/api/budgets/${agent}/set`, limits, as(key));
    await app.app.inject({
      method: 'PUT',
      url: `/api/agents/${agent}/policy`,
      payload: { rules: [{ name: 'all', action: 'review' }] },
      headers: as(key),
    });
    return agent;
  }

  it('need the approve scope, and never the key that asked for the review', async () => {
    const app = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
    try {
      const owner = await createOrganizationKey(app.app, ADMIN, 'reviews');
      const both = await createKey(app.app, owner, { name: 'spender-approver', scopes: ['spend', 'approve'] });
      const approver = await createKey(app.app, owner, { name: 'approver', scopes: ['approve'] });
      const spender = await createKey(app.app, owner, { name: 'spender', scopes: ['spend'] });
      const agent = await reviewedAgent(app, owner);
      const review = await post(app.app, '/api/decisions', { agent, amount: '10' }, as(both));
      const id = review.json().data.approvalId;
      expect((await post(app.app, `/api/approvals/${id}/approve`, {}, as(spender))).statusCode).toBe(403);
      const self = await post(app.app, `/api/approvals/${id}/approve`, {}, as(both));
      expect([self.statusCode, self.json().error.message]).toEqual([
        403,
        expect.stringMatching(/asked for this review/),
      ]);
      const ok = await post(app.app, `/api/approvals/${id}/approve`, {}, as(approver));
      expect(ok.json().data).toMatchObject({ status: 'approved', decidedByKeyId: approver.split('_')[1] });
    } finally {
      await app.close();
    }
  });

  it('a decision of another organization naming an approval neither redeems nor touches it', async () => {
    const app = await createTestApp({ edge: { auth: { mode: 'on', adminKey: ADMIN } } });
    try {
      const alpha = await createOrganizationKey(app.app, ADMIN, 'alpha');
      const approver = await createKey(app.app, alpha, { name: 'approver', scopes: ['approve'] });
      const beta = await createOrganizationKey(app.app, ADMIN, 'beta');
      const agent = await reviewedAgent(app, alpha);
      const approvalId = (await post(app.app, '/api/decisions', { agent, amount: '10' }, as(alpha))).json().data
        .approvalId;
      expect((await post(app.app, `/api/approvals/${approvalId}/approve`, {}, as(approver))).statusCode).toBe(200);
      const row = sql<{ status: string; redeemed_decision_id: string | null }>`
        SELECT status, redeemed_decision_id::text FROM approvals WHERE id = ${approvalId}::bigint`;
      const redemptions = sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM audit_log WHERE action = 'approval.redeemed'`;

      // Beta has no budget for the agent: denied, and alpha's grant is none of its business.
      const theirs = successEnvelope(decision).parse(
        (await post(app.app, '/api/decisions', { agent, amount: '10', approvalId }, as(beta))).json(),
      ).data;
      expect([theirs.decision, codes(theirs), theirs.approvalId]).toEqual(['deny', ['NO_BUDGET', 'NO_POLICY'], null]);
      // Nor is it beta's decision's approval; beta's stored inputs keep what was asked.
      const given = await sql<{ given: string | null }>`SELECT facts->>'approvalIdGiven' AS given FROM decisions
        WHERE id = ${theirs.decisionId}`.execute(app.database.db);
      expect(given.rows[0]?.given).toBe(approvalId);
      expect(
        (await app.app.inject({ method: 'GET', url: `/api/decisions/${theirs.decisionId}`, headers: as(beta) })).json()
          .data.approvalId,
      ).toBeNull();
      expect((await row.execute(app.database.db)).rows[0]).toEqual({ status: 'approved', redeemed_decision_id: null });
      expect((await redemptions.execute(app.database.db)).rows[0]?.n).toBe(0);

      const ours = (await post(app.app, '/api/decisions', { agent, amount: '10', approvalId }, as(alpha))).json().data;
      expect([ours.decision, codes(ours), ours.approvalId]).toEqual([
        'allow',
        ['POLICY_REVIEW', 'APPROVAL_REDEEMED'],
        approvalId,
      ]);
      expect(
        (await app.app.inject({ method: 'GET', url: `/api/decisions/${ours.decisionId}`, headers: as(alpha) })).json()
          .data.approvalId,
      ).toBe(approvalId);
      expect((await row.execute(app.database.db)).rows[0]).toEqual({
        status: 'redeemed',
        redeemed_decision_id: ours.decisionId,
      });
      expect((await redemptions.execute(app.database.db)).rows[0]?.n).toBe(1);
    } finally {
      await app.close();
    }
  });
});

describe('a decision that both the sanctions and the budget refuse', () => {
  // The reference: a sanctioned counterparty and an amount over the per-transaction limit give both reasons.
  it('to a sanctioned counterparty, over the per-transaction limit, names both', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const d = await decideOk({ agent, amount: '801', counterparty: SANCTIONED });
    expect(codes(d)).toEqual(['COUNTERPARTY_SANCTIONED', 'PER_TX_LIMIT', 'NO_POLICY']);
  });

  it('by an agent whose owner is sanctioned, over the per-transaction limit, names both', async () => {
    const agent = await createAgent(t.app, { owner: SANCTIONED });
    await post(t.app, `/api/budgets/${agent}/set`, limits);
    const d = await decideOk({ agent, amount: '801' });
    expect(codes(d)).toEqual(['OWNER_SANCTIONED', 'PER_TX_LIMIT', 'NO_POLICY']);
    expect((await get(t.app, `/api/decisions/${d.decisionId}`)).json().data.reasons).toEqual(d.reasons);
  });

  it('by a sanctioned agent, over the daily limit, with a hold, names both', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '700' });
    await listOnActiveSnapshot(t.database.db, agent);
    const d = await decideOk({ agent, amount: '301', counterparty: randomAddress(), hold: true });
    expect(codes(d)).toEqual(['AGENT_SANCTIONED', 'DAILY_LIMIT', 'NO_POLICY']);
  });

  it('without a sanctions list, over the per-transaction limit, names both', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    await withoutSanctionsList(t.database.db, async () => {
      const d = await decideOk({ agent, amount: '801' });
      expect(d.sanctions).toEqual({ agent: 'unavailable', counterparty: null, list: null });
      expect(codes(d)).toEqual(['SANCTIONS_LIST_UNAVAILABLE', 'PER_TX_LIMIT', 'NO_POLICY']);
    });
  });
});

describe('a stored decision with a hold', () => {
  const answeredAgain = async (id: string) => (await get(t.app, `/api/decisions/${id}`)).json().data;

  it('is answered again as it was, after its hold was captured', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const d = await decideOk({ agent, amount: '300', hold: true });
    expect(d.authorization?.status).toBe('held');
    expect(await answeredAgain(d.decisionId)).toEqual(d);
    t.clock.advance(5_000);
    const captured = await post(
      t.app,
      `/api/budgets/${agent}/authorizations/${d.authorization?.authorizationId}/capture`,
      {},
    );
    expect(captured.statusCode, captured.body).toBe(200);
    expect(await answeredAgain(d.decisionId)).toEqual(d);
  });

  it('is answered again as it was, a review whose reserved hold was approved since', async () => {
    const agent = await createAgentWithBudget(t.app, limits);
    const put = await t.app.inject({
      method: 'PUT',
      url: `/api/agents/${agent}/policy`,
      payload: { rules: [{ name: 'all', action: 'review' }] },
    });
    expect(put.statusCode).toBe(200);
    const review = await decideOk({ agent, amount: '200', hold: true });
    expect([review.decision, review.authorization?.status]).toEqual(['review', 'pending_approval']);
    expect((await post(t.app, `/api/approvals/${review.approvalId}/approve`, {})).statusCode).toBe(200);
    expect(await answeredAgain(review.decisionId)).toEqual(review);
  });
});
