import { BUNDLED_SANCTIONS_DIR, readListDirectory, systemActor } from '@vouch/core';
import { sql } from '@vouch/db';
import { type Event, type EventType, eventCatalogue, event as eventSchema, successEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createAgentWithBudget,
  createOrganizationKey,
  createTestApp,
  createTestRuntime,
  eventsSettled,
  get,
  listAllEvents,
  lockWaiters,
  post,
  randomAddress,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const ADMIN = 'events-test-admin-secret-0123456789';

let t: TestContext;
beforeAll(async () => {
  // Its races queue 50 requests on the pool at once: on a busy machine the last wait longer than
  // the product's 1 s for a connection (a 503), and what they check is the race's outcome.
  t = await createTestApp({
    start: '2026-03-15T12:00:00Z',
    connectionTimeoutMs: 30_000,
    edge: { auth: { mode: 'off', adminKey: ADMIN } },
  });
});
afterAll(() => t.close());

const allEvents = (query = '', headers: Record<string, string> = {}) =>
  listAllEvents(t.app, t.database, query, headers);

const ofAgent = (agent: string, type?: EventType) => allEvents(`&agent=${agent}${type ? `&type=${type}` : ''}`);

/** Every event's data is what the catalogue says its type carries. */
function expectCatalogued(events: Event[]) {
  for (const e of events) eventCatalogue[e.type].data.parse(e.data);
}

describe('spend events', () => {
  it('announce every spend, accepted or refused, with its figures, in the statement of the spend', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '100000', perTxLimit: '600' });
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' })).statusCode).toBe(200);
    expect((await post(t.app, `/api/budgets/${agent}/spend`, { amount: '700' })).statusCode).toBe(422);
    const events = await ofAgent(agent);
    expect(events.map((e) => e.type)).toEqual(['spend.accepted', 'spend.refused']);
    expectCatalogued(events);
    const [accepted, refused] = events as [Event, Event];
    expect(accepted.data).toMatchObject({
      amount: '100',
      reason: null,
      dailySpent: '100',
      monthlySpent: '100',
      dailyLimit: '1000',
      perTxLimit: '600',
    });
    expect(refused.data).toMatchObject({ amount: '700', reason: 'PER_TX_LIMIT', dailySpent: '100' });
    expect(accepted).toMatchObject({
      organizationId: 'default',
      agent,
      createdAt: Date.parse('2026-03-15T12:00:00Z') / 1000,
    });
    expect(accepted.id).toBe(`evt_${accepted.sequence}`);
    expect(refused.sequence).toBeGreaterThan(accepted.sequence);
    // The ledger row the event names.
    const ledger = await t.database.db
      .selectFrom('spends')
      .select('id')
      .where('agent', '=', agent)
      .orderBy('id')
      .execute();
    expect([accepted.data.spendId, refused.data.spendId]).toEqual(ledger.map((r) => String(r.id)));
  });

  it('write no event for a spend whose transaction rolls back', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '1000' });
    const actor = systemActor();
    await expect(
      t.database.db.transaction().execute(async (trx) => {
        await t.services.budgets.spend(actor, agent, { amount: '10' }, trx);
        await t.services.events.append(trx, actor, 'webhook.test', null, { webhookId: 'wh_0', message: 'x' });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await ofAgent(agent)).toEqual([]);
    const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE agent = ${agent}`.execute(
      t.database.db,
    );
    expect(rows.rows[0]?.n).toBe(0);
    expect((await get(t.app, `/api/budgets/${agent}`)).json().data.dailySpent).toBe('0');
  });
});

describe('budget.threshold', () => {
  it('announces 80 % and 100 % of each window once, and again in the next window', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100', monthlyLimit: '1000' });
    const spend = (amount: string) => post(t.app, `/api/budgets/${agent}/spend`, { amount });
    const thresholds = async () =>
      (await ofAgent(agent, 'budget.threshold')).map((e) => [e.data.window, e.data.threshold, e.data.spent]);

    expect((await spend('50')).statusCode).toBe(200);
    expect(await thresholds()).toEqual([]);
    expect((await spend('30')).statusCode).toBe(200); // 80 of 100
    expect(await thresholds()).toEqual([['daily', 80, '80']]);
    expect((await spend('10')).statusCode).toBe(200); // 90: nothing new
    expect((await spend('11')).statusCode).toBe(422); // refused: changes nothing
    expect(await thresholds()).toEqual([['daily', 80, '80']]);
    expect((await spend('10')).statusCode).toBe(200); // 100 of 100
    expect(await thresholds()).toEqual([
      ['daily', 80, '80'],
      ['daily', 100, '100'],
    ]);
    const [first] = await ofAgent(agent, 'budget.threshold');
    expectCatalogued([first as Event]);
    expect(first?.data).toMatchObject({
      limit: '100',
      windowStart: Date.parse('2026-03-15T00:00:00Z') / 1000,
      resetsAt: Date.parse('2026-03-16T00:00:00Z') / 1000,
    });

    // A new day: the daily thresholds are armed again; the month's still count what was spent.
    t.clock.set('2026-03-16T08:00:00Z');
    try {
      expect((await spend('90')).statusCode).toBe(200); // day 90 %, month 190 of 1000
      expect((await spend('10')).statusCode).toBe(200); // day 100 %
      expect((await thresholds()).slice(2)).toEqual([
        ['daily', 80, '90'],
        ['daily', 100, '100'],
      ]);
      // Raising the limit and crossing 80 % of the new one again in the same day announces nothing more.
      await post(t.app, `/api/budgets/${agent}/set`, { dailyLimit: '200', perTxLimit: '200' });
      expect((await spend('70')).statusCode).toBe(200); // 170 of 200
      expect(await thresholds()).toHaveLength(4);
      // One spend across several thresholds announces each.
      await post(t.app, `/api/budgets/${agent}/set`, { monthlyLimit: '340' });
      expect((await spend('1')).statusCode).toBe(200); // month: 271 of 340 = 79.7 %
      expect((await spend('29')).statusCode).toBe(200); // 300 of 340 = 88 %
      expect((await thresholds()).slice(4)).toEqual([['monthly', 80, '300']]);
      const [month] = (await ofAgent(agent, 'budget.threshold')).slice(4);
      expect(month?.data).toMatchObject({
        windowStart: Date.parse('2026-03-01T00:00:00Z') / 1000,
        resetsAt: Date.parse('2026-04-01T00:00:00Z') / 1000,
      });
    } finally {
      t.clock.set('2026-03-15T12:00:00Z');
    }
  });

  it('announces each threshold exactly once when many spends race across it', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '40', monthlyLimit: '1000000' });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' })),
    );
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(40);
    // Listed in the order of their transactions; `sequence` is the order of the budget's changes.
    const events = (await ofAgent(agent, 'budget.threshold')).sort((a, b) => a.sequence - b.sequence);
    expect(events.map((e) => [e.data.threshold, e.data.spent])).toEqual([
      [80, '32'],
      [100, '40'],
    ]);
    expect(await ofAgent(agent, 'spend.accepted')).toHaveLength(40);
    expect(await ofAgent(agent, 'spend.refused')).toHaveLength(10);
  });
});

describe('score and grade events', () => {
  it('announce manual, batch and model changes to the owner and to every organization with a budget', async () => {
    const alpha = await createOrganizationKey(t.app, ADMIN, 'score-alpha');
    const beta = await createOrganizationKey(t.app, ADMIN, 'score-beta');
    const gamma = await createOrganizationKey(t.app, ADMIN, 'score-gamma');
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const agent = randomAddress();
    expect((await post(t.app, '/api/agents/register', { address: agent }, as(alpha))).statusCode).toBe(201);
    // beta keeps a budget for it; gamma has nothing to do with it.
    const budget = await post(t.app, `/api/budgets/${agent}/set`, { dailyLimit: '1', monthlyLimit: '1' }, as(beta));
    expect(budget.statusCode).toBe(200);

    const manual = await post(t.app, `/api/agents/${agent}/score`, { score: 720, reason: '0x01' }, as(alpha));
    expect(manual.statusCode).toBe(200);
    // The same score again changes nothing and announces nothing.
    await post(t.app, `/api/agents/${agent}/score`, { score: 720, reason: '0x02' }, as(alpha));
    const batch = await post(
      t.app,
      '/api/agents/batch-scores',
      { agents: [agent], scores: [730], reasons: ['0x03'] },
      as(alpha),
    );
    expect(batch.statusCode, batch.body).toBe(200);
    // The model over its (empty) data: 0.
    const model = await post(t.app, '/api/scores/recompute', { agents: [agent] }, as(alpha));
    expect(model.statusCode, model.body).toBe(200);

    for (const key of [alpha, beta]) {
      const events = await allEvents(`&agent=${agent}`, as(key));
      expectCatalogued(events);
      expect(events.map((e) => [e.type, e.data.previousScore, e.data.score, e.data.source])).toEqual([
        ['score.changed', 0, 720, 'manual'],
        ['grade.changed', 0, 720, 'manual'],
        ['score.changed', 720, 730, 'batch'],
        ['score.changed', 730, 0, 'model'],
        ['grade.changed', 730, 0, 'model'],
      ]);
      expect(events[1]?.data).toMatchObject({ previousGrade: 'D', grade: 'BB' });
      expect(events[0]?.data.reason).toBe('0x01');
    }
    expect(await allEvents(`&agent=${agent}`, as(gamma))).toEqual([]);
  });

  it('are written set-based by a recomputation of many agents, one per change', async () => {
    const agents = await Promise.all(Array.from({ length: 30 }, () => createAgent(t.app)));
    for (const agent of agents) await post(t.app, `/api/agents/${agent}/score`, { score: 500, reason: '0x' });
    const res = await post(t.app, '/api/scores/recompute', { agents });
    expect(res.json().data).toMatchObject({ updated: 30 });
    const rows = await sql<{ type: string; n: number }>`
      SELECT type, count(*)::int AS n FROM events WHERE agent = ANY(${agents}::text[]) AND data->>'source' = 'model'
      GROUP BY type ORDER BY type`.execute(t.database.db);
    expect(rows.rows).toEqual([
      { type: 'grade.changed', n: 30 },
      { type: 'score.changed', n: 30 },
    ]);
  });
});

describe('sanctions.hit', () => {
  it('announces a known agent, or one whose owner, a new list names; once', async () => {
    const owner = randomAddress();
    const listedAgent = await createAgent(t.app);
    const ownedAgent = await createAgent(t.app, { owner });
    const clean = await createAgent(t.app);
    const lists = await readListDirectory(BUNDLED_SANCTIONS_DIR);
    const withThem = { ...lists, ETH: [...(lists.ETH ?? []), listedAgent, owner] };
    const first = await t.services.sanctions.importSnapshot({
      name: 'test list',
      snapshotDate: '2026-03-15',
      lists: withThem,
    });
    expect(first?.added.sort()).toEqual([listedAgent, owner].sort());

    const hits = await allEvents('&type=sanctions.hit');
    expectCatalogued(hits);
    expect(hits.map((e) => e.agent).sort()).toEqual([listedAgent, ownedAgent].sort());
    const owned = hits.find((e) => e.agent === ownedAgent);
    expect(owned?.data).toMatchObject({
      matches: [{ role: 'owner', address: owner, lists: ['ETH'] }],
      owner,
      snapshot: { id: String(first?.snapshotId), name: 'test list', snapshotDate: '2026-03-15' },
    });
    expect(hits.find((e) => e.agent === listedAgent)?.data.matches).toEqual([
      { role: 'agent', address: listedAgent, lists: ['ETH'] },
    ]);
    expect(await ofAgent(clean, 'sanctions.hit')).toEqual([]);

    // The same list again names nobody new.
    await t.services.sanctions.importSnapshot({ name: 'test list 2', snapshotDate: '2026-03-16', lists: withThem });
    expect(await allEvents('&type=sanctions.hit')).toHaveLength(2);
    await t.services.sanctions.restoreBundled();
  });
});

describe('verification.completed', () => {
  it('announces the first status of an agent and each change, not a repeated one', async () => {
    const agent = await createAgent(t.app);
    const verify = async () => {
      const res = await post(t.app, '/api/verify', { address: agent });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data.status as string;
    };
    const first = await verify();
    await verify();
    let events = await ofAgent(agent, 'verification.completed');
    expect(events.map((e) => [e.data.previousStatus, e.data.status])).toEqual([[null, first]]);
    expectCatalogued(events);

    // Older, active and scored: more checks pass.
    t.clock.set('2026-03-20T12:00:00Z');
    try {
      await post(t.app, `/api/agents/${agent}/score`, { score: 900, reason: '0x' });
      await post(t.app, '/api/transactions/record', {
        agent,
        txHash: `0x${'cd'.repeat(32)}`,
        amount: '5',
        type: 0,
      });
      const second = await verify();
      expect(second).not.toBe(first);
      events = await ofAgent(agent, 'verification.completed');
      expect(events.map((e) => [e.data.previousStatus, e.data.status])).toEqual([
        [null, first],
        [first, second],
      ]);
    } finally {
      t.clock.set('2026-03-15T12:00:00Z');
    }
    // An address nobody registered or budgets for is nobody's event.
    const stranger = randomAddress();
    expect((await post(t.app, '/api/verify', { address: stranger })).statusCode).toBe(200);
    const strangers = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE agent = ${stranger}`.execute(
      t.database.db,
    );
    expect(strangers.rows[0]?.n).toBe(0);
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('verification.completed, two verifications at once', () => {
  it('announces the first status once: the second upsert waits for the first and sees its status', async () => {
    const agent = await createAgent(t.app);
    const db = t.database.db;
    /** Verification statements of this database waiting for a lock (the text shown is cut before the head's CTE). */
    const waiting = () => lockWaiters(db, '%vouch_verification_facts%');
    const rollback = new Error('rollback');
    let both: Promise<unknown> = Promise.resolve();
    // An uncommitted head for the address makes both verifications' upserts wait, each with its
    // snapshot already taken: a previous status read from the snapshot would be null for both.
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`INSERT INTO verification_heads (agent, status, updated_at) VALUES (${agent}, 'held', now())`.execute(
          trx,
        );
        both = Promise.all([t.services.verification.verify(agent), t.services.verification.verify(agent)]);
        both.catch(() => {});
        const deadline = Date.now() + 10_000;
        while ((await waiting()) < 2) {
          if (Date.now() > deadline) throw new Error('the two verifications never waited for the head');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    const [first, second] = (await both) as Array<{ status: string }>;
    expect(second?.status).toBe(first?.status);
    const events = await ofAgent(agent, 'verification.completed');
    expect(events.map((e) => [e.data.previousStatus, e.data.status])).toEqual([[null, first?.status]]);
    const head = await db.selectFrom('verification_heads').selectAll().where('agent', '=', agent).executeTakeFirst();
    expect(head).toMatchObject({ status: first?.status, previous_status: first?.status });
  });
});

describe('GET /api/events', () => {
  it('pages in order with a cursor that, polled again, gives only what was written since', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000000', monthlyLimit: '1000000' });
    for (let i = 0; i < 5; i++) await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    await eventsSettled(t.database);
    const page1 = (await get(t.app, `/api/events?agent=${agent}&limit=3`)).json().data;
    expect(page1.events).toHaveLength(3);
    expect(page1.hasMore).toBe(true);
    const page2 = (await get(t.app, `/api/events?agent=${agent}&limit=3&cursor=${page1.nextCursor}`)).json().data;
    expect(page2.events).toHaveLength(2);
    expect(page2.hasMore).toBe(false);
    const seq = [...page1.events, ...page2.events].map((e: Event) => e.sequence);
    expect(seq).toEqual([...seq].sort((a, b) => a - b));
    // Nothing new yet; then one more spend is the only event of the next poll.
    const idle = (await get(t.app, `/api/events?agent=${agent}&cursor=${page2.nextCursor}`)).json().data;
    expect(idle.events).toEqual([]);
    // The idle cursor stands at the next transaction id when none runs: asking again with it is
    // a poll like any other, however often nothing has happened.
    const again = await get(t.app, `/api/events?agent=${agent}&cursor=${idle.nextCursor}`);
    expect(again.statusCode).toBe(200);
    expect(again.json().data.events).toEqual([]);
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    await eventsSettled(t.database);
    const next = (await get(t.app, `/api/events?agent=${agent}&cursor=${idle.nextCursor}`)).json().data;
    expect(next.events).toHaveLength(1);
    expect(next.events[0].sequence).toBeGreaterThan(seq[4] as number);
  });

  it('filters by type, agent and time', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' });
    expect((await ofAgent(agent, 'spend.refused')).map((e) => e.data.amount)).toEqual(['100']);
    const since = Date.parse('2026-03-15T12:00:01Z') / 1000;
    expect((await get(t.app, `/api/events?agent=${agent}&since=${since}`)).json().data.events).toEqual([]);
  });

  it('refuses a cursor it did not give out, even one that decodes to the position of one it did', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000000', monthlyLimit: '1000000' });
    for (let i = 0; i < 2; i++) await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    await eventsSettled(t.database);
    const url = `/api/events?agent=${agent}&limit=1`;
    const cursor: string = (await get(t.app, url)).json().data.nextCursor;
    expect((await get(t.app, `${url}&cursor=${cursor}`)).statusCode).toBe(200);
    // Padded, with a character base64url has no use for, with a space: other strings, not this cursor.
    for (const other of [`${cursor}%3D%3D`, `${cursor}.`, `%20${cursor}`, `${cursor}%24`]) {
      const res = await get(t.app, `${url}&cursor=${other}`);
      expect(res.statusCode, other).toBe(400);
      expect(res.json().error.details).toEqual([{ path: 'querystring.cursor', message: expect.any(String) }]);
    }
  });

  it('refuses bad parameters with a 400 naming them', async () => {
    const cursor = (position: string) => Buffer.from(position).toString('base64url');
    for (const query of [
      'cursor=nope',
      'cursor=',
      // Well formed, but of a transaction that has not started: no cursor given out is ahead of the next one.
      `cursor=${cursor(`${2n ** 63n}.1`)}`,
      'type=spend.everything',
      'agent=0x12',
      'limit=0',
      'limit=1001',
      'since=-1',
      // After the year 9999: no date.
      'since=10000000000000',
      'since=',
      'x=1',
    ]) {
      const res = await get(t.app, `/api/events?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code, query).toBe('VALIDATION_ERROR');
    }
  });
});

describe.runIf(inject('testDbMode') === 'postgres')('GET /api/events while other transactions commit', () => {
  it('gives a reader that follows the cursor every committed event, once', async () => {
    const ctx = await createTestApp({ poolMax: 8 });
    try {
      const db = ctx.database.db;
      const committed = new Set<string>();
      let stop = false;
      // Four connections commit events without pause, some holding their transaction open a moment.
      const writers = Array.from({ length: 4 }, async (_, w) => {
        while (!stop) {
          const id = await db.transaction().execute(async (trx) => {
            const { rows } = await sql<{ id: string }>`
              INSERT INTO events (organization_id, type, agent, data, created_at)
              VALUES ('default', 'webhook.test', NULL, ${JSON.stringify({ w })}::jsonb, now()) RETURNING id::text AS id`.execute(
              trx,
            );
            if (Math.random() < 0.5) await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
            return rows[0]?.id as string;
          });
          committed.add(`evt_${id}`);
        }
      });
      const actor = systemActor('default');
      const seen: string[] = [];
      let cursor: string | undefined;
      const poll = async () => {
        const page = await ctx.services.events.list(actor, { limit: 1000, ...(cursor !== undefined && { cursor }) });
        seen.push(...page.events.map((e) => e.id));
        cursor = page.nextCursor;
        return page.hasMore;
      };
      const until = Date.now() + 3000;
      while (Date.now() < until) await poll();
      stop = true;
      await Promise.all(writers);
      while (await poll()) {}
      expect(committed.size).toBeGreaterThan(100);
      expect(seen.length).toBe(new Set(seen).size);
      expect([...committed].filter((id) => !seen.includes(id))).toEqual([]);
    } finally {
      await ctx.close();
    }
  });
});

describe('GET /api/events/:id', () => {
  it('answers one event by the id its deliveries carry as webhook-id, as the list shows it', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '100' });
    const [listed] = await ofAgent(agent, 'spend.refused');
    if (!listed) throw new Error('no spend.refused event');
    const res = await get(t.app, `/api/events/${listed.id}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(successEnvelope(eventSchema).parse(res.json()).data).toEqual(listed);
  });

  it('answers 404 for an id no event of the organization has, and 400 for one that is not an event id', async () => {
    const missing = await get(t.app, '/api/events/evt_999999999999');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('NOT_FOUND');
    for (const id of ['nope', 'evt_', 'evt_0', 'evt_012', '12', `evt_${'9'.repeat(19)}`]) {
      const res = await get(t.app, `/api/events/${id}`);
      expect(res.statusCode, id).toBe(400);
      expect(res.json().error.code, id).toBe('VALIDATION_ERROR');
    }
  });
});

describe('events.append', () => {
  it('checks the data against the catalogue before writing', async () => {
    const agent = randomAddress();
    await expect(
      t.database.db.transaction().execute((trx) =>
        t.services.events.append(trx, systemActor(), 'authorization.voided', agent, {
          authorizationId: 'auth_1',
          amount: '-5',
        }),
      ),
    ).rejects.toThrow(/amount/);
    const id = await t.database.db.transaction().execute((trx) =>
      t.services.events.append(trx, systemActor(), 'authorization.voided', agent, {
        authorizationId: 'auth_2',
        amount: '5',
        expiresAt: 1,
      }),
    );
    expect(id).toMatch(/^\d+$/);
    const events = await ofAgent(agent);
    expect(events.map((e) => e.data)).toEqual([{ authorizationId: 'auth_2', amount: '5', expiresAt: 1 }]);
  });
});

describe('with EVENTS=off', () => {
  it('writes no event at all', async () => {
    const off = await createTestApp({ env: { EVENTS: 'off' } });
    try {
      const agent = await createAgentWithBudget(off.app, { dailyLimit: '10', monthlyLimit: '10' });
      await post(off.app, `/api/budgets/${agent}/spend`, { amount: '9' });
      await post(off.app, `/api/budgets/${agent}/spend`, { amount: '9' });
      await post(off.app, `/api/agents/${agent}/score`, { score: 900, reason: '0x' });
      await post(off.app, '/api/verify', { address: agent });
      const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(off.database.db);
      expect(rows.rows[0]?.n).toBe(0);
      expect((await off.app.inject({ method: 'GET', url: '/api/events' })).json().data.events).toEqual([]);
    } finally {
      await off.close();
    }
  });
});

describe('the events purge', () => {
  it('deletes events past the retention, with their deliveries', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '10', monthlyLimit: '10' });
    await post(t.app, `/api/budgets/${agent}/spend`, { amount: '1' });
    t.clock.set('2026-05-01T00:00:00Z');
    try {
      expect(await t.services.events.purge()).toBeGreaterThan(0);
      const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(t.database.db);
      expect(rows.rows[0]?.n).toBe(0);
    } finally {
      t.clock.set('2026-03-15T12:00:00Z');
    }
  });
});

