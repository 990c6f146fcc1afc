import { sql } from '@vouch/db';
import { erc8004FeedbackResult, failureEnvelope, scoreBreakdown, successEnvelope } from '@vouch/schemas';
import { createAgent, createTestApp, get, post, randomAddress, type TestContext } from '@vouch/testkit';
import { keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The ERC-8004 routes without a chain: identities and cursors as an indexer run would have left them.
let t: TestContext;
const IDENTITY = '0x8004a169fb4a3325136eb29fa0ceb6d2e539a432';
const REPUTATION = '0x8004baa17c55a88189ae136b182e5fda19de9b63';

beforeAll(async () => {
  t = await createTestApp({ env: { ERC8004_FEEDBACK_BASE_URL: 'https://vouch.example' } });
});
afterAll(() => t.close());

async function indexedIdentity(wallet: string, agentId: number) {
  const now = t.clock.now;
  await sql`INSERT INTO erc8004_cursors (chain_id, registry, kind, next_block, updated_at)
    VALUES (8453, ${IDENTITY}, 'identity', 100, ${now}) ON CONFLICT DO NOTHING`.execute(t.database.db);
  await sql`INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, agent_uri, agent_wallet, updated_block)
    VALUES (8453, ${IDENTITY}, ${agentId}, ${randomAddress()}, 'https://agents.example/a.json', ${wallet}, 1)`.execute(
    t.database.db,
  );
}

describe('ERC-8004 without a chain', () => {
  it('says so in the agent and the breakdown: nothing is indexed, nothing adjusts the score', async () => {
    const agent = await createAgent(t.app);
    expect((await get(t.app, `/api/agents/${agent}`)).json().data.erc8004).toBeNull();
    const b = successEnvelope(scoreBreakdown).parse((await get(t.app, `/api/scores/${agent}`)).json()).data;
    expect(b.erc8004).toMatchObject({ status: 'not_configured', identity: null, adjustment: 0, applied: false });
    expect(b.score).toBe(b.modelScore);
  });

  it('refuses feedback on an agent without an indexed identity (422), unknown (404) or observed (422)', async () => {
    const agent = await createAgent(t.app);
    const res = await post(t.app, `/api/agents/${agent}/erc8004/feedback`, {});
    expect(res.statusCode).toBe(422);
    expect(failureEnvelope.parse(res.json()).error.code).toBe('ERC8004_IDENTITY_NOT_FOUND');
    expect((await post(t.app, `/api/agents/${randomAddress()}/erc8004/feedback`, {})).statusCode).toBe(404);
    const bad = await post(t.app, `/api/agents/${agent}/erc8004/feedback`, { clientAddress: 'nope' });
    expect(bad.statusCode).toBe(400);
    expect(await sql`SELECT 1 FROM erc8004_exports`.execute(t.database.db).then((r) => r.rows.length)).toBe(0);
  });

  it('stands an agent for the lowest agent id among those with its wallet, compared as numbers', async () => {
    const agent = await createAgent(t.app);
    await indexedIdentity(agent, 10);
    await indexedIdentity(agent, 9);
    expect((await get(t.app, `/api/agents/${agent}`)).json().data.erc8004).toMatchObject({ agentId: '9' });
  });

  it('prepares the giveFeedback call and serves the file at feedbackURI, byte for byte', async () => {
    const agent = await createAgent(t.app);
    await post(t.app, `/api/agents/${agent}/score`, { score: 720, reason: '0x' });
    await indexedIdentity(agent, 42);
    expect((await get(t.app, `/api/agents/${agent}`)).json().data.erc8004).toMatchObject({
      chainId: 8453,
      agentId: '42',
    });
    const client = randomAddress();
    const res = await post(t.app, `/api/agents/${agent}/erc8004/feedback`, { clientAddress: client });
    expect(res.statusCode, res.body).toBe(200);
    const fb = successEnvelope(erc8004FeedbackResult).parse(res.json()).data;
    expect(fb).toMatchObject({
      sent: false,
      txHash: null,
      value: 720,
      valueDecimals: 1,
      tag1: 'vouch-score',
      clientAddress: client,
      reputationRegistry: REPUTATION,
      endpoint: `https://vouch.example/api/scores/${agent}`,
      transaction: { chainId: 8453, to: REPUTATION },
    });
    expect(fb.transaction.data.startsWith('0x')).toBe(true);
    expect(fb.feedbackHash).toBe(keccak256(toBytes(fb.file)));
    expect(JSON.parse(fb.file)).toMatchObject({
      agentRegistry: `eip155:8453:${IDENTITY}`,
      agentId: 42,
      clientAddress: `eip155:8453:${client}`,
      value: 720,
      valueDecimals: 1,
    });
    const path = new URL(fb.feedbackURI).pathname;
    expect(path).toBe(`/api/agents/${agent}/erc8004/feedback/${fb.id}`);
    const served = await get(t.app, path);
    expect(served.statusCode).toBe(200);
    expect(served.headers['content-type']).toMatch(/^application\/json/);
    expect(served.body).toBe(fb.file);
    expect((await get(t.app, `/api/agents/${agent}/erc8004/feedback/fb_${'0'.repeat(24)}`)).statusCode).toBe(404);
    expect((await get(t.app, `/api/agents/${agent}/erc8004/feedback/x`)).statusCode).toBe(400);
    const audit = await sql<{ action: string }>`SELECT action FROM audit_log WHERE target = ${agent}
      ORDER BY seq DESC LIMIT 1`.execute(t.database.db);
    expect(audit.rows[0]?.action).toBe('score.erc8004_feedback');
  });

  it('with an Idempotency-Key: reads go through the request transaction, and a retry replays the export', async () => {
    // On one connection (PGlite) a read beside the idempotent transaction would wait for it forever.
    const agent = await createAgent(t.app);
    await indexedIdentity(agent, 43);
    const key = { 'idempotency-key': `fb-${agent}` };
    const first = await post(t.app, `/api/agents/${agent}/erc8004/feedback`, {}, key);
    expect(first.statusCode, first.body).toBe(200);
    const again = await post(t.app, `/api/agents/${agent}/erc8004/feedback`, {}, key);
    expect(again.statusCode).toBe(200);
    expect(again.json().data.id).toBe(first.json().data.id);
    const stored = await sql`SELECT 1 FROM erc8004_exports WHERE agent = ${agent}`.execute(t.database.db);
    expect(stored.rows.length).toBe(1);
    const missing = await post(t.app, `/api/agents/${randomAddress()}/erc8004/feedback`, {}, key);
    expect(missing.statusCode).toBe(422);
  });
});
