import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createChainReader } from '@vouch/core';
import { sql } from '@vouch/db';
import { createTestApp, newFeedbackLog, randomAddress, type TestContext, testIndexer } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Providers cap eth_getLogs: a range wider than they allow, or one with more results than they
// return, is answered with a JSON-RPC error (Infura's -32005 "query returned more than 10000
// results", Alchemy's "Log response size exceeded", "block range too large"), and the same range
// asked again is refused again. The node here is scripted over HTTP and read through the chain
// reader Vouch uses, so the refusal arrives as a node's JSON-RPC error does.
let t: TestContext;
let server: Server;
let url: string;

const CHAIN_ID = 7_300_001;
const HEAD = 100n;
const FEEDBACK_BLOCK = 40n;
/** The widest range the node answers. */
const MAX_RANGE = 10n;

const node = {
  reputation: '',
  logCalls: [] as Array<{ addresses: string[]; from: bigint; to: bigint; refused: boolean }>,
  client: randomAddress(),
};

const hex = (n: bigint) => `0x${n.toString(16)}`;
const blockHash = (n: bigint) => `0x${n.toString(16).padStart(64, '0')}`;

function answer(method: string, params: unknown[]): { result: unknown } | { error: { code: number; message: string } } {
  switch (method) {
    case 'eth_chainId':
      return { result: hex(BigInt(CHAIN_ID)) };
    case 'eth_blockNumber':
      return { result: hex(HEAD) };
    case 'eth_getBlockByNumber': {
      const n = BigInt(params[0] as string);
      if (n > HEAD) return { result: null };
      return {
        result: {
          number: hex(n),
          hash: blockHash(n),
          parentHash: blockHash(n - 1n),
          timestamp: hex(1_700_000_000n + n),
          transactions: [],
        },
      };
    }
    case 'eth_getLogs': {
      const filter = params[0] as { address: string[]; fromBlock: string; toBlock: string };
      const from = BigInt(filter.fromBlock);
      const to = BigInt(filter.toBlock);
      const addresses = filter.address.map((a) => a.toLowerCase());
      const refused = to - from + 1n > MAX_RANGE;
      node.logCalls.push({ addresses, from, to, refused });
      if (refused) {
        return { error: { code: -32005, message: `query exceeds max block range ${MAX_RANGE}` } };
      }
      if (!addresses.includes(node.reputation) || FEEDBACK_BLOCK < from || FEEDBACK_BLOCK > to) return { result: [] };
      const log = newFeedbackLog(node.reputation, {
        agentId: 5n,
        client: node.client,
        value: 90n,
        uri: '',
        hash: `0x${'0'.repeat(64)}`,
        block: FEEDBACK_BLOCK,
      });
      return {
        result: [
          {
            address: log.address,
            topics: log.topics,
            data: log.data,
            blockNumber: hex(FEEDBACK_BLOCK),
            blockHash: blockHash(FEEDBACK_BLOCK),
            transactionHash: log.transactionHash,
            transactionIndex: '0x0',
            logIndex: '0x0',
            removed: false,
          },
        ],
      };
    }
    default:
      return { error: { code: -32601, message: `${method} is not served` } };
  }
}

beforeAll(async () => {
  t = await createTestApp();
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const call = JSON.parse(body) as { id: number; method: string; params?: unknown[] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...answer(call.method, call.params ?? []) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await t.close();
  await new Promise((resolve) => server.close(resolve));
});

describe('a node that refuses an eth_getLogs range as too wide', () => {
  it('has its ranges narrowed until it answers: the index catches up and misses no feedback', async () => {
    const chain = createChainReader(url, 2000);
    if (!chain) throw new Error('no chain reader');
    // ERC8004_BLOCK_RANGE wider than the node allows (the default 2,000 against a 10-block cap).
    const { service, reputationRegistry } = testIndexer(t, chain, { blockRange: 1000n });
    node.reputation = reputationRegistry;

    const runs: string[] = [];
    for (let run = 0; run < 2; run++) {
      runs.push(
        await service.index().then(
          () => 'ok',
          (error: Error) => `${error.name}: ${error.message}`,
        ),
      );
    }
    const status = (await service.evidence([randomAddress()], false)).values().next().value?.status;
    const { rows } = await sql<{ client: string; value: string }>`
      SELECT client, value::text AS value FROM erc8004_feedback WHERE registry = ${reputationRegistry}`.execute(
      t.database.db,
    );
    expect({ runs, status, feedback: rows }).toEqual({
      runs: ['ok', 'ok'],
      status: 'current',
      feedback: [{ client: node.client, value: '90' }],
    });
    // The registry's blocks up to the confirmed head (100 − 2) were read in answered ranges that
    // follow one another: none left out, none read twice.
    const answered = node.logCalls.filter((c) => c.addresses.includes(reputationRegistry) && !c.refused);
    let expected = 0n;
    for (const { from, to } of answered) {
      expect(from).toBe(expected);
      expected = to + 1n;
    }
    expect(expected).toBe(HEAD - 2n + 1n);
  });
});
