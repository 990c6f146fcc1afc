import { scoreBreakdown, successEnvelope, type TransactionRecord } from '@vouch/schemas';
import {
  createAgent,
  createTestApp,
  get,
  type LocalChain,
  type PersistentRedis,
  post,
  randomAddress,
  randomTxHash,
  startLocalChain,
  startPersistentRedis,
  type TestContext,
  testPrefix,
} from '@vouch/testkit';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Recorded transactions checked against a real EVM node (anvil) on loopback, read through viem.
let chain: LocalChain;
let t: TestContext;
const ETHER = 10n ** 18n;

beforeAll(async () => {
  chain = await startLocalChain({ accounts: 7 });
  t = await createTestApp({ chainRpcUrl: chain.url, refreshDelayMs: 50 });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await chain?.close();
});

const account = (i: number) => (chain.accounts[i] as string).toLowerCase() as Address;

interface Body {
  agent: string;
  txHash: string;
  amount: string;
  type: number;
  success?: boolean;
  counterparty?: string;
}

/** Records the transaction, then waits until its check has stored something other than `pending`. */
async function recordAndCheck(ctx: TestContext, body: Body, timeout = 10_000): Promise<TransactionRecord> {
  const first = await post(ctx.app, '/api/transactions/record', body);
  expect(first.statusCode, first.body).toBe(201);
  expect(first.json().data.chainStatus).toBe('pending');
  // The same record again answers the stored one, with its current state.
  const current = async () => (await post(ctx.app, '/api/transactions/record', body)).json().data as TransactionRecord;
  await expect.poll(async () => (await current()).chainStatus, { timeout, interval: 100 }).not.toBe('pending');
  return current();
}