describe('hold, refund and approval events', () => {
  const cp = `0x${'c'.repeat(40)}`;
  const hold = async (agent: string, body: Record<string, unknown>) => {
    const res = await post(t.app, `/api/budgets/${agent}/authorizations`, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.json().data.authorizationId as string;
  };

  it('announce each hold placed, refused, captured, voided and expired, the thresholds a hold crosses, and each refund', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '1000', monthlyLimit: '100000' });
    const first = await hold(agent, { amount: '850', counterparty: cp, expiresIn: 600 });
    const refused = await post(t.app, `/api/budgets/${agent}/authorizations`, { amount: '200' });
    expect(refused.json().error.details.reason).toBe('DAILY_LIMIT');
    const captured = await post(t.app, `/api/budgets/${agent}/authorizations/${first}/capture`, { amount: '500' });
    expect(captured.statusCode, captured.body).toBe(200);
    const capture = captured.json().data.spendId as string;
    const second = await hold(agent, { amount: '100' });
    expect((await post(t.app, `/api/budgets/${agent}/authorizations/${second}/void`, {})).statusCode).toBe(200);
    const third = await hold(agent, { amount: '50', expiresIn: 60 });
    const refund = await post(t.app, `/api/budgets/${agent}/spends/${capture}/refund`, { amount: '120' });
    expect(refund.statusCode, refund.body).toBe(201);
    t.clock.advance(61_000);
    try {
      expect((await t.services.authorizations.expireDue()).map((h) => String(h.id))).toContain(third);
    } finally {
      t.clock.advance(-61_000);
    }

    const events = await ofAgent(agent);
    expectCatalogued(events);
    expect(events.map((e) => e.type)).toEqual([
      'authorization.created',
      'budget.threshold',
      'authorization.refused',
      'authorization.captured',
      'authorization.created',
      'authorization.voided',
      'authorization.created',
      'refund.created',
      'authorization.expired',
    ]);
    const [placed, threshold, refusal, capturedEvent, , voided, , refunded, expired] = events as Event[];
    expect(placed?.data).toMatchObject({
      authorizationId: first,
      spendId: null,
      amount: '850',
      counterparty: cp,
      reason: null,
      dailySpent: '0',
      dailyHeld: '850',
      expiresAt: Math.floor(t.clock.now.getTime() / 1000) + 600,
    });
    // 850 held of 1000: 80 % reached by a hold, judged on spent + held.
    expect(threshold?.data).toMatchObject({
      window: 'daily',
      threshold: 80,
      spent: '0',
      held: '850',
      authorizationId: first,
      spendId: null,
    });
    expect(refusal?.data).toMatchObject({ amount: '200', reason: 'DAILY_LIMIT', authorizationId: null });
    expect(refusal?.data.spendId).toMatch(/^\d+$/);
    expect(capturedEvent?.data).toMatchObject({
      authorizationId: first,
      amount: '850',
      captured: '500',
      spendId: capture,
    });
    expect(voided?.data).toMatchObject({ authorizationId: second, captured: '0', spendId: null });
    expect(refunded?.data).toMatchObject({ spendId: capture, amount: '120', refunded: '120', restoredDaily: '120' });
    expect(expired?.data).toMatchObject({ authorizationId: third, amount: '50' });
  });

  it('announce a review asking for approval, and its approval, denial or expiry; a denial voids the hold it reserved', async () => {
    const agent = await createAgentWithBudget(t.app, { dailyLimit: '100000', monthlyLimit: '1000000' });
    const rules = [
      { name: 'big', action: 'review', when: { amountAbove: '100' } },
      { name: 'rest', action: 'allow' },
    ];
    expect(
      (await t.app.inject({ method: 'PUT', url: `/api/agents/${agent}/policy`, payload: { rules } })).statusCode,
    ).toBe(200);
    const review = async (amount: string) => {
      const res = await post(t.app, '/api/decisions', { agent, amount, counterparty: cp, hold: true, category: 'ads' });
      expect(res.json().data, res.body).toMatchObject({ decision: 'review' });
      return res.json().data as { approvalId: string; decisionId: string; authorization: { authorizationId: string } };
    };
    const approved = await review('500');
    expect((await post(t.app, `/api/approvals/${approved.approvalId}/approve`, { note: 'ok' })).statusCode).toBe(200);
    const denied = await review('600');
    expect((await post(t.app, `/api/approvals/${denied.approvalId}/deny`, { note: 'no' })).statusCode).toBe(200);
    const lapsed = await review('700');
    t.clock.advance(86_400_000 + 1000);
    try {
      const gone = (await t.services.approvals.expireDue()).map((a) => String(a.id));
      expect(gone).toEqual(expect.arrayContaining([lapsed.approvalId]));
    } finally {
      t.clock.advance(-(86_400_000 + 1000));
    }

    const events = await ofAgent(agent);
    expectCatalogued(events);
    const approvals = events.filter((e) => e.type.startsWith('approval.'));
    expect(approvals.map((e) => [e.type, e.data.approvalId])).toEqual([
      ['approval.requested', approved.approvalId],
      ['approval.approved', approved.approvalId],
      ['approval.requested', denied.approvalId],
      ['approval.denied', denied.approvalId],
      ['approval.requested', lapsed.approvalId],
      // The approved grant was never redeemed: it lapses too, after the pending one (by id).
      ['approval.expired', approved.approvalId],
      ['approval.expired', lapsed.approvalId],
    ]);
    expect(approvals[0]?.data).toMatchObject({
      decisionId: approved.decisionId,
      amount: '500',
      counterparty: cp,
      category: 'ads',
      authorizationId: approved.authorization.authorizationId,
    });
    expect(approvals[1]?.data).toMatchObject({ note: 'ok', decisionId: approved.decisionId, amount: '500' });
    expect(approvals[5]?.data).toMatchObject({ was: 'approved' });
    expect(approvals[6]?.data).toMatchObject({ was: 'pending' });
    // The denial released the hold reserved for its review, in the same transaction.
    const voided = events.filter((e) => e.type === 'authorization.voided');
    expect(voided.map((e) => e.data.authorizationId)).toEqual([denied.authorization.authorizationId]);
    const denial = events.findIndex((e) => e.type === 'approval.denied');
    expect(events[denial - 1]?.type).toBe('authorization.voided');
  });
});

