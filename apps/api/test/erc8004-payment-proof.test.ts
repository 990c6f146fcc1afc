import { createServer, type Server } from 'node:http';
import { sql } from '@vouch/db';
import {
  createAgent,
  createTestApp,
  LOGS_CHAIN_BLOCK,
  logsChain,
  newFeedbackLog,
  post,
  randomAddress,
  randomTxHash,
  type TestContext,
  testIndexer,
} from '@vouch/testkit';
import { type Hex, keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/checks.md "ERC-8004 feedback": feedback is payment-backed (× 3) only when "its file's
// `proofOfPayment` names a transaction recorded in Vouch ... and the file's keccak256 is its
// `feedbackHash`"; docs/erc8004.md: "a file whose keccak256 is not its `feedbackHash` is
// `hash_mismatch` and its proof is not used". A file at a mutable http(s) URL whose feedbackHash
// is 0x00…0 commits to nothing: its keccak256 is not its feedbackHash.
let t: TestContext;
let files: Server;
let filesUrl: string;
const served = new Map<string, string>();
const ZERO_HASH = `0x${'0'.repeat(64)}` as Hex;

beforeAll(async () => {
  t = await createTestApp();
  files = createServer((req, res) => {
    const body = served.get(req.url ?? '');
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(body ?? '');
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  filesUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}`;
});
afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => files?.close(resolve));
});

function indexerOn(chainId: number) {
  const identityRegistry = randomAddress();
  const reputationRegistry = randomAddress();
  const state = { logs: [] as Record<string, unknown>[] };
  const chain = logsChain(
    chainId,
    () => reputationRegistry,
    () => state.logs,
  );
  const { service } = testIndexer(t, chain, {
    identityRegistry,
    reputationRegistry,
    feedbackFetch: 'any',
    fetchTimeoutMs: 2000,
  });
  /** An agent with its identity (minted to it), and a client Vouch knows with a recorded transaction to it. */
  const scenario = async (agentId: number, recorded: { success?: boolean } = {}) => {
    const agent = await createAgent(t.app);
    const client = await createAgent(t.app);
    await sql`INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, minted_to, agent_uri, agent_wallet, updated_block)
      VALUES (${chainId}, ${identityRegistry}, ${agentId}, ${agent}, ${agent}, '', ${agent}, 1)`.execute(t.database.db);
    const txHash = randomTxHash();
    const rec = await post(t.app, '/api/transactions/record', {
      agent: client,
      txHash,
      amount: '1000',
      type: 0,
      counterparty: agent,
      ...recorded,
    });
    expect(rec.statusCode, rec.body).toBe(201);
    const file = JSON.stringify({
      agentRegistry: `eip155:${chainId}:${identityRegistry}`,
      agentId,
      clientAddress: `eip155:${chainId}:${client}`,
      value: 100,
      valueDecimals: 0,
      tag1: 'starred',
      proofOfPayment: { fromAddress: client, toAddress: agent, chainId: String(chainId), txHash },
    });
    served.set(`/feedback/${chainId}/${agentId}.json`, file);
    return { agentId, agent, client, file, uri: `${filesUrl}/feedback/${chainId}/${agentId}.json` };
  };
  const give = (s: { agentId: number; client: string; uri: string }, hash: Hex, logIndex: number) =>
    newFeedbackLog(reputationRegistry, {
      agentId: BigInt(s.agentId),
      client: s.client,
      value: 100n,
      uri: s.uri,
      hash,
      block: LOGS_CHAIN_BLOCK,
      logIndex,
    });
  return { service, state, scenario, give, reputationRegistry };
}

describe('what backs a payment in ERC-8004 feedback', () => {
  it('a file whose feedbackHash is zero does not: nothing commits to the file at feedbackURI', async () => {
    const { service, state, scenario, give, reputationRegistry } = indexerOn(7_100_001);
    const committed = await scenario(11);
    const uncommitted = await scenario(12);
    state.logs = [give(committed, keccak256(toBytes(committed.file)), 0), give(uncommitted, ZERO_HASH, 1)];

    await service.index();
    const evidence = await service.evidence([committed.agent, uncommitted.agent], false);
    const entryOf = (agent: string) => evidence.get(agent)?.entries[0];

    // The file its feedbackHash commits to backs the payment (as documented).
    expect(entryOf(committed.agent)).toMatchObject({ verdict: 'counted', paymentBacked: true });
    // A file nothing commits to (feedbackHash 0x00…0, at a URL whose content its host may change
    // at any time) must not: its keccak256 is not its feedbackHash.
    const { rows } = await sql<{ file_status: string }>`SELECT file_status FROM erc8004_feedback
      WHERE registry = ${reputationRegistry} AND agent_id = 12`.execute(t.database.db);
    expect({
      fileStatus: rows[0]?.file_status,
      paymentBacked: entryOf(uncommitted.agent)?.paymentBacked,
    }).toEqual({ fileStatus: 'hash_mismatch', paymentBacked: false });
  });

  it('a transaction recorded as failed does not: it moved no money', async () => {
    const { service, state, scenario, give } = indexerOn(7_100_002);
    const failed = await scenario(21, { success: false });
    state.logs = [give(failed, keccak256(toBytes(failed.file)), 0)];

    await service.index();
    const entry = (await service.evidence([failed.agent], false)).get(failed.agent)?.entries[0];
    expect(entry).toMatchObject({ verdict: 'counted', proofOfPayment: true });
    expect(entry?.paymentBacked).toBe(false);
  });
});