describe('recorded transactions against a chain', () => {
  it('verifies a real value transfer from the agent, and its score then counts it', async () => {
    const agent = account(1);
    await createAgent(t.app, { address: agent });
    const txHash = await chain.sendValue(account(1), account(2), 2n * ETHER);
    const record = await recordAndCheck(t, {
      agent,
      txHash,
      amount: (2n * ETHER).toString(),
      type: 2,
      counterparty: account(2),
    });
    expect(record).toMatchObject({ chainStatus: 'verified', chainCheckedAt: expect.any(Number) });
    expect(record.chainDetail).toMatch(/^block \d+: success, native value from the agent$/);

    const breakdown = successEnvelope(scoreBreakdown).parse((await get(t.app, `/api/scores/${agent}`)).json()).data;
    expect(breakdown.counted).toMatchObject({ basis: 'verified', transactions: 1, volume: (2n * ETHER).toString() });
    expect(breakdown.score).toBeGreaterThan(0);
    // The verification changed what counts: the agent's score was refreshed.
    await expect
      .poll(async () => (await get(t.app, `/api/agents/${agent}/score`)).json().data.score, { timeout: 5000 })
      .toBe(breakdown.score);
  });

  it('names what disagrees: the sender, the counterparty, the amount, the outcome', async () => {
    const txHash = await chain.sendValue(account(3), account(2), 5n * ETHER);
    const amount = (5n * ETHER).toString();

    // Recorded by an agent that did not send it.
    const stranger = await recordAndCheck(t, { agent: randomAddress(), txHash, amount, type: 0 });
    expect(stranger.chainStatus).toBe('mismatch');
    expect(stranger.chainDetail).toContain(`from: sent by ${account(3)}, not the agent`);

    // The right sender, another counterparty.
    const elsewhere = randomAddress();
    const wrongTo = await recordAndCheck(t, { agent: account(3), txHash, amount, type: 0, counterparty: elsewhere });
    expect(wrongTo.chainStatus).toBe('mismatch');
    expect(wrongTo.chainDetail).toMatch(
      new RegExp(`counterparty: ${elsewhere} is not where it went \\(${account(2)}\\)`),
    );
    expect(wrongTo.chainDetail).not.toMatch(/from:|amount:/);

    // More than was sent (a wei more).
    const other = await chain.sendValue(account(3), account(2), 1000n);
    const inflated = await recordAndCheck(t, { agent: account(3), txHash: other, amount: '1001', type: 0 });
    expect(inflated.chainStatus).toBe('mismatch');
    expect(inflated.chainDetail).toContain('amount: 1001 is not what the agent moved (1000 wei of native value)');

    // Mismatches count for nothing.
    const breakdown = (await get(t.app, `/api/scores/${account(3)}`)).json().data;
    expect(breakdown.counted).toMatchObject({ transactions: 0, leftOutTransactions: 2 });
  });

  it('has every API process drop the agent’s cached standing once a check changes what counts', async () => {
    // A score a client set: the refresh after the check leaves the agent's row alone, so only the
    // check itself can tell the read caches that the agent's verified evidence changed.
    const agent = account(6);
    await createAgent(t.app, { address: agent });
    expect((await post(t.app, `/api/agents/${agent}/score`, { score: 700, reason: '0x01' })).statusCode).toBe(200);
    const heard: string[] = [];
    let ready: () => void = () => {};
    const listening = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const listener = await t.database.listen('vouch_cache', {
      onNotify: (payload) => heard.push(payload),
      onReady: () => ready(),
    });
    try {
      await listening;
      const txHash = await chain.sendValue(agent, account(2), 10n);
      const record = await recordAndCheck(t, { agent, txHash, amount: '10', type: 0 });
      expect(record.chainStatus).toBe('verified');
      // One drop for the record (it touches the agent's row), one for the check that verified it.
      await expect.poll(() => heard.filter((p) => p === `agents:${agent}`).length).toBeGreaterThanOrEqual(2);
    } finally {
      await listener.close();
    }
  });

  it('finds no transaction for a made-up hash', async () => {
    const record = await recordAndCheck(t, { agent: randomAddress(), txHash: randomTxHash(), amount: '1', type: 0 });
    expect(record).toMatchObject({
      chainStatus: 'not_found',
      chainDetail: 'the chain has no transaction with this hash',
    });
  });

  it('verifies a token payment by its Transfer event: the amount and the recipient are the transfer’s', async () => {
    const token = (await chain.deployToken()) as Address;
    const txHash = await chain.sendToken(account(4), token, account(2), 1234n);
    const record = await recordAndCheck(t, {
      agent: account(4),
      txHash,
      amount: '1234',
      type: 0,
      counterparty: account(2),
    });
    expect(record.chainStatus).toBe('verified');
    expect(record.chainDetail).toContain(`a transfer of token ${token} from the agent`);
    // Recorded without an asset, it moved a token, not wei: counted as a transaction, not as native
    // volume (a worthless token of the agent's own would otherwise raise its volume factor).
    const stats = (await get(t.app, `/api/transactions/${account(4)}/stats`)).json().data;
    expect(stats).toMatchObject({ totalCount: 1, totalVolume: '0' });
    const breakdown = (await get(t.app, `/api/scores/${account(4)}`)).json().data;
    expect(breakdown.counted).toMatchObject({ transactions: 1, volume: '0', leftOutVolume: '0' });
  });

  it('verifies a reverted transaction recorded as failed, and refuses one recorded as successful', async () => {
    const reverter = (await chain.deployReverter()) as Address;
    const failed = await chain.sendValue(account(5), reverter, 10n, { gas: 100_000n });
    const asFailed = await recordAndCheck(t, {
      agent: account(5),
      txHash: failed,
      amount: '10',
      type: 3,
      success: false,
    });
    expect(asFailed.chainStatus).toBe('verified');
    expect(asFailed.chainDetail).toMatch(/: reverted, native value from the agent$/);

    const another = await chain.sendValue(account(5), reverter, 10n, { gas: 100_000n });
    const asSuccess = await recordAndCheck(t, { agent: account(5), txHash: another, amount: '10', type: 3 });
    expect(asSuccess.chainStatus).toBe('mismatch');
    expect(asSuccess.chainDetail).toContain('success: recorded as successful, but it reverted');
  });

  it('says it could not check when the node does not answer, and counts the transaction neither way', async () => {
    const txHash = await chain.sendValue(account(1), account(2), 3n);
    const ctx = await createTestApp({ chainRpcUrl: 'http://127.0.0.1:9' });
    try {
      const agent = account(1);
      const record = await recordAndCheck(ctx, { agent, txHash, amount: '3', type: 0 }, 15_000);
      expect(record.chainStatus).toBe('unreachable');
      expect(record.chainDetail).toMatch(/^the node did not answer: /);
      const { counted, factors } = (await get(ctx.app, `/api/scores/${agent}`)).json().data;
      expect(counted).toMatchObject({ transactions: 0, leftOutTransactions: 1 });
      expect(factors.successRate.value).toBe(0);
      expect((await get(ctx.app, `/api/transactions/${agent}/stats`)).json().data.failedCount).toBe(0);
    } finally {
      await ctx.close();
    }
  }, 30_000);
});

describe('a record made while Redis is away', () => {
  let redis: PersistentRedis;
  let ctx: TestContext;

  beforeAll(async () => {
    redis = await startPersistentRedis();
    // The API and a BullMQ worker in one process (`npm start` with REDIS_URL), re-checking every 200 ms.
    ctx = await createTestApp({
      role: 'all',
      chainRpcUrl: chain.url,
      env: {
        REDIS_URL: redis.url,
        BULLMQ_PREFIX: testPrefix('txcheck'),
        TX_RECHECK_INTERVAL_MS: '200',
        SHUTDOWN_TIMEOUT_MS: '1000',
      },
    });
  }, 60_000);

  afterAll(async () => {
    await ctx?.close();
    await redis?.destroy();
  });

  it('is answered as pending, and verified by the re-check once Redis is back', async () => {
    const txHash = await chain.sendValue(account(2), account(1), 7n);
    await redis.stop();
    const body = { agent: account(2), txHash, amount: '7', type: 0 };
    const res = await post(ctx.app, '/api/transactions/record', body);
    expect(res.statusCode).toBe(201);
    expect(res.json().data.chainStatus).toBe('pending');
    await redis.start();
    // The re-check leaves a fresh `pending` row one interval to its own job; the test's clock stands still.
    ctx.clock.advance(1000);
    await expect
      .poll(async () => (await post(ctx.app, '/api/transactions/record', body)).json().data.chainStatus, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe('verified');
  }, 40_000);
});
