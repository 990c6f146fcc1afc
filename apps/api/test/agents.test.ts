import { agentList, agent as agentSchema, scoreHistory, successEnvelope } from '@vouch/schemas';
import { createAgent, createTestApp, get, post, randomAddress, recordTx, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('POST /api/agents/register', () => {
  it('registers an agent, stores the address lowercase and answers 201 with the full agent', async () => {
    const res = await post(t.app, '/api/agents/register', { address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' });
    expect(res.statusCode).toBe(201);
    const body = successEnvelope(agentSchema).parse(res.json());
    expect(body.data).toMatchObject({
      address: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
      isRegistered: true,
      score: 0,
      grade: 'D',
      color: '#EF4444',
      transactionCount: 0,
      totalVolume: '0',
    });
    expect(body.data.lastUpdated).toBe(Math.floor(t.clock.now.getTime() / 1000));
  });

  it('refuses a mixed-case address with a bad checksum, and stores nothing', async () => {
    const res = await post(t.app, '/api/agents/register', { address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(res.json().error.details[0].path).toBe('body.address');
    const after = await get(t.app, '/api/agents/0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaee');
    expect(after.statusCode).toBe(404);
  });

  it('answers 409 for a second registration', async () => {
    const address = await createAgent(t.app);
    const res = await post(t.app, '/api/agents/register', { address });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('AGENT_ALREADY_REGISTERED');
  });

  it('registering an observed agent keeps its history', async () => {
    const address = randomAddress();
    await recordTx(t.app, address, { amount: '5000' });
    const observed = (await get(t.app, `/api/agents/${address}`)).json().data;
    expect(observed.isRegistered).toBe(false);
    const res = await post(t.app, '/api/agents/register', { address, metadata: { name: 'bot' } });
    expect(res.statusCode).toBe(201);
    expect(res.json().data).toMatchObject({
      isRegistered: true,
      transactionCount: 1,
      totalVolume: '5000',
      metadata: { name: 'bot' },
    });
    expect(res.json().data.firstSeenAt).toBe(observed.firstSeenAt);
  });

  it('rejects unknown fields, a missing address and non-object bodies', async () => {
    for (const body of [{ address: randomAddress(), extra: 1 }, {}, [], 'x', null, 42]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/agents/register',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().success).toBe(false);
    }
  });
});

describe('GET /api/agents/:address and /score', () => {
  it('404s for a never-seen address and 400s for a malformed one', async () => {
    const unknown = await get(t.app, `/api/agents/${randomAddress()}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('AGENT_NOT_FOUND');
    const malformed = await get(t.app, '/api/agents/0x123');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error.details[0].path).toBe('params.address');
  });

  it('returns the stored score with grade and color, accepting any case of the address', async () => {
    const address = await createAgent(t.app);
    await post(t.app, `/api/agents/${address}/score`, { score: 905, reason: '0x6f6b' });
    const res = await get(t.app, `/api/agents/${address.toUpperCase().replace('0X', '0x')}/score`);
    expect(res.statusCode).toBe(200);
    // Registered just now with no transactions: the score rests on nothing yet.
    expect(res.json()).toEqual({
      success: true,
      data: { score: 905, grade: 'AA', color: '#22C55E', confidence: 0, state: 'insufficient_history' },
    });
  });

  it('counts transactions and volume exactly', async () => {
    const address = await createAgent(t.app);
    const big = (2n ** 255n).toString();
    await recordTx(t.app, address, { amount: big });
    await recordTx(t.app, address, { amount: big });
    const res = await get(t.app, `/api/agents/${address}`);
    expect(res.json().data.transactionCount).toBe(2);
    expect(res.json().data.totalVolume).toBe((2n ** 256n).toString());
  });
});

describe('POST /api/agents/:address/score', () => {
  it('writes the score and a history row with old, new, source and reason', async () => {
    const address = await createAgent(t.app);
    const first = await post(t.app, `/api/agents/${address}/score`, { score: 700, reason: '0xAB01' });
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ previousScore: 0, score: 700, grade: 'BB', reason: '0xab01' });
    await post(t.app, `/api/agents/${address}/score`, { score: 420, reason: '0x' });
    const history = await t.database.db
      .selectFrom('score_events')
      .select(['old_score', 'new_score', 'source', 'reason'])
      .where('agent', '=', address)
      .orderBy('id')
      .execute();
    expect(history).toEqual([
      { old_score: 0, new_score: 700, source: 'manual', reason: '0xab01' },
      { old_score: 700, new_score: 420, source: 'manual', reason: '0x' },
    ]);
  });

  it('rejects out-of-range or fractional scores and non-hex reasons without storing anything', async () => {
    const address = await createAgent(t.app);
    for (const body of [
      { score: 1001, reason: '0x' },
      { score: -1, reason: '0x' },
      { score: 1.5, reason: '0x' },
      { score: '500', reason: '0x' },
      { score: 500, reason: 'hello' },
      { score: 500, reason: '0xabc' },
      { score: 500 },
    ]) {
      const res = await post(t.app, `/api/agents/${address}/score`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    const rows = await t.database.db.selectFrom('score_events').selectAll().where('agent', '=', address).execute();
    expect(rows).toHaveLength(0);
    expect((await get(t.app, `/api/agents/${address}/score`)).json().data.score).toBe(0);
  });

  it('404s for an unknown agent and 422s for an observed one', async () => {
    const unknown = await post(t.app, `/api/agents/${randomAddress()}/score`, { score: 1, reason: '0x' });
    expect(unknown.statusCode).toBe(404);
    const observed = randomAddress();
    await recordTx(t.app, observed);
    const res = await post(t.app, `/api/agents/${observed}/score`, { score: 1, reason: '0x' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('AGENT_NOT_REGISTERED');
  });
});

describe('GET /api/agents (list)', () => {
  let ctx: TestContext;
  const scores = [0, 100, 260, 360, 460, 560, 660, 760, 860, 910, 960, 960, 1000];
  beforeAll(async () => {
    ctx = await createTestApp();
    for (const score of scores) {
      const address = await createAgent(ctx.app);
      await post(ctx.app, `/api/agents/${address}/score`, { score, reason: '0x' });
      ctx.clock.advance(1000);
    }
    await recordTx(ctx.app, randomAddress()); // one observed agent, score 0
  });
  afterAll(() => ctx.close());

  it('walks every agent exactly once through the cursor, in score order', async () => {
    const seen: Array<{ address: string; score: number }> = [];
    let cursor: string | null = null;
    do {
      const url: string = `/api/agents?limit=4${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await get(ctx.app, url);
      expect(res.statusCode).toBe(200);
      const page = successEnvelope(agentList).parse(res.json()).data;
      expect(page.total).toBe(scores.length + 1);
      seen.push(...page.agents);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(scores.length + 1);
    expect(new Set(seen.map((a) => a.address)).size).toBe(scores.length + 1);
    const ordered = seen.map((a) => a.score);
    expect(ordered).toEqual([...ordered].sort((a, b) => b - a));
  });

  it('filters by grade, score range and registration, with total counting the filtered set', async () => {
    const aaa = (await get(ctx.app, '/api/agents?grade=AAA')).json().data;
    expect(aaa.total).toBe(3);
    expect(aaa.agents.every((a: { grade: string }) => a.grade === 'AAA')).toBe(true);
    const range = (await get(ctx.app, '/api/agents?minScore=300&maxScore=700')).json().data;
    expect(range.agents.map((a: { score: number }) => a.score).sort()).toEqual([360, 460, 560, 660]);
    const observed = (await get(ctx.app, '/api/agents?registered=false')).json().data;
    expect(observed.total).toBe(1);
    expect(observed.agents[0].isRegistered).toBe(false);
  });

  it('sorts ascending and by most recent update', async () => {
    const asc = (await get(ctx.app, '/api/agents?sort=score_asc&limit=3')).json().data.agents;
    expect(asc.map((a: { score: number }) => a.score)).toEqual([0, 0, 100]);
    const recent = (await get(ctx.app, '/api/agents?sort=recent&limit=2&registered=true')).json().data.agents;
    expect(recent[0].score).toBe(1000);
  });

  it('serves the workflow list with address, score and grade only', async () => {
    const res = await get(ctx.app, '/api/scores/agents?limit=2');
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(Object.keys(data.agents[0]).sort()).toEqual(['address', 'grade', 'score']);
    expect(data.total).toBe(scores.length + 1);
    expect(typeof data.nextCursor).toBe('string');
  });

  it('rejects bad list parameters', async () => {
    for (const query of [
      'limit=0',
      'limit=1001',
      'limit=x',
      'limit=1e2',
      'grade=Z',
      'sort=name',
      'minScore=900&maxScore=100',
      'minScore=',
      'maxScore=1e3',
      'cursor=zzz',
      // An empty cursor is no cursor this service issued (as on every paginated read).
      'cursor=',
      // A cursor of a time no Date holds (9e15 ms), for the recent order.
      `sort=recent&cursor=${Buffer.from(JSON.stringify([9e15, `0x${'0'.repeat(40)}`])).toString('base64url')}`,
      'registered=yes',
      'foo=1',
    ]) {
      const res = await get(ctx.app, `/api/agents?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
  });
});

describe('GET /api/agents/:address/score-history', () => {
  it('lists every score change newest first with its source and reason, page by page', async () => {
    const address = await createAgent(t.app);
    for (const [score, reason] of [
      [300, '0x01'],
      [450, '0x02'],
      [420, '0x03'],
    ] as const) {
      t.clock.advance(1000);
      expect((await post(t.app, `/api/agents/${address}/score`, { score, reason })).statusCode).toBe(200);
    }
    const first = successEnvelope(scoreHistory).parse(
      (await get(t.app, `/api/agents/${address}/score-history?limit=2`)).json(),
    ).data;
    expect(first.events.map((e) => [e.previousScore, e.score, e.source, e.reason])).toEqual([
      [450, 420, 'manual', '0x03'],
      [300, 450, 'manual', '0x02'],
    ]);
    expect(first.events[0]?.changedAt).toBe(Math.floor(t.clock.now.getTime() / 1000));
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = successEnvelope(scoreHistory).parse(
      (await get(t.app, `/api/agents/${address}/score-history?limit=2&cursor=${first.nextCursor}`)).json(),
    ).data;
    expect(second.events.map((e) => [e.previousScore, e.score])).toEqual([[0, 300]]);
    expect(second.nextCursor).toBeNull();
  });

  it('answers an empty history for a known agent, 404 for an unknown one and 400 for bad parameters', async () => {
    const address = await createAgent(t.app);
    const empty = await get(t.app, `/api/agents/${address}/score-history`);
    expect(empty.json().data).toEqual({ address, events: [], nextCursor: null });
    expect((await get(t.app, `/api/agents/${randomAddress()}/score-history`)).statusCode).toBe(404);
    for (const query of [
      'limit=0',
      'limit=1001',
      'cursor=',
      'cursor=bm90LWFuLWlk',
      'cursor=OTk5OTk5OTk5OTk5OTk5OTk5OTk5',
      'x=1',
    ]) {
      const res = await get(t.app, `/api/agents/${address}/score-history?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
  });
});
