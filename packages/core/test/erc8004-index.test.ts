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

const hashOf = (n: bigint) => `0x${n.toString(16).padStart(64, '0')}`;

/** A scripted node: its head, the blocks it has no hash for, and what it does when asked for logs. */
function node(v: {
  head: () => bigint;
  unknown?: bigint;
  onLogs?: (addresses: string[]) => Promise<void>;
}): ChainReader {
  const none = () => Promise.reject(new Error('not used by the indexer'));
  return {
    chainId: async () => 8453,
    blockNumber: async () => v.head(),
    blockHash: async (n) => (n === v.unknown ? null : hashOf(n)),
    logs: async (addresses) => {
      await v.onLogs?.(addresses);
      return [];
    },
    hasCode: none,
    owner: none,
    transaction: none,
    send: none,
  };
}

function indexer(chain: ChainReader, registries: { identity: string; reputation: string }) {
  const clock = () => new Date();
  return createErc8004Service({
    db: database.db,
    clock,
    audit: createAuditService({ db: database.db, clock }),
    chain,
    options: {
      identityRegistry: registries.identity,
      reputationRegistry: registries.reputation,
      startBlock: 0n,
      confirmations: 2n,
      blockRange: 10n,
      intervalMs: 60_000,
      feedbackFetch: 'off',
      fetchTimeoutMs: 1000,
    },
  });
}

describe('the ERC-8004 indexer', () => {
  it('applies no range whose last block the node does not know, and keeps the cursor before it', async () => {
    const erc8004 = indexer(node({ head: () => 100n, unknown: 39n }), { identity: IDENTITY, reputation: REPUTATION });
    await expect(erc8004.index()).rejects.toThrow(/does not know block 39, at or below the confirmed head 98/);
    const cursors = await sql<{ registry: string; next_block: string; last_block_hash: string | null }>`
      SELECT registry, next_block::text, last_block_hash FROM erc8004_cursors ORDER BY registry`.execute(database.db);
    // Ranges 0–9, 10–19 and 20–29 were applied; 30–39 was not, and nothing was stored without a hash.
    expect(cursors.rows).toEqual([{ registry: IDENTITY, next_block: '30', last_block_hash: hashOf(29n) }]);
    // Nor is a node that does not know the block the cursor stands on a reorganization: it waits.
    const behind = indexer(node({ head: () => 100n, unknown: 29n }), { identity: IDENTITY, reputation: REPUTATION });
    await expect(behind.index()).rejects.toThrow(/does not know block 29, indexed already: it is behind/);
  });

  it('reads as current in the middle of a run: the new head is published once the run is through', async () => {
    const registries = { identity: `0x${'1'.repeat(40)}`, reputation: `0x${'2'.repeat(40)}` };
    let head = 40n;
    const seen: string[] = [];
    let probe = false;
    const someone = `0x${'3'.repeat(40)}`;
    const erc8004 = indexer(
      node({
        head: () => head,
        onLogs: async (addresses) => {
          if (probe && addresses[0] === registries.reputation) {
            seen.push((await erc8004.evidence([someone], false)).get(someone)?.status ?? 'none');
          }
        },
      }),
      registries,
    );
    // Until a run is through, nothing says how far the index is from the head: not current.
    probe = true;
    await erc8004.index();
    probe = false;
    expect(seen).toContain('not_indexed');
    expect(seen).not.toContain('current');
    expect((await erc8004.evidence([someone], false)).get(someone)?.status).toBe('current');
    // The chain moves on; while the run has brought the identity registry up to the new head and
    // not yet the reputation registry, the index is still current up to the head it had.
    head = 60n;
    probe = true;
    seen.length = 0;
    await erc8004.index();
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen)).toEqual(new Set(['current']));
    expect((await erc8004.evidence([someone], false)).get(someone)).toMatchObject({
      status: 'current',
      headBlock: '60',
      indexedToBlock: '58',
    });
  });
});
