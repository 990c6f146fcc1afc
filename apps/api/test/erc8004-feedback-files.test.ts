import { type ChainReader, createErc8004Service } from '@vouch/core';
import { sql } from '@vouch/db';
import { createTestApp, randomAddress, type TestContext } from '@vouch/testkit';
import { encodeAbiParameters, encodeEventTopics, type Hex, parseAbi } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// One feedback anyone may give on the chain, whose feedbackURI is a data: URI with a
// malformed %-escape, against a scripted node (no anvil).
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const newFeedback = parseAbi([
  'event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
]);

function feedbackLog(registry: string, block: bigint, feedbackURI: string) {
  const topics = encodeEventTopics({
    abi: newFeedback,
    eventName: 'NewFeedback',
    args: { agentId: 7n, clientAddress: randomAddress() as Hex, indexedTag1: 'starred' },
  }) as Hex[];
  const data = encodeAbiParameters(
    [
      { type: 'uint64' },
      { type: 'int128' },
      { type: 'uint8' },
      { type: 'string' },
      { type: 'string' },
      { type: 'string' },
      { type: 'string' },
      { type: 'bytes32' },
    ],
    [1n, 90n, 0, 'starred', '', '', feedbackURI, `0x${'0'.repeat(64)}`],
  );
  return { address: registry, topics, data, blockNumber: block, transactionHash: `0x${'1'.repeat(64)}`, logIndex: 0 };
}

describe('an ERC-8004 feedback file given as a malformed data: URI', () => {
  it('is marked invalid; it does not fail every indexer run from then on', async () => {
    const identityRegistry = randomAddress();
    const reputationRegistry = randomAddress();
    const chain = {
      chainId: async () => 7_000_002,
      blockNumber: async () => 100n,
      blockHash: async (n: bigint) => `0x${n.toString(16).padStart(64, '0')}`,
      logs: async (addresses: string[], from: bigint, to: bigint) =>
        addresses[0] === reputationRegistry && from <= 40n && 40n <= to
          ? [feedbackLog(reputationRegistry, 40n, 'data:application/json,%7B%22a%22%3A1%')]
          : [],
    } as unknown as ChainReader;
    const service = createErc8004Service({
      db: t.database.db,
      clock: () => t.clock.now,
      audit: t.services.audit,
      chain,
      options: {
        identityRegistry,
        reputationRegistry,
        startBlock: 0n,
        confirmations: 2n,
        blockRange: 1000n,
        intervalMs: 3_600_000,
        feedbackFetch: 'public',
        fetchTimeoutMs: 1000,
      },
    });
    const status = async () => (await service.evidence([randomAddress()], false)).values().next().value?.status;

    const runs: string[] = [];
    for (let run = 0; run < 3; run++) {
      runs.push(
        await service.index().then(
          () => 'ok',
          (error: Error) => `${error.name}: ${error.message}`,
        ),
      );
    }
    const { rows } = await sql<{ file_status: string }>`
      SELECT file_status FROM erc8004_feedback WHERE registry = ${reputationRegistry}`.execute(t.database.db);
    expect({ runs, status: await status(), files: rows.map((r) => r.file_status) }).toEqual({
      runs: ['ok', 'ok', 'ok'],
      status: 'current',
      files: ['invalid'],
    });
  });
});
