import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAgent, createTestApp, post, randomAddress, randomTxHash } from '@vouch/testkit';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * A JSON-RPC endpoint that answers every call with HTTP 200 and `answer` (beside jsonrpc and
 * id): a proxy or gateway that passes on what its upstream gave, or a broken node. None of
 * these answers is bytecode, so contractExists cannot pass on it.
 */
async function fakeNode(answer: Record<string, unknown>): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const { id } = JSON.parse(body || '{}') as { id?: number };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id, ...answer }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

describe('contractExists against a node whose eth_getCode answer is not bytecode', () => {
  for (const [name, answer] of [
    ['a null result', { result: null }],
    ['no result and no error', {}],
    ['a result that is not hex data', { result: 42 }],
  ] as const) {
    it(`${name}: the check did not run; it neither passes nor fails`, async () => {
      const node = await fakeNode(answer);
      servers.push(node.server);
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
    servers.push(node.server);
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
    servers.push(node.server);
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
