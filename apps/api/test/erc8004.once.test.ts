import { createServer, type Server } from 'node:http';
import { erc8004Options } from '@vouch/config';
import { createChainReader, createErc8004Service } from '@vouch/core';
import { sql } from '@vouch/db';
import { erc8004FeedbackResult, scoreBreakdown, successEnvelope } from '@vouch/schemas';
import {
  createAgent,
  createTestApp,
  deployRegistries,
  get,
  type LocalChain,
  post,
  type Registries,
  startLocalChain,
  type TestContext,
} from '@vouch/testkit';
import { type Address, type Hex, keccak256, toBytes, verifyMessage } from 'viem';
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// The ERC-8004 indexer, the score's feedback evidence and the feedback export against a real
// node (anvil) with Identity and Reputation registries compiled by solc in this test.
let chain: LocalChain;
let registries: Registries;
let t: TestContext;
let files: Server;
let filesUrl: string;
const served = new Map<string, string>();
let signer: Address;
const CONFIRMATIONS = 2;

beforeAll(async () => {
  chain = await startLocalChain({ accounts: 7 });
  registries = await deployRegistries(chain);
  const key = await chain.fundedKey();
  signer = privateKeyToAccount(key).address.toLowerCase() as Address;
  files = createServer((req, res) => {
    const body = served.get(req.url ?? '');
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(body ?? '');
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
  t = await createTestApp({
    chainRpcUrl: chain.url,
    refreshDelayMs: 50,
    env: {
      ERC8004_IDENTITY_REGISTRY: registries.identity,
      ERC8004_REPUTATION_REGISTRY: registries.reputation,
      ERC8004_CONFIRMATIONS: String(CONFIRMATIONS),
      ERC8004_BLOCK_RANGE: '3',
      ERC8004_INTERVAL_MS: '3600000',
      // The test serves feedback files on loopback.
      ERC8004_FEEDBACK_FETCH: 'any',
      ERC8004_SIGNER_KEY: key,
    },
  });
}, 120_000);

afterAll(async () => {
  await t?.close();
  await chain?.close();
  await new Promise((resolve) => files?.close(resolve));
});

/** The node's accounts come from its well-known test mnemonic: their keys sign (EIP-712) in the test. */
const devAccount = (i: number) =>
  mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: i });
const account = (i: number) => (chain.accounts[i] as string).toLowerCase() as Address;
/** Mines past the confirmation depth and runs the indexer once. */
async function indexConfirmed() {
  await chain.mine(CONFIRMATIONS);
  return t.services.erc8004.index();
}
const breakdownOf = async (address: string) =>
  successEnvelope(scoreBreakdown).parse((await get(t.app, `/api/scores/${address}`)).json()).data;
