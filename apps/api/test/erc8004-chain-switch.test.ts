import type { ChainReader } from '@vouch/core';
import { sql } from '@vouch/db';
import { createAgent, createTestApp, randomAddress, type TestContext, testIndexer } from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/erc8004.md: "Only the chain indexed last counts." The registries have the same address on
// every chain (CREATE2): after CHAIN_RPC_URL is moved from one chain to another, the cursors of
// the old chain stay beside the new one's. A run whose node does not even answer eth_chainId
// must not make the old chain's index the one that counts.
let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('a run that fails before it knows its chain', () => {
  it('leaves the chain indexed last as the one that counts: no identity of the old chain is shown', async () => {
    const identityRegistry = randomAddress();
    const reputationRegistry = randomAddress();
    const OLD = 7_200_001; // e.g. a testnet, indexed before
    const NOW = 7_200_002; // the chain CHAIN_RPC_URL points at now, indexed last
    const now = t.clock.now;
    const hourAgo = new Date(now.getTime() - 3_600_000);
    const minuteAgo = new Date(now.getTime() - 60_000);
    for (const [chainId, at] of [
      [OLD, hourAgo],
      [NOW, minuteAgo],
    ] as const) {
      for (const [registry, kind] of [
        [identityRegistry, 'identity'],
        [reputationRegistry, 'reputation'],
      ] as const) {
        await sql`INSERT INTO erc8004_cursors (chain_id, registry, kind, next_block, head_block, last_ok_at, updated_at)
          VALUES (${chainId}, ${registry}, ${kind}, 100, 100, ${at}, ${at})`.execute(t.database.db);
      }
    }
    // The agent has an identity on the old chain only.
    const agent = await createAgent(t.app);
    await sql`INSERT INTO erc8004_identities (chain_id, registry, agent_id, owner, minted_to, agent_uri, agent_wallet, updated_block)
      VALUES (${OLD}, ${identityRegistry}, 3, ${agent}, ${agent}, 'https://old.example/a.json', ${agent}, 1)`.execute(
      t.database.db,
    );
    const { service } = testIndexer(
      t,
      {
        chainId: async () => {
          throw new Error('chain read failed: connection refused');
        },
      } as unknown as ChainReader,
      { identityRegistry, reputationRegistry, intervalMs: 30_000 },
    );
    expect(await service.identityOf(agent)).toBeNull();

    await expect(service.index()).rejects.toThrow(/connection refused/);

    const evidence = (await service.evidence([agent], false)).get(agent);
    expect({
      identity: await service.identityOf(agent),
      evidenceChain: evidence?.chainId,
      evidenceIdentity: evidence?.identity ?? null,
      // The failure is still reported on the chain that counts: the index fails closed.
      status: evidence?.status,
    }).toEqual({ identity: null, evidenceChain: NOW, evidenceIdentity: null, status: 'unavailable' });
  });
});
