import { createAgent, createTestApp, post, randomAddress, randomTxHash, startJsonRpcStub } from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

// Nodes (or proxies) whose answers are not what JSON-RPC promises: none of them is bytecode or
// a transaction, so no check may pass on them and no hash may be called unknown to the chain.
const stubs: Array<{ close(): void }> = [];
afterAll(() => {
  for (const s of stubs) s.close();
});
async function fakeNode(answer: Record<string, unknown>) {
  const stub = await startJsonRpcStub(answer);
  stubs.push(stub);
  return stub;
}

describe('contractExists against a node whose eth_getCode answer is not bytecode', () => {
  for (const [name, answer] of [
    ['a null result', { result: null }],
    ['no result and no error', {}],
    ['a result that is not hex data', { result: 42 }],
  ] as const) {
    it(`${name}: the check did not run; it neither passes nor fails`, async () => {
      const node = await fakeNode(answer);
      const ctx = await createTestApp({ jobs: 'in-process', chainRpcUrl: node.url });
      try {
        const address = randomAddress();
        await createAgent(ctx.app, { address });
        const result = (await post(ctx.app, '/api/verify', { address })).json().data;
        expect(result.checks.contractExists).toBe(false);
        expect(result.checkStates.contractExists).toBe('not_run');
      } finally {
        await ctx.close();
      }
    });
  }
});

describe('the chain check of a recorded transaction against a node that answers without a result', () => {
  it('is a node that did not answer (tried again, then unreachable), not a hash the chain does not know', async () => {
    // JSON-RPC 2.0: a success carries `result` (null for an unknown hash). No result and no error
    // is no answer at all, and must not be stored as "the chain has no transaction with this hash".
    const node = await fakeNode({});
    const ctx = await createTestApp({ jobs: 'in-process', chainRpcUrl: node.url });
    try {
      const agent = await createAgent(ctx.app);
      const body = { agent, txHash: randomTxHash(), amount: '5000', type: 0 };
      expect((await post(ctx.app, '/api/transactions/record', body)).statusCode).toBe(201);
      const current = async () => (await post(ctx.app, '/api/transactions/record', body)).json().data;
      await expect
        .poll(async () => (await current()).chainStatus, { timeout: 15_000, interval: 100 })
        .not.toBe('pending');
      const record = await current();
      expect(record.chainDetail).not.toBe('the chain has no transaction with this hash');
      await expect
        .poll(async () => (await current()).chainStatus, { timeout: 15_000, interval: 250 })
        .toBe('unreachable');
    } finally {
      await ctx.close();
    }
  }, 30_000);
});

describe('an unknown address with a chain configured', () => {
  it('passes ownershipStability, sanctionsScreening and, with bytecode at the address, contractExists', async () => {
    const node = await fakeNode({ result: '0x6080604052' });
    const ctx = await createTestApp({ jobs: 'in-process', chainRpcUrl: node.url });
    try {
      const result = (await post(ctx.app, '/api/verify', { address: randomAddress() })).json().data;
      const passed = Object.entries(result.checks as Record<string, boolean>)
        .filter(([, ok]) => ok)
        .map(([k]) => k);
      expect(passed.sort()).toEqual(['contractExists', 'ownershipStability', 'sanctionsScreening']);
      expect(result.status).toBe('UNVERIFIED');
    } finally {
      await ctx.close();
    }
  });
});
