import { type ChainReader, createAuditService, createErc8004Service } from '@vouch/core';
import { type Database, sql } from '@vouch/db';
import { createTestDatabase } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let database: Database;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const IDENTITY = '0x8004a169fb4a3325136eb29fa0ceb6d2e539a432';
const REPUTATION = '0x8004baa17c55a88189ae136b182e5fda19de9b63';

/** A node at block 100 that has no hash for `unknown` (it lags the node that gave the head). */
function laggingNode(unknown: bigint): ChainReader {
  const none = () => Promise.reject(new Error('not used by the indexer'));
  return {
    chainId: async () => 8453,
    blockNumber: async () => 100n,
    blockHash: async (n) => (n === unknown ? null : `0x${n.toString(16).padStart(64, '0')}`),
    logs: async () => [],
    hasCode: none,
    owner: none,
    transaction: none,
    send: none,
  };
}

describe('the ERC-8004 indexer', () => {
  it('applies no range whose last block the node does not know, and keeps the cursor before it', async () => {
    const clock = () => new Date();
    const erc8004 = createErc8004Service({
      db: database.db,
      clock,
      audit: createAuditService({ db: database.db, clock }),
      chain: laggingNode(39n),
      options: {
        identityRegistry: IDENTITY,
        reputationRegistry: REPUTATION,
        startBlock: 0n,
        confirmations: 2n,
        blockRange: 10n,
        intervalMs: 60_000,
        feedbackFetch: 'off',
        fetchTimeoutMs: 1000,
      },
    });
    await expect(erc8004.index()).rejects.toThrow(/does not know block 39, at or below the confirmed head 98/);
    const cursors = await sql<{ registry: string; next_block: string; last_block_hash: string | null }>`
      SELECT registry, next_block::text, last_block_hash FROM erc8004_cursors ORDER BY registry`.execute(database.db);
    // Ranges 0–9, 10–19 and 20–29 were applied; 30–39 was not, and nothing was stored without a hash.
    expect(cursors.rows).toEqual([
      { registry: IDENTITY, next_block: '30', last_block_hash: `0x${(29).toString(16).padStart(64, '0')}` },
    ]);
  });
});
