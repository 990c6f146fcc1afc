import type { ChainReader } from '@vouch/core';
import { sql } from '@vouch/db';
import {
  createTestApp,
  LOGS_CHAIN_BLOCK,
  logsChain,
  newFeedbackLog,
  randomAddress,
  type TestContext,
  testIndexer,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The ERC-8004 indexer against a scripted node (no anvil), so that a reorganization, a node's head,
// the moment of an operator's rebuild and a feedback anyone may give are exactly what the test says.
let t: TestContext;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** A node whose head, block hashes and logs the test sets. */
function scriptedChain() {
  const state = {
    head: 100n,
    /** Blocks from this height on have the `fork` hashes: a reorganization. */
    forkFrom: null as bigint | null,
    fork: 'b',
    logCalls: [] as Array<[bigint, bigint]>,
    onLogs: null as null | (() => Promise<void>),
  };
  const hashOf = (n: bigint) => {
    const side = state.forkFrom !== null && n >= state.forkFrom ? state.fork : 'a';
    return `0x${side.repeat(2)}${n.toString(16).padStart(62, '0')}`;
  };
  const reader: ChainReader = {
    hasCode: async () => ({ ok: true, value: false }),
    owner: async () => ({ ok: false, reason: 'n/a', unreachable: true }),
    transaction: async () => ({ ok: true, value: null }),
    chainId: async () => 7_000_001,
    blockNumber: async () => state.head,
    blockHash: async (n) => (n <= state.head ? hashOf(n) : null),
    logs: async (_addresses, from, to) => {
      state.logCalls.push([from, to]);
      await state.onLogs?.();
      return [];
    },
    send: async () => {
      throw new Error('not used');
    },
  } as ChainReader;
  return { state, reader };
}

function indexer(
  chain: ChainReader,
  overrides: { startBlock?: bigint; blockRange?: bigint; confirmations?: bigint; feedbackFetch?: 'off' | 'public' },
) {
  const { service, identityRegistry, reputationRegistry } = testIndexer(t, chain, overrides);
  const status = async () => (await service.evidence([randomAddress()], false)).values().next().value?.status;
  return { service, status, identityRegistry, reputationRegistry };
}

describe('the ERC-8004 cursor and reorganizations', () => {
  it('a reorganization deeper than the confirmations, once detected, stays reported until the index is rebuilt', async () => {
    const { state, reader } = scriptedChain();
    const { service, status } = indexer(reader, {});
    // Head 100, 2 confirmations: blocks 0..98 indexed, the cursor keeps block 98's hash.
    await service.index();
    expect(await status()).toBe('current');

    // A reorganization from block 50 (far deeper than 2 confirmations); the node's head moves to 101.
    state.forkFrom = 50n;
    state.head = 101n;
    await expect(service.index()).rejects.toThrow(/reorganization deeper than ERC8004_CONFIRMATIONS/);
    expect(await status()).toBe('unavailable');

    // The next run is answered by a node one block behind (a load balancer's other node; or the
    // operator raised ERC8004_CONFIRMATIONS): nothing left to index below its confirmed head.
    // docs/erc8004.md: "the run fails with that message and the index stays as it was, reported
    // `unavailable` (below) until an operator rebuilds it".
    state.head = 100n;
    await service.index().catch(() => undefined);
    expect(await status()).toBe('unavailable');
  });

  it('finds a reorganization on a run whose head gives no new confirmed block', async () => {
    const { state, reader } = scriptedChain();
    const { service, status } = indexer(reader, {});
    await service.index(); // 0..98 indexed, block 98's hash kept
    // Blocks 50.. replaced (same height: the new branch is as long as the old one).
    state.forkFrom = 50n;
    // "when a later run finds another block at that height, the reorganization was deeper than
    // the depth: the run fails with that message" (docs/erc8004.md), on a run with nothing new too.
    await expect(service.index()).rejects.toThrow(/reorganization/);
    expect(await status()).toBe('unavailable');
  });

  it('a cursor the operator deleted during a run starts again at ERC8004_START_BLOCK, not at block 0', async () => {
    const { state, reader } = scriptedChain();
    state.head = 1100n;
    const { service, identityRegistry, reputationRegistry } = indexer(reader, { startBlock: 1000n, blockRange: 10n });
    // The operator's rebuild (docs/erc8004.md: delete the chain's cursor rows; "the next run
    // indexes again from ERC8004_START_BLOCK") lands while a run reads its first range.
    let deleted = false;
    state.onLogs = async () => {
      if (deleted) return;
      deleted = true;
      await sql`DELETE FROM erc8004_cursors WHERE registry IN (${identityRegistry}, ${reputationRegistry})`.execute(
        t.database.db,
      );
    };
    await service.index();
    const firstBlocks = state.logCalls.map(([from]) => from);
    expect(firstBlocks[0]).toBe(1000n);
    // No range below the start block is ever read.
    expect(firstBlocks.filter((from) => from < 1000n)).toEqual([]);
  });
});

describe('an ERC-8004 feedback file given as a malformed data: URI', () => {
  it('is marked invalid; it does not fail every indexer run from then on', async () => {
    let registry = '';
    const chain = logsChain(
      7_000_002,
      () => registry,
      () => [
        newFeedbackLog(registry, {
          agentId: 7n,
          client: randomAddress(),
          value: 90n,
          uri: 'data:application/json,%7B%22a%22%3A1%',
          hash: `0x${'0'.repeat(64)}`,
          block: LOGS_CHAIN_BLOCK,
          txHash: `0x${'1'.repeat(64)}`,
        }),
      ],
    );
    const { service, status, reputationRegistry } = indexer(chain, { feedbackFetch: 'public' });
    registry = reputationRegistry;

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
