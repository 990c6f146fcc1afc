import { createServer, type Server } from 'node:http';
import { sql } from '@vouch/db';
import { createAgent, createTestApp, post, type TestContext } from '@vouch/testkit';
import { type Hex, keccak256, parseTransaction } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Vouch's own feedback, sent with ERC8004_SIGNER_KEY through a node that takes the transaction
// but answers eth_sendRawTransaction only after CHAIN_TIMEOUT_MS (a slow or overloaded node, a
// load balancer that drops the answer). Vouch answers 503 — "nothing was done, and a retry under
// the same key runs again" (docs/api.md "Idempotency") — but the node has the transaction: the
// retry under the same Idempotency-Key signs and sends another giveFeedback with the next nonce,
// and the agent gets Vouch's feedback twice for one request.
const IDENTITY = '0x8004a169fb4a3325136eb29fa0ceb6d2e539a432';
const REPUTATION = '0x8004baa17c55a88189ae136b182e5fda19de9b63';
const CHAIN_ID = 31337;
const TIMEOUT_MS = 400;

let t: TestContext;
let node: Server;
const received: Hex[] = [];
let nonce = 0;

beforeAll(async () => {
  node = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const { id, method, params } = JSON.parse(body) as { id: number; method: string; params: unknown[] };
      const answer = (result: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }));
      switch (method) {
        case 'eth_chainId':
          return answer(`0x${CHAIN_ID.toString(16)}`);
        case 'eth_call':
          return answer('0x');
        case 'eth_getTransactionCount':
          return answer(`0x${nonce.toString(16)}`);
        case 'eth_estimateGas':
          return answer('0x30000');
        case 'eth_maxPriorityFeePerGas':
          return answer('0x3b9aca00');
        case 'eth_gasPrice':
          return answer('0x3b9aca00');
        case 'eth_blockNumber':
          return answer('0x64');
        case 'eth_getBlockByNumber':
          return answer({
            number: '0x64',
            hash: `0x${'ab'.repeat(32)}`,
            parentHash: `0x${'cd'.repeat(32)}`,
            timestamp: '0x6553f100',
            baseFeePerGas: '0x3b9aca00',
            gasLimit: '0x1c9c380',
            gasUsed: '0x0',
            transactions: [],
            miner: `0x${'00'.repeat(20)}`,
            difficulty: '0x0',
            extraData: '0x',
            logsBloom: `0x${'00'.repeat(256)}`,
            nonce: '0x0000000000000000',
            size: '0x200',
            stateRoot: `0x${'00'.repeat(32)}`,
            receiptsRoot: `0x${'00'.repeat(32)}`,
            transactionsRoot: `0x${'00'.repeat(32)}`,
            sha3Uncles: `0x${'00'.repeat(32)}`,
            uncles: [],
            totalDifficulty: '0x0',
            mixHash: `0x${'00'.repeat(32)}`,
          });
        case 'eth_sendRawTransaction': {
          // The node takes it (its pending nonce moves on) and answers late the first time.
          const raw = params[0] as Hex;
          received.push(raw);
          nonce++;
          const late = received.length === 1;
          setTimeout(() => answer(keccak256(raw)), late ? TIMEOUT_MS * 4 : 0);
          return;
        }
        default:
          return answer(null);
      }
    });
  });
  await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
  t = await createTestApp({
    chainRpcUrl: `http://127.0.0.1:${(node.address() as { port: number }).port}`,
    // The index is the state the test writes: no scheduled run (the first comes at start) touches it.
    processors: (real) => ({
      ...real,
      'maintenance.erc8004-index': async () => ({ chainId: null, ranges: 0, events: 0, files: 0, caughtUp: true }),
    }),
    env: {
      CHAIN_TIMEOUT_MS: String(TIMEOUT_MS),
      ERC8004_SIGNER_KEY: `0x${'11'.repeat(32)}`,
      ERC8004_INTERVAL_MS: '3600000',
    },
  });
});
afterAll(async () => {
  await t?.close();
  node?.closeAllConnections();
  await new Promise((resolve) => node?.close(resolve));
});

describe('Vouch’s feedback sent through a node that answers late', () => {
  it('a retry under the same Idempotency-Key does not give the feedback a second time', async () => {
    const agent = await createAgent(t.app);
    // The index as a current run leaves it, with the agent's identity (minted to it).
    const now = t.clock.now;
    for (const [registry, kind] of [
      [IDENTITY, 'identity'],
      [REPUTATION, 'reputation'],
    ] as const) {
      await sql`INSERT INTO erc8004_cursors (chain_id, registry, kind, next_block, last_block_hash, head_block, last_ok_at, updated_at)
        VALUES (${CHAIN_ID}, ${registry}, ${kind}, 100, ${`0x${'ab'.repeat(32)}`}, 100, ${now}, ${now})`.execute(
        t.database.db,
      );
    }
    await sql`INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, minted_to, agent_uri, agent_wallet, updated_block)
      VALUES (${CHAIN_ID}, ${IDENTITY}, 5, ${agent}, ${agent}, '', ${agent}, 1)`.execute(t.database.db);

    const key = { 'idempotency-key': `fb-${agent}` };
    const first = await post(t.app, `/api/agents/${agent}/erc8004/feedback`, {}, key);
    // The caller retries what it was told failed, under the same key.
    const retried =
      first.statusCode === 503 ? await post(t.app, `/api/agents/${agent}/erc8004/feedback`, {}, key) : first;
    expect(retried.statusCode, retried.body).toBe(200);
    // Let the late answer come back.
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 5));

    // Each distinct nonce is one giveFeedback the chain will mine.
    const nonces = received.map((raw) => parseTransaction(raw).nonce);
    expect({ first: first.statusCode, feedbackSent: new Set(nonces).size }).toEqual({
      first: first.statusCode,
      feedbackSent: 1,
    });
  });
});
