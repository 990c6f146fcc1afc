import { agentList, successEnvelope } from '@vouch/schemas';
import { createAgent, createTestApp, get, post, randomAddress, recordTx, type TestContext } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The agent list under ties: many agents with the same score and the same update time.
let t: TestContext;
const agents: string[] = [];
beforeAll(async () => {
  t = await createTestApp();
  // Ten registered agents at 500 and five at 700, all written in the same millisecond.
  for (let i = 0; i < 15; i++) agents.push(await createAgent(t.app));
  const res = await post(t.app, '/api/agents/batch-scores', {
    agents,
    scores: agents.map((_, i) => (i < 10 ? 500 : 700)),
    reasons: agents.map(() => '0x'),
  });
  expect(res.statusCode).toBe(200);
  // Two observed agents (score 0), same time too.
  await recordTx(t.app, randomAddress());
  await recordTx(t.app, randomAddress());
});
afterAll(() => t.close());

async function walk(query: string, limit: number) {
  const seen: Array<{ address: string; score: number; isRegistered: boolean }> = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await get(t.app, `/api/agents?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    const page = successEnvelope(agentList).parse(res.json()).data;
    seen.push(...page.agents);
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 100);
  return seen;
}

describe('GET /api/agents under ties', () => {
  for (const sort of ['score_desc', 'score_asc', 'recent'] as const) {
    for (const limit of [1, 3, 4]) {
      it(`walks every agent exactly once, sort=${sort} limit=${limit}`, async () => {
        const seen = await walk(`sort=${sort}`, limit);
        expect(seen).toHaveLength(17);
        expect(new Set(seen.map((a) => a.address)).size).toBe(17);
      });
    }
  }

  it('combines grade, score range and registration filters, paginating within them', async () => {
    const seen = await walk('grade=CCC&minScore=400&registered=true', 2);
    expect(seen.map((a) => a.score)).toEqual(Array(10).fill(500));
    const none = (await get(t.app, '/api/agents?grade=AAA&maxScore=100')).json().data;
    expect(none).toEqual({ agents: [], total: 0, nextCursor: null });
  });
});

describe('GET /api/agents: a cursor belongs to its sort order', () => {
  it('refuses a score_desc cursor under sort=recent instead of answering an empty last page', async () => {
    const first = (await get(t.app, '/api/agents?sort=score_desc&limit=3')).json().data;
    expect(first.nextCursor).toEqual(expect.any(String));
    const res = await get(t.app, `/api/agents?sort=recent&limit=3&cursor=${first.nextCursor}`);
    // The service gave this cursor out for another order: under `recent` its score reads as a
    // time in 1970, and the walk silently ends with nothing.
    expect(res.json().data, res.body).toBeUndefined();
    expect(res.statusCode).toBe(400);
  });

  it('refuses a recent cursor under sort=score_asc', async () => {
    const first = (await get(t.app, '/api/agents?sort=recent&limit=3')).json().data;
    expect(first.nextCursor).toEqual(expect.any(String));
    const res = await get(t.app, `/api/agents?sort=score_asc&limit=3&cursor=${first.nextCursor}`);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
  });

  it('refuses a recent cursor of a time before any a database keeps with a 400, not a 500', async () => {
    for (const key of [-8.64e15, -1e15, -62_200_000_000_000]) {
      const cursor = Buffer.from(JSON.stringify([key, `0x${'0'.repeat(40)}`])).toString('base64url');
      const res = await get(t.app, `/api/agents?sort=recent&cursor=${cursor}`);
      expect([200, 400], `${key}: ${res.body}`).toContain(res.statusCode);
    }
  });

  it('refuses a cursor it did not give out, even one that reads as one it did', async () => {
    const first = (await get(t.app, '/api/agents?sort=score_desc&limit=3')).json().data;
    const given: string = first.nextCursor;
    expect((await get(t.app, `/api/agents?sort=score_desc&limit=3&cursor=${given}`)).statusCode).toBe(200);
    const [sort, key, address] = JSON.parse(Buffer.from(given, 'base64url').toString('utf8'));
    const spaced = Buffer.from(JSON.stringify([sort, key, address], null, 1)).toString('base64url');
    for (const cursor of [`${given}=`, `${given}.`, `%20${given}`, spaced]) {
      const res = await get(t.app, `/api/agents?sort=score_desc&limit=3&cursor=${cursor}`);
      expect([res.statusCode, res.json().error?.code], cursor).toEqual([400, 'VALIDATION_ERROR']);
    }
  });
});
