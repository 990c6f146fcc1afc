import { successEnvelope, transactionRecord, transactionStats } from '@vouch/schemas';
import {
  createAgent,
  createTestApp,
  get,
  post,
  randomAddress,
  randomTxHash,
  recordTx,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function txCount(agent: string) {
  const rows = await t.database.db.selectFrom('transactions').select('id').where('agent', '=', agent).execute();
  return rows.length;
}

describe('POST /api/transactions/record', () => {
  it('records a transaction (201) and answers the stored record for the same content (200)', async () => {
    const agent = await createAgent(t.app);
    const body = {
      agent,
      txHash: randomTxHash().toUpperCase().replace('0X', '0x'),
      amount: '123',
      type: 3,
      timestamp: 1_790_000_000,
    };
    const first = await post(t.app, '/api/transactions/record', body);
    expect(first.statusCode).toBe(201);
    const record = successEnvelope(transactionRecord).parse(first.json()).data;
    expect(record).toMatchObject({
      agent,
      txHash: body.txHash.toLowerCase(),
      amount: '123',
      type: 3,
      typeName: 'CONTRACT_CALL',
      success: true,
      counterparty: null,
      timestamp: 1_790_000_000,
    });
    const again = await post(t.app, '/api/transactions/record', { ...body, timestamp: undefined });
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toEqual(record);
    expect(await txCount(agent)).toBe(1);
  });

  it('answers 409 for the same (agent, txHash) with different content, naming the fields', async () => {
    const agent = await createAgent(t.app);
    const body = { agent, txHash: randomTxHash(), amount: '5', type: 0 };
    await post(t.app, '/api/transactions/record', body);
    const res = await post(t.app, '/api/transactions/record', { ...body, amount: '6', success: false });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({
      code: 'TRANSACTION_CONFLICT',
      details: { fields: ['amount', 'success'] },
    });
    expect(await txCount(agent)).toBe(1);
  });

  it('the same txHash for two agents is two records', async () => {
    const [a, b] = [await createAgent(t.app), await createAgent(t.app)];
    const txHash = randomTxHash();
    expect((await post(t.app, '/api/transactions/record', { agent: a, txHash, amount: '1', type: 0 })).statusCode).toBe(
      201,
    );
    expect((await post(t.app, '/api/transactions/record', { agent: b, txHash, amount: '1', type: 0 })).statusCode).toBe(
      201,
    );
  });

  it('makes an unknown agent known as observed', async () => {
    const agent = randomAddress();
    await recordTx(t.app, agent, { amount: '77' });
    const res = await get(t.app, `/api/agents/${agent}`);
    expect(res.json().data).toMatchObject({ isRegistered: false, transactionCount: 1, totalVolume: '77' });
  });

  it('rejects bad records and stores nothing', async () => {
    const agent = randomAddress();
    const good = { agent, txHash: randomTxHash(), amount: '1', type: 0 };
    for (const bad of [
      { ...good, type: 6 },
      { ...good, type: -1 },
      { ...good, type: 1.5 },
      { ...good, amount: '0' },
      { ...good, amount: 100 },
      { ...good, txHash: '0x1234' },
      { ...good, agent: '0xnothex' },
      { ...good, counterparty: 'me' },
      { ...good, success: 'yes' },
      { ...good, timestamp: -1 },
      { ...good, extra: true },
      { agent, amount: '1', type: 0 },
    ]) {
      const res = await post(t.app, '/api/transactions/record', bad);
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
    }
    expect((await get(t.app, `/api/agents/${agent}`)).statusCode).toBe(404);
  });

  it('replays with Idempotency-Key and refuses the key with another body', async () => {
    const agent = await createAgent(t.app);
    const headers = { 'idempotency-key': 'rec-1' };
    const body = { agent, txHash: randomTxHash(), amount: '9', type: 1 };
    const first = await post(t.app, '/api/transactions/record', body, headers);
    const second = await post(t.app, '/api/transactions/record', body, headers);
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    expect(second.headers['idempotency-replayed']).toBe('true');
    const other = await post(t.app, '/api/transactions/record', { ...body, amount: '10' }, headers);
    expect(other.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await txCount(agent)).toBe(1);
  });

  it('replays an answer stored before its fields changed exactly as it was stored, not as a 500', async () => {
    const agent = await createAgent(t.app);
    const body = { agent, txHash: randomTxHash(), amount: '9', type: 1 };
    const headers = { 'idempotency-key': 'rec-old' };
    expect((await post(t.app, '/api/transactions/record', body, headers)).statusCode).toBe(201);
    // The stored answer as an older version wrote it: without the fields added since.
    const stored = await t.database.db
      .selectFrom('idempotency_keys')
      .select('response')
      .where('key', '=', 'rec-old')
      .executeTakeFirstOrThrow();
    const outcome = stored.response as { data: { record: Record<string, unknown> } };
    const { chainStatus: _s, chainDetail: _d, chainCheckedAt: _c, backdated: _b, ...older } = outcome.data.record;
    await t.database.db
      .updateTable('idempotency_keys')
      .set({ response: JSON.stringify({ ...outcome, data: { ...outcome.data, record: older } }) })
      .where('key', '=', 'rec-old')
      .execute();
    const replay = await post(t.app, '/api/transactions/record', body, headers);
    expect(replay.statusCode, replay.body).toBe(201);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.json()).toEqual({ success: true, data: older });
  });
});

