import type { ChainStatus } from '@vouch/db';
import { createBullmqRunner } from '@vouch/jobs';
import { scoreBreakdown, successEnvelope, transactionRecord } from '@vouch/schemas';
import {
  createAgent,
  createTestApp,
  createTestRuntime,
  get,
  post,
  randomTxHash,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The states of a recorded transaction's chain check and what the score model counts, on both
// databases. A node on the discard port refuses every connection: a configured chain that never
// answers. The checks against a real node are in transaction-chain.once.test.ts.
const DEAD_RPC = 'http://127.0.0.1:9';
const MINUTE = 60_000;

const breakdownOf = async (t: TestContext, agent: string) =>
  successEnvelope(scoreBreakdown).parse((await get(t.app, `/api/scores/${agent}`)).json()).data;

/** Transactions of `agent` in given chain states, written as the check would have left them. */
async function insertTransactions(
  t: TestContext,
  agent: string,
  rows: Array<{
    status: ChainStatus;
    amount: string;
    success?: boolean;
    recordedAgoMs?: number;
    checkedAgoMs?: number;
  }>,
) {
  const now = t.clock.now.getTime();
  await t.database.db
    .insertInto('transactions')
    .values(
      rows.map((r) => ({
        agent,
        tx_hash: randomTxHash(),
        amount: r.amount,
        type: 0,
        success: r.success ?? true,
        counterparty: null,
        occurred_at: new Date(now - (r.recordedAgoMs ?? 0)),
        recorded_at: new Date(now - (r.recordedAgoMs ?? 0)),
        chain_status: r.status,
        chain_detail: r.status === 'pending' ? null : `stored as ${r.status}`,
        chain_checked_at: r.checkedAgoMs === undefined ? null : new Date(now - r.checkedAgoMs),
      })),
    )
    .execute();
}

describe('without a chain', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('records transactions as unverified (self-reported), and the score counts every one of them', async () => {
    const agent = await createAgent(t.app);
    const res = await post(t.app, '/api/transactions/record', { agent, txHash: randomTxHash(), amount: '7', type: 0 });
    expect(res.statusCode).toBe(201);
    const record = successEnvelope(transactionRecord).parse(res.json()).data;
    expect(record).toMatchObject({ chainStatus: 'unverified', chainDetail: null, chainCheckedAt: null });
    const { counted } = await breakdownOf(t, agent);
    expect(counted).toEqual({
      basis: 'all',
      chainConfigured: false,
      detail: expect.stringMatching(/self-reported, no chain is configured/),
      transactions: 1,
      volume: '7',
      leftOutTransactions: 0,
      leftOutVolume: '0',
    });
  });
});

describe('with a chain configured', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ chainRpcUrl: DEAD_RPC });
  });
  afterAll(() => t.close());

  it('answers the record at once as pending; a node that never answers leaves it unreachable, not failed', async () => {
    const agent = await createAgent(t.app);
    const body = { agent, txHash: randomTxHash(), amount: '5000', type: 0 };
    const first = await post(t.app, '/api/transactions/record', body);
    expect(first.statusCode).toBe(201);
    expect(successEnvelope(transactionRecord).parse(first.json()).data).toMatchObject({
      chainStatus: 'pending',
      chainDetail: null,
      chainCheckedAt: null,
    });
    // The job tries three times (1 s, then 2 s apart) before it stores that it could not check.
    const current = async () => (await post(t.app, '/api/transactions/record', body)).json().data;
    await expect
      .poll(async () => (await current()).chainStatus, { timeout: 15_000, interval: 250 })
      .toBe('unreachable');
    const record = await current();
    expect(record.chainDetail).toMatch(/^the node did not answer: /);
    expect(record.chainCheckedAt).toBe(Math.floor(t.clock.now.getTime() / 1000));

    // Not counted, and not a failure either: the ledger still says what the agent reported.
    const { counted, factors } = await breakdownOf(t, agent);
    expect(counted).toMatchObject({
      basis: 'verified',
      chainConfigured: true,
      transactions: 0,
      volume: '0',
      leftOutTransactions: 1,
      leftOutVolume: '5000',
    });
    expect(factors.count.value).toBe(0);
    const stats = (await get(t.app, `/api/transactions/${agent}/stats`)).json().data;
    expect(stats).toMatchObject({ totalCount: 1, successCount: 1, failedCount: 0, totalVolume: '5000' });
  }, 30_000);

  it('counts only verified transactions in every factor, unless SCORE_TRANSACTIONS=all', async () => {
    const agent = await createAgent(t.app);
    const ether = 10n ** 18n;
    await insertTransactions(t, agent, [
      { status: 'verified', amount: (9n * ether).toString() },
      { status: 'verified', amount: ether.toString(), success: false },
      { status: 'mismatch', amount: (50n * ether).toString() },
      { status: 'not_found', amount: (30n * ether).toString() },
      { status: 'unreachable', amount: '1' },
      { status: 'pending', amount: '2' },
      { status: 'unverified', amount: '3' },
    ]);
    const verified = await breakdownOf(t, agent);
    expect(verified.counted).toEqual({
      basis: 'verified',
      chainConfigured: true,
      detail: expect.stringMatching(/^only transactions verified on the chain count/),
      transactions: 2,
      volume: (10n * ether).toString(),
      leftOutTransactions: 5,
      leftOutVolume: (80n * ether + 6n).toString(),
    });
    expect(verified.factors.volume.value).toBe(10);
    expect(verified.factors.count.value).toBe(2);
    expect(verified.factors.successRate.value).toBe(0.5);
    // A recomputation stores what the breakdown gives.
    expect((await post(t.app, '/api/scores/recompute', { agents: [agent] })).statusCode).toBe(200);
    expect((await get(t.app, `/api/agents/${agent}/score`)).json().data.score).toBe(verified.score);

    const all = await createTestRuntime(t.database, {
      env: { CHAIN_RPC_URL: DEAD_RPC, SCORE_TRANSACTIONS: 'all' },
      clock: () => t.clock.now,
    });
    try {
      const breakdown = await all.services.scores.breakdown(agent);
      expect(breakdown.counted).toMatchObject({
        basis: 'all',
        chainConfigured: true,
        transactions: 7,
        volume: (90n * ether + 6n).toString(),
        leftOutTransactions: 0,
        leftOutVolume: '0',
      });
      expect(breakdown.counted.detail).toMatch(/verified on the chain or not/);
      expect(breakdown.factors.successRate.value).toBeCloseTo(6 / 7);
      expect(breakdown.score).toBeGreaterThan(verified.score);
    } finally {
      await all.close();
    }
  });
});