/** Scores the agent now (no indexer run under way), so that what it stores is what the breakdown says. */
async function rescore(address: string) {
  const res = await post(t.app, '/api/scores/recompute', { agents: [address] });
  expect(res.statusCode, res.body).toBe(200);
}
/** The score stored for the agent: what decisions and `GET /api/agents` read. */
const storedScore = async (address: string) => (await get(t.app, `/api/agents/${address}`)).json().data.score as number;
const feedbackRows = async () =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM erc8004_feedback`.execute(t.database.db)).rows[0]?.n;

describe('the ERC-8004 indexer', () => {
  let walletAgentId: bigint;
  const wallet = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690e');

  it('resolves an agent to its identity by its verified wallet, or the one identity it owns', async () => {
    const owned = await registries.register(account(1), 'https://agents.example/1.json');
    await registries.setAgentURI(account(1), owned, 'https://agents.example/1-v2.json');
    walletAgentId = await registries.register(account(2), 'https://agents.example/2.json');
    await registries.setAgentWallet(account(2), walletAgentId, wallet);
    await indexConfirmed();

    await createAgent(t.app, { address: account(1) });
    const agent = (await get(t.app, `/api/agents/${account(1)}`)).json().data;
    expect(agent.erc8004).toEqual({
      chainId: 1337,
      agentId: owned.toString(),
      agentURI: 'https://agents.example/1-v2.json',
      owner: account(1),
      agentWallet: account(1),
    });
    // The wallet the owner pointed at with its signature stands for the identity (ids are not wallets).
    await createAgent(t.app, { address: wallet.address.toLowerCase() });
    const byWallet = (await get(t.app, `/api/agents/${wallet.address.toLowerCase()}`)).json().data;
    expect(byWallet.erc8004).toMatchObject({ agentId: walletAgentId.toString(), owner: account(2) });
  });

  it('indexes nothing within the confirmation depth, so a reorganization there changes nothing', async () => {
    const before = await feedbackRows();
    const snapshot = await chain.snapshot();
    await registries.giveFeedback(account(3), 0n, { value: 5n, tag1: 'starred' });
    await t.services.erc8004.index(); // the feedback's block is not confirmed yet
    expect(await feedbackRows()).toBe(before);
    await chain.revert(snapshot); // the block is dropped: the feedback never happened
    await indexConfirmed();
    await indexConfirmed();
    expect(await feedbackRows()).toBe(before);
    expect((await breakdownOf(account(1))).erc8004.status).toBe('current');
  });

  it('weighs feedback by the client’s standing: self-related and revoked count nothing, payment-backed more', async () => {
    // A client Vouch knows with a standing of 800, an unknown one, the identity's own wallet.
    await createAgent(t.app, { address: account(3) });
    await post(t.app, `/api/agents/${account(3)}/score`, { score: 800, reason: '0x' });
    await registries.giveFeedback(account(3), 0n, { value: 95n, tag1: 'starred' });
    await registries.giveFeedback(account(4), 0n, { value: 100n, tag1: 'starred' });
    await registries.revokeFeedback(account(4), 0n, 1n);
    await registries.giveFeedback(account(4), 0n, { value: 90n, tag1: 'starred' });
    await registries.giveFeedback(account(6), 0n, { value: 12n, tag1: 'uptime' });
    await registries.appendResponse(account(1), 0n, account(3), 1n, 'https://agents.example/thanks');

    // A client that paid the agent, with the payment recorded in Vouch and verified on the chain.
    const paid = await chain.sendValue(account(5), account(1), 10n ** 18n);
    await post(t.app, '/api/transactions/record', {
      agent: account(5),
      txHash: paid,
      amount: (10n ** 18n).toString(),
      type: 0,
      counterparty: account(1),
    });
    await expect
      .poll(async () => (await get(t.app, `/api/scores/${account(5)}`)).json().data.counted.transactions, {
        timeout: 10_000,
      })
      .toBe(1);
    const file = JSON.stringify({
      agentRegistry: `eip155:1337:${registries.identity}`,
      agentId: 0,
      clientAddress: `eip155:1337:${account(5)}`,
      value: 100,
      valueDecimals: 0,
      tag1: 'starred',
      proofOfPayment: { fromAddress: account(5), toAddress: account(1), chainId: '1337', txHash: paid },
    });
    served.set('/feedback/paid.json', file);
    await registries.giveFeedback(account(5), 0n, {
      value: 100n,
      tag1: 'starred',
      feedbackURI: `${filesUrl}/feedback/paid.json`,
      feedbackHash: keccak256(toBytes(file)),
    });
    await indexConfirmed();
    await indexConfirmed();

    const b = await breakdownOf(account(1));
    expect(b.erc8004).toMatchObject({
      status: 'current',
      identity: { agentId: '0' },
      feedback: { total: 5, counted: 3, revoked: 1, notARating: 1, paymentBacked: 1 },
      applied: true,
    });
    const entry = (client: string) => b.erc8004.entries.filter((e) => e.client === client);
    expect(entry(account(3))[0]).toMatchObject({ verdict: 'counted', weight: 0.8, clientScore: 800, responses: 1 });
    expect(
      entry(account(4))
        .map((e) => e.verdict)
        .sort(),
    ).toEqual(['counted', 'revoked']);
    expect(entry(account(5))[0]).toMatchObject({ verdict: 'counted', paymentBacked: true, proofOfPayment: true });
    expect(b.erc8004.adjustment).toBeGreaterThan(0);
    expect(b.score).toBe(Math.min(1000, b.modelScore + b.erc8004.adjustment));
    // compute is stateless and unchanged: the five inputs only.
    const compute = await post(t.app, '/api/scores/compute', {
      successRate: 0.98,
      totalVolume: '100000000000000000000',
      transactionCount: 500,
      budgetCompliance: 1,
      accountAge: 365,
    });
    expect(compute.json().data.score).toBe(894);
  });

  it('counts one client once: its latest rating, the earlier ones superseded', async () => {
    const before = (await breakdownOf(account(1))).erc8004;
    // The client Vouch knows (standing 800) reviews the agent twice more, lower each time.
    await registries.giveFeedback(account(3), 0n, { value: 10n, tag1: 'starred' });
    await registries.giveFeedback(account(3), 0n, { value: 20n, tag1: 'starred' });
    await indexConfirmed();
    await indexConfirmed();
    const after = (await breakdownOf(account(1))).erc8004;
    expect(after.feedback.counted).toBe(before.feedback.counted);
    expect(after.feedback.superseded).toBe(before.feedback.superseded + 2);
    expect(after.entries.filter((e) => e.client === account(3)).map((e) => [e.value, e.verdict, e.weight])).toEqual([
      ['20', 'counted', 0.8],
      ['10', 'superseded', 0],
      ['95', 'superseded', 0],
    ]);
    // Its voice weighs as before, and its latest rating (20, not 95) pulls the mean down.
    expect(after.weight).toBe(before.weight);
    expect(after.rating).toBeLessThan(before.rating as number);
  });

  it('counts feedback from the wallet of another identity of the same owner as self-related', async () => {
    // The registry refuses the owner's own review, not one from the wallet of the owner's other agent.
    const sibling = await registries.register(account(2), 'https://agents.example/2b.json');
    await registries.setAgentWallet(account(2), sibling, devAccount(6));
    const review = await registries.giveFeedback(account(6), walletAgentId, { value: 100n, tag1: 'starred' });
    expect(review.status).toBe('success');
    expect((await registries.giveFeedback(account(2), walletAgentId, { value: 100n })).status).toBe('reverted');
    await indexConfirmed();
    const b = await breakdownOf(wallet.address.toLowerCase());
    expect(b.erc8004.identity?.agentId).toBe(walletAgentId.toString());
    expect(b.erc8004.feedback).toMatchObject({ total: 1, selfRelated: 1, counted: 0 });
    expect(b.erc8004.adjustment).toBe(0);
  });

  it('indexes strings with NUL characters, which anyone may write on the chain, without them', async () => {
    // The identity's own wallet (account 6): self-related, so it counts nothing either way.
    const given = await registries.giveFeedback(account(6), 0n, {
      value: 1n,
      tag1: 'a\u0000b',
      tag2: '\u0000',
      endpoint: 'https://x.example/\u0000',
    });
    expect(given.status).toBe('success');
    await indexConfirmed();
    const { rows } = await sql<{ tag1: string; tag2: string; endpoint: string }>`
      SELECT tag1, tag2, endpoint FROM erc8004_feedback WHERE tx_hash = ${given.hash}`.execute(t.database.db);
    expect(rows).toEqual([{ tag1: 'ab', tag2: '', endpoint: 'https://x.example/' }]);
    expect((await breakdownOf(account(1))).erc8004.status).toBe('current');
  });

  it('a repeated or concurrent run, or a range read again, changes nothing', async () => {
    const snapshotOf = async () =>
      (
        await sql<{ t: string }>`SELECT string_agg(x::text, '|' ORDER BY x::text) AS t FROM (
          SELECT agent_id, client, feedback_index, revoked, file_status FROM erc8004_feedback
          UNION ALL SELECT agent_id, owner, 0, agent_wallet IS NULL, agent_uri FROM erc8004_identities) x`.execute(
          t.database.db,
        )
      ).rows[0]?.t;
    const before = await snapshotOf();
    await Promise.all([t.services.erc8004.index(), t.services.erc8004.index()]);
    // Every cursor back to the start: every range is read and applied again.
    await sql`UPDATE erc8004_cursors SET next_block = 0, last_block_hash = NULL`.execute(t.database.db);
    await t.services.erc8004.index();
    await t.services.erc8004.index();
    expect(await snapshotOf()).toBe(before);
  });

  it('sends Vouch’s own feedback with a signed file whose hash is on the chain, and indexes it back', async () => {
    const res = await post(t.app, `/api/agents/${account(1)}/erc8004/feedback`, {});
    expect(res.statusCode, res.body).toBe(200);
    const fb = successEnvelope(erc8004FeedbackResult).parse(res.json()).data;
    expect(fb).toMatchObject({ sent: true, tag1: 'vouch-score', tag2: '2', valueDecimals: 1, clientAddress: signer });
    expect(fb.feedbackHash).toBe(keccak256(toBytes(fb.file)));
    expect(Buffer.from(fb.feedbackURI.split(',')[1] as string, 'base64').toString()).toBe(fb.file);
    const { signature, ...unsigned } = JSON.parse(fb.file);
    expect(
      await verifyMessage({ address: signer, message: JSON.stringify(unsigned), signature: signature.value as Hex }),
    ).toBe(true);
    await chain.client.waitForTransactionReceipt({ hash: fb.txHash as Hex });
    await indexConfirmed();
    const b = await breakdownOf(account(1));
    const ours = b.erc8004.entries.find((e) => e.client === signer);
    expect(ours).toMatchObject({ tag1: 'vouch-score', value: String(fb.value), valueDecimals: 1 });
    // And the write is in the organization's audit log.
    const audit = await sql<{ action: string }>`SELECT action FROM audit_log WHERE target = ${account(1)}
      ORDER BY seq DESC LIMIT 1`.execute(t.database.db);
    expect(audit.rows[0]?.action).toBe('score.erc8004_feedback');
  });

  it('sends no feedback while the index is not current: the identity may have changed hands', async () => {
    const exports = async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM erc8004_exports`.execute(t.database.db)).rows[0]?.n;
    const before = await exports();
    await sql`UPDATE erc8004_cursors SET last_error = 'a run failed', last_error_at = now() + interval '1 second'`.execute(
      t.database.db,
    );
    // Under an Idempotency-Key: a 503 is not the key's answer, and the retry runs again.
    const key = { 'idempotency-key': `feedback-${Date.now()}` };
    try {
      const res = await post(t.app, `/api/agents/${account(1)}/erc8004/feedback`, {}, key);
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().error.message).toMatch(/the ERC-8004 index is unavailable .*feedback is not sent/);
      expect(await exports()).toBe(before);
    } finally {
      await indexConfirmed();
    }
    const retried = await post(t.app, `/api/agents/${account(1)}/erc8004/feedback`, {}, key);
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.headers['idempotency-replayed']).toBeUndefined();
  });

  it('takes an identity’s adjustment from the agent it is transferred away from', async () => {
    await rescore(account(1));
    const before = await breakdownOf(account(1));
    expect(before.erc8004.adjustment).toBeGreaterThan(0);
    expect(await storedScore(account(1))).toBe(before.score);
    // The transfer clears the identity's wallet too: account 1 stands for no identity any more.
    await registries.transfer(account(1), account(5), 0n);
    await indexConfirmed();
    const after = await breakdownOf(account(1));
    expect(after.erc8004.identity).toBeNull();
    await expect.poll(() => storedScore(account(1)), { timeout: 10_000 }).toBe(after.modelScore);
    // Its new owner did not ask for it (a transfer needs no consent of its recipient): it stands
    // for it only once it sets the identity's wallet to itself, with its own signature.
    expect((await breakdownOf(account(5))).erc8004.identity).toBeNull();
    await registries.setAgentWallet(account(5), 0n, devAccount(5));
    await indexConfirmed();
    const gained = await breakdownOf(account(5));
    expect(gained.erc8004.identity?.agentId).toBe('0');
    await expect.poll(() => storedScore(account(5)), { timeout: 10_000 }).toBe(gained.score);
  });

  it('a run that ends behind a head that moved on stops a positive adjustment; a current run gives it back', async () => {
    // The client of standing 800 now rates the identity (account 5's since the transfer) 100.
    await registries.giveFeedback(account(3), 0n, { value: 100n, tag1: 'starred' });
    await indexConfirmed();
    await rescore(account(5));
    const holder = await breakdownOf(account(5));
    expect(holder.erc8004.adjustment).toBeGreaterThan(0);
    expect(await storedScore(account(5))).toBe(holder.score);
    // The head moves on, and a run out of time before its first range publishes it unreached.
    await chain.mine(CONFIRMATIONS + 5);
    const asked: string[] = [];
    const hurried = createErc8004Service({
      db: t.database.db,
      clock: () => t.clock.now,
      audit: t.services.audit,
      chain: createChainReader(chain.url, 3000),
      options: { ...erc8004Options(t.runtime.config), fetchTimeoutMs: 3000, runBudgetMs: -1 },
      onAgentsChanged: (agents) => asked.push(...agents),
    });
    expect(await hurried.index()).toMatchObject({ ranges: 0, caughtUp: false });
    const behind = await breakdownOf(account(5));
    expect(behind.erc8004).toMatchObject({ status: 'behind', applied: false });
    // The agents standing for rated identities are scored again: without the adjustment.
    expect(asked).toContain(account(5));
    await rescore(account(5));
    expect(await storedScore(account(5))).toBe(holder.modelScore);
    // A run that brings the index up to the head again has them scored with it.
    const refreshed = vi.spyOn(t.services.scoring, 'refresh');
    await t.services.erc8004.index();
    expect(refreshed.mock.calls.map(([agent]) => agent)).toContain(account(5));
    refreshed.mockRestore();
    await expect.poll(() => storedScore(account(5)), { timeout: 10_000 }).toBe(holder.score);
  });

  it('an identity sent to an agent does not stand for it: a badly rated one cannot lower its score', async () => {
    const victim = `0x${'a1'.repeat(20)}` as Address;
    await createAgent(t.app, { address: victim });
    await rescore(victim);
    const before = await breakdownOf(victim);
    // Someone registers an identity, has it rated low by a client of standing, and sends it away.
    await createAgent(t.app, { address: account(4) });
    const unwanted = await registries.register(account(4), 'https://agents.example/unwanted.json');
    await registries.giveFeedback(account(3), unwanted, { value: 0n, tag1: 'starred' });
    await indexConfirmed();
    const rated = await breakdownOf(account(4));
    expect(rated.erc8004.identity?.agentId).toBe(unwanted.toString());
    expect(rated.erc8004.adjustment).toBeLessThan(0);
    await registries.transfer(account(4), victim, unwanted);
    await indexConfirmed();
    const after = await breakdownOf(victim);
    expect(after.erc8004.identity).toBeNull();
    expect(after.erc8004.adjustment).toBe(0);
    expect(after.score).toBe(before.score);
    expect(await storedScore(victim)).toBe(before.score);
    expect((await get(t.app, `/api/agents/${victim}`)).json().data.erc8004).toBeNull();
  });

  it('a node that is down fails the run, keeps the cursors, and stops a positive adjustment', async () => {
    const cursors = async () =>
      (
        await sql<{
          n: string;
        }>`SELECT string_agg(next_block::text, ',' ORDER BY registry) AS n FROM erc8004_cursors`.execute(t.database.db)
      ).rows[0]?.n;
    await rescore(account(5));
    const before = await cursors();
    const holder = await breakdownOf(account(5));
    expect(holder.erc8004.adjustment).toBeGreaterThan(0);
    expect(await storedScore(account(5))).toBe(holder.score);
    // No run for more than five intervals: the index reads unavailable, yet the stored score still
    // holds what the last run left it with.
    await sql`UPDATE erc8004_cursors SET last_ok_at = last_ok_at - interval '6 hours'`.execute(t.database.db);
    expect((await breakdownOf(account(5))).erc8004.status).toBe('unavailable');
    expect(await storedScore(account(5))).toBe(holder.score);
    const refreshed = vi.spyOn(t.services.scoring, 'refresh');
    await chain.close();
    await expect(t.services.erc8004.index()).rejects.toThrow(/chain read failed/);
    expect(await cursors()).toBe(before);
    // The stored score, which decisions read, loses the positive adjustment too: the run that
    // failed asked for the agents that stand for rated identities to be scored again.
    expect(refreshed.mock.calls.map(([agent]) => agent)).toContain(account(5));
    refreshed.mockRestore();
    await expect.poll(() => storedScore(account(5)), { timeout: 10_000 }).toBe(holder.modelScore);
    const b = await breakdownOf(account(1));
    expect(b.erc8004.status).toBe('unavailable');
    expect(b.erc8004.applied).toBe(false);
    expect(b.score).toBe(b.modelScore);
    // Sending feedback needs the node: a fast 503, nothing stored.
    const res = await post(t.app, `/api/agents/${wallet.address.toLowerCase()}/erc8004/feedback`, {});
    expect(res.statusCode, res.body).toBe(503);
  });
});