describe('self-reported times', () => {
  const now = () => Math.floor(t.clock.now.getTime() / 1000);
  const record = (agent: string, fields: Record<string, unknown>) =>
    post(t.app, '/api/transactions/record', { agent, txHash: randomTxHash(), amount: '1', type: 0, ...fields });

  it('refuses a transaction dated more than 5 minutes ahead, storing nothing; a little skew is accepted', async () => {
    const agent = await createAgent(t.app);
    const ahead = await record(agent, { timestamp: now() + 301 });
    expect(ahead.statusCode).toBe(400);
    expect(ahead.json().error.details).toEqual([
      { path: 'body.timestamp', message: expect.stringMatching(/in the future/) },
    ]);
    expect(await txCount(agent)).toBe(0);
    const skewed = await record(agent, { timestamp: now() + 60 });
    expect(skewed.statusCode).toBe(201);
  });

  it('stores nothing under an Idempotency-Key either: the same request sent once the clock caught up is recorded', async () => {
    const agent = await createAgent(t.app);
    const body = { agent, txHash: randomTxHash(), amount: '1', type: 0, timestamp: now() + 302 };
    const headers = { 'idempotency-key': `ahead-${agent}` };
    expect((await post(t.app, '/api/transactions/record', body, headers)).statusCode).toBe(400);
    const kept = await t.database.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('key', '=', headers['idempotency-key'])
      .execute();
    expect(kept).toEqual([]);
    t.clock.advance(5000);
    const retried = await post(t.app, '/api/transactions/record', body, headers);
    expect([retried.statusCode, retried.headers['idempotency-replayed']], retried.body).toEqual([201, undefined]);
    expect(await txCount(agent)).toBe(1);
  });

  it('accepts a transaction dated before the agent was first seen, and marks it', async () => {
    const agent = await createAgent(t.app);
    const before = await record(agent, { timestamp: now() - 86_400 });
    expect(before.statusCode).toBe(201);
    expect(before.json().data.backdated).toBe(true);
    t.clock.advance(1000);
    const after = await record(agent, { timestamp: now() });
    expect(after.json().data.backdated).toBe(false);
    expect((await record(agent, {})).json().data.backdated).toBe(false);
  });

  it('does not mark a transaction dated in the second the agent was first seen in', async () => {
    // Half-way through a second, as a real clock almost always is: times are whole seconds.
    t.clock.advance(1500 - (t.clock.now.getTime() % 1000));
    const agent = randomAddress();
    const first = await record(agent, { timestamp: now() });
    expect(first.statusCode).toBe(201);
    const seen = (await get(t.app, `/api/agents/${agent}`)).json().data;
    expect(seen.firstSeenAt).toBe(first.json().data.timestamp);
    expect(first.json().data.backdated).toBe(false);
  });
});

describe('GET /api/transactions/:address/stats', () => {
  it('computes counts, exact volume and the latest time from the ledger', async () => {
    const agent = await createAgent(t.app);
    const empty = await get(t.app, `/api/transactions/${agent}/stats`);
    expect(empty.json().data).toEqual({
      totalCount: 0,
      successCount: 0,
      failedCount: 0,
      totalVolume: '0',
      lastTransactionTime: 0,
    });
    const big = (2n ** 256n - 1n).toString();
    await recordTx(t.app, agent, { amount: big, timestamp: 1_700_000_000 });
    await recordTx(t.app, agent, { amount: '1', success: false, timestamp: 1_760_000_000 });
    await recordTx(t.app, agent, { amount: '2', timestamp: 1_750_000_000 });
    const res = await get(t.app, `/api/transactions/${agent}/stats`);
    const stats = successEnvelope(transactionStats).parse(res.json()).data;
    expect(stats).toEqual({
      totalCount: 3,
      successCount: 2,
      failedCount: 1,
      totalVolume: (2n ** 256n + 2n).toString(),
      lastTransactionTime: 1_760_000_000,
    });
  });

  it('counts every asset in the counts and only the native unit in the volume, the score’s too', async () => {
    const agent = await createAgent(t.app);
    const usdc = 'eip155:8453/erc20:0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913';
    await recordTx(t.app, agent, { amount: '5' });
    const token = await post(t.app, '/api/transactions/record', {
      agent,
      txHash: randomTxHash(),
      amount: '1000000000000000000000',
      asset: usdc,
      type: 0,
    });
    expect(token.statusCode, token.body).toBe(201);
    expect(successEnvelope(transactionRecord).parse(token.json()).data.asset).toBe(usdc.toLowerCase());
    const stats = (await get(t.app, `/api/transactions/${agent}/stats`)).json().data;
    expect(stats).toMatchObject({ totalCount: 2, totalVolume: '5' });
    expect((await get(t.app, `/api/agents/${agent}`)).json().data).toMatchObject({ totalVolume: '5' });
    const counted = (await get(t.app, `/api/scores/${agent}`)).json().data.counted;
    expect(counted).toMatchObject({ transactions: 2, volume: '5', leftOutVolume: '0' });
    const listed = (await get(t.app, `/api/transactions/${agent}`)).json().data.transactions;
    expect(listed.map((r: { asset: string }) => r.asset).sort()).toEqual(['', usdc.toLowerCase()]);
    // A retry naming another asset is another payment: a conflict, not a replay.
    const retry = await post(t.app, '/api/transactions/record', {
      agent,
      txHash: JSON.parse(token.body).data.txHash,
      amount: '1000000000000000000000',
      type: 0,
    });
    expect(retry.statusCode).toBe(409);
    expect(retry.json().error.details.fields).toEqual(['asset']);
    const bad = await post(t.app, '/api/transactions/record', {
      agent,
      txHash: randomTxHash(),
      amount: '1',
      asset: 'usdc',
      type: 0,
    });
    expect(bad.statusCode).toBe(400);
    expect(await txCount(agent)).toBe(2);
  });

  it('404s for an unknown agent', async () => {
    expect((await get(t.app, `/api/transactions/${randomAddress()}/stats`)).statusCode).toBe(404);
  });
});