describe('when the check could not be queued or may still change', () => {
  let t: TestContext;
  beforeAll(async () => {
    // The default TX_RECHECK_INTERVAL_MS (1 min): the schedule itself never fires during the test.
    t = await createTestApp({ chainRpcUrl: DEAD_RPC, start: '2026-06-01T12:00:00Z' });
  });
  afterAll(() => t.close());

  it('records while the queue is unreachable, and the re-check queues the pending row later', async () => {
    // An API whose job queue is a Redis that is not there: the check cannot be queued.
    const away = await createTestApp({
      chainRpcUrl: DEAD_RPC,
      jobs: () => createBullmqRunner({ redisUrl: 'redis://127.0.0.1:1', prefix: 'away', waitMs: 1000 }),
    });
    try {
      const agent = await createAgent(away.app);
      const txHash = randomTxHash();
      const res = await post(away.app, '/api/transactions/record', { agent, txHash, amount: '9', type: 0 });
      expect(res.statusCode).toBe(201);
      expect(res.json().data.chainStatus).toBe('pending');
      const row = () =>
        away.database.db
          .selectFrom('transactions')
          .select(['chain_status', 'recorded_at'])
          .where('tx_hash', '=', txHash)
          .executeTakeFirstOrThrow();
      expect((await row()).chain_status).toBe('pending');

      // A process whose queue works, on the same database: once the row has waited one
      // re-check interval for its own job, the re-check queues it, and its check runs.
      const clock = { now: new Date((await row()).recorded_at.getTime() + 30_000) };
      const back = await createTestRuntime(away.database, { env: { CHAIN_RPC_URL: DEAD_RPC }, clock: () => clock.now });
      try {
        expect(await back.services.chainChecks.recheck()).toEqual({ queued: 0 });
        clock.now = new Date(clock.now.getTime() + MINUTE);
        expect(await back.services.chainChecks.recheck()).toEqual({ queued: 1 });
        await expect
          .poll(async () => (await row()).chain_status, { timeout: 15_000, interval: 250 })
          .toBe('unreachable');
      } finally {
        await back.close();
      }
    } finally {
      await away.close();
    }
  }, 30_000);

  it('looks again at unanswered checks, each after as long again as it had waited, for a day; never at final ones', async () => {
    const agent = await createAgent(t.app);
    await insertTransactions(t, agent, [
      // Pending past one interval: its job was lost. Queued.
      { status: 'pending', amount: '1', recordedAgoMs: 2 * MINUTE },
      // Pending for 10 s: its job may still run. Not queued.
      { status: 'pending', amount: '1', recordedAgoMs: 10_000 },
      // Checked after 9 minutes, 1 minute ago: waits 9 minutes more. Not queued.
      { status: 'unreachable', amount: '1', recordedAgoMs: 10 * MINUTE, checkedAgoMs: MINUTE },
      // Checked after 5 minutes, 15 minutes ago. Queued.
      { status: 'not_found', amount: '1', recordedAgoMs: 20 * MINUTE, checkedAgoMs: 15 * MINUTE },
      // Recorded more than a day ago: no longer looked at.
      { status: 'not_found', amount: '1', recordedAgoMs: 25 * 60 * MINUTE, checkedAgoMs: 2 * 60 * MINUTE },
      // Final states are never checked again.
      { status: 'verified', amount: '1', recordedAgoMs: 2 * MINUTE, checkedAgoMs: 2 * MINUTE },
      { status: 'mismatch', amount: '1', recordedAgoMs: 2 * MINUTE, checkedAgoMs: 2 * MINUTE },
    ]);
    expect(await t.services.chainChecks.recheck()).toEqual({ queued: 2 });
  });

  it('keeps a final state when a repeated delivery comes back with another answer', async () => {
    const agent = await createAgent(t.app);
    await insertTransactions(t, agent, [{ status: 'verified', amount: '1', checkedAgoMs: 0 }]);
    const [row] = await t.database.db.selectFrom('transactions').selectAll().where('agent', '=', agent).execute();
    const again = await t.services.chainChecks.check(agent, row?.tx_hash as string, { lastAttempt: true });
    expect(again).toEqual({ status: 'verified', changed: false });
    const after = await t.database.db.selectFrom('transactions').selectAll().where('agent', '=', agent).execute();
    expect(after).toEqual([row]);
  });
});
