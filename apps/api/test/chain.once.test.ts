import {
  createAgent,
  createTestApp,
  type LocalChain,
  post,
  randomAddress,
  recordTx,
  startJsonRpcStub,
  startLocalChain,
  type TestContext,
} from '@vouch/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Verification against a real EVM node (anvil) on loopback, read through viem.
let chain: LocalChain;
let t: TestContext;

beforeAll(async () => {
  chain = await startLocalChain();
  t = await createTestApp({ jobs: 'in-process', chainRpcUrl: chain.url, refreshDelayMs: 60_000 });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await chain?.close();
});

/** A registered agent with an owner, a transaction, a score of 500 and two days of age. */
async function wellBehaved(address: string, owner: string) {
  await createAgent(t.app, { address, owner });
  await post(t.app, `/api/agents/${address}/score`, { score: 500, reason: '0x' });
  await recordTx(t.app, address);
  await t.database.db
    .updateTable('agents')
    .set({ first_seen_at: new Date(t.clock.now.getTime() - 2 * 86_400_000) })
    .where('address', '=', address)
    .execute();
}

describe('verification with a chain', () => {
  it('reaches VERIFIED for a well-behaved contract agent whose owner() matches', async () => {
    const owner = (chain.accounts[1] as string).toLowerCase();
    const contract = await chain.deployOwned(owner as `0x${string}`);
    await wellBehaved(contract, owner);
    const result = (await post(t.app, '/api/verify', { address: contract })).json().data;
    expect(result).toMatchObject({ status: 'VERIFIED', passed: 8, total: 8, score: 500, grade: 'CCC' });
    expect(result.checkDetails.contractExists).toBe('bytecode is deployed at the address');
    expect(result.checkDetails.ownerConsistency).toContain(owner);
  });

  it('fails ownerConsistency when owner() is someone else', async () => {
    const contract = await chain.deployOwned(chain.accounts[2] as `0x${string}`);
    await wellBehaved(contract, randomAddress());
    const result = (await post(t.app, '/api/verify', { address: contract })).json().data;
    expect(result).toMatchObject({ status: 'PARTIALLY_VERIFIED', passed: 7, checks: { ownerConsistency: false } });
    expect(result.checkDetails.ownerConsistency).toContain((chain.accounts[2] as string).toLowerCase());
  });

  it('an externally owned account fails contractExists (and owner())', async () => {
    const eoa = (chain.accounts[1] as string).toLowerCase();
    await wellBehaved(eoa, randomAddress());
    const result = (await post(t.app, '/api/verify', { address: eoa })).json().data;
    expect(result.checks).toMatchObject({ contractExists: false, ownerConsistency: false });
    expect(result.checkDetails.contractExists).toContain('no bytecode');
    // The chain answered both: failures, not checks that could not run.
    expect(result.checkStates).toMatchObject({ contractExists: 'failed', ownerConsistency: 'failed' });
    expect(result.status).toBe('PARTIALLY_VERIFIED');
  });

  it('a chain that does not answer fails the chain checks with the reason', async () => {
    const ctx = await createTestApp({ jobs: 'in-process', chainRpcUrl: 'http://127.0.0.1:9' });
    try {
      const result = (await post(ctx.app, '/api/verify', { address: randomAddress() })).json().data;
      expect(result.checks.contractExists).toBe(false);
      expect(result.checkDetails.contractExists).toMatch(/^chain read failed/);
      // Could not read is not a failure: the check did not run, and the total says so.
      expect(result.checkStates.contractExists).toBe('not_run');
      expect(result).toMatchObject({ total: 7, notRun: 1 });
    } finally {
      await ctx.close();
    }
  });

  it('a node that fails owner() (refused, or its internal error) leaves ownerConsistency not run', async () => {
    // A node that answers every call with JSON-RPC's internal error, which viem reads as a revert.
    const failing = await startJsonRpcStub({ error: { code: -32603, message: 'internal error' } });
    try {
      for (const chainRpcUrl of ['http://127.0.0.1:9', failing.url]) {
        const ctx = await createTestApp({ jobs: 'in-process', chainRpcUrl });
        try {
          const address = randomAddress();
          await createAgent(ctx.app, { address, owner: randomAddress() });
          const result = (await post(ctx.app, '/api/verify', { address })).json().data;
          expect(result.checkStates).toMatchObject({ contractExists: 'not_run', ownerConsistency: 'not_run' });
          expect(result.checkDetails.ownerConsistency).toMatch(/^owner\(\) could not be read/);
          expect(result).toMatchObject({ total: 6, notRun: 2 });
        } finally {
          await ctx.close();
        }
      }
    } finally {
      failing.close();
    }
  });
});