describe('a database whose transaction ids went back (restored into another server)', () => {
  it('the API refuses to start on it, naming the remedy; once the ids are past its events it starts', async () => {
    const own = await createTestApp();
    try {
      await expect(own.services.events.assertTransactionIdsAhead()).resolves.toBeUndefined();
      // An event kept with an id a million transactions past the server's next, as a dump of a
      // busier server restored here would keep it.
      await sql`INSERT INTO events (organization_id, type, agent, data, created_at, txid)
        VALUES ('default', 'webhook.test', NULL, '{}', now(),
          ((pg_snapshot_xmax(pg_current_snapshot())::text)::bigint + 1000000)::text::xid8)`.execute(own.database.db);
      await expect(createTestRuntime(own.database, { role: 'api' })).rejects.toThrow(
        /next transaction id \(\d+\) is not past those kept with its events \(\d+\).*pg_resetwal -e/,
      );
      // A dispatch position ahead says the same.
      await sql`DELETE FROM events WHERE type = 'webhook.test'`.execute(own.database.db);
      await expect(own.services.events.assertTransactionIdsAhead()).resolves.toBeUndefined();
      await sql`INSERT INTO event_dispatch (organization_id, txid, event_id)
        VALUES ('default', ((pg_snapshot_xmax(pg_current_snapshot())::text)::bigint + 1000000)::text::xid8, 0)`.execute(
        own.database.db,
      );
      await expect(own.services.events.assertTransactionIdsAhead()).rejects.toThrow(/pg_resetwal/);
      await sql`DELETE FROM event_dispatch`.execute(own.database.db);
      const runtime = await createTestRuntime(own.database, { role: 'api' });
      await runtime.close();
    } finally {
      await own.close();
    }
  });
});
