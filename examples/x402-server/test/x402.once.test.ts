import { createServer, type Server, type Socket } from 'node:net';
import {
  type ApiProcess,
  createScratchDatabase,
  dropDatabase,
  type EmbeddedApi,
  freePort,
  kill,
  type LocalChain,
  logLines,
  type Spawned,
  spawnCommand,
  startApi,
  startEmbeddedApi,
  startLocalChain,
  waitForHttp,
} from '@vouch/testkit';
import { decodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { balanceOf, deployPaymentContracts, fundPayer } from '../src/chain.ts';
import { createPayer, type Payer } from '../src/payer.ts';
import { PRICES } from '../src/server.ts';
import { createShop, registerAgentWithBudget, type ShopKeys } from '../src/vouch-admin.ts';

// x402 through Vouch with nothing mocked: a real chain (anvil) with the example's token, Permit2
// and upto proxy; the Vouch API as a process on its own PostgreSQL database; the example server
// as a process with its local facilitator; and a client that pays with the x402 client packages.

const ADMIN_KEY = 'x402-e2e-admin-key-0123456789abcdef';
/** On the bundled OFAC list (data/sanctions/ofac_sdn_ETH.txt). */
const SANCTIONED = '0x098b716b8aaf21512996dc57eb0615e2383e2f96';

let chain: LocalChain;
let token: Address;
let asset: string;
let vouch: { base: string; stop(): Promise<void> };
let keys: ShopKeys;
let server: Spawned;
let base: string;
let payer: Payer;
let payerKey: Hex;
let shop: Address;

async function startVouch(env: Record<string, string>): Promise<{ base: string; stop(): Promise<void> }> {
  if (inject('testDbMode') === 'postgres') {
    const template = inject('templateDatabase');
    const db = await createScratchDatabase(`${template}_f`, { template });
    const api: ApiProcess = await startApi({ DATABASE_URL: db.url, ...env });
    return {
      base: api.base,
      stop: async () => {
        await kill(api.spawned);
        await dropDatabase(db.name);
      },
    };
  }
  const api: EmbeddedApi = await startEmbeddedApi(env);
  return { base: api.base, stop: async () => api.remove() };
}

async function startServer(env: Record<string, string>): Promise<{ spawned: Spawned; base: string }> {
  const port = await freePort();
  const spawned = spawnCommand(process.execPath, ['--import', 'tsx', 'examples/x402-server/src/main.ts'], {
    ...process.env,
    PORT: String(port),
    RPC_URL: chain.url,
    CHAIN_ID: String(chain.chainId),
    TOKEN: token,
    PAY_TO: shop,
    FACILITATOR_PRIVATE_KEY: await chain.fundedKey(),
    VOUCH_URL: vouch.base,
    VOUCH_API_KEY: keys.server,
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/health`, spawned, 60_000);
  return { spawned, base: url };
}

async function vouchGet<T>(path: string, key = keys.read): Promise<T> {
  const res = await fetch(`${vouch.base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { success: boolean; data: T };
  if (!body.success) throw new Error(`${path}: ${JSON.stringify(body)}`);
  return body.data;
}
type Hold = { authorizationId: string; amount: string; captured: string; status: string };
const holdsOf = async (agent: string) =>
  (await vouchGet<{ authorizations: Hold[] }>(`/api/budgets/${agent}/authorizations`)).authorizations;
const budgetOf = (agent: string) =>
  vouchGet<{ dailySpent: string; dailyHeld: string }>(`/api/budgets/${agent}?asset=${encodeURIComponent(asset)}`);
const transactionsOf = async (agent: string) =>
  (
    await vouchGet<{
      transactions: Array<{ txHash: string; amount: string; asset: string; counterparty: string; chainStatus: string }>;
    }>(`/api/transactions/${agent}`)
  ).transactions;
/** The reason of a 402 (`PAYMENT-REQUIRED`'s `error`), or of a failed settlement (`PAYMENT-RESPONSE`'s). */
function refusalOf(res: Response): string | undefined {
  const required = res.headers.get('payment-required');
  if (required) return (JSON.parse(Buffer.from(required, 'base64').toString()) as PaymentRequired).error;
  const settled = res.headers.get('payment-response');
  return settled ? decodePaymentResponseHeader(settled).errorReason : undefined;
}
const shopBalance = () => balanceOf(chain.url, token, shop);
const post = (path: string, body: unknown, pay = payer) =>
  pay.fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  chain = await startLocalChain({ accounts: 3 });
  ({ token } = await deployPaymentContracts(chain.url, chain.chainId, chain.accounts[0] as Address));
  asset = `eip155:${chain.chainId}/erc20:${token.toLowerCase()}`;
  shop = chain.accounts[1]?.toLowerCase() as Address;
  payerKey = await chain.fundedKey();
  await fundPayer(
    chain.url,
    chain.chainId,
    token,
    chain.accounts[0] as Address,
    privateKeyToAccount(payerKey),
    1_000_000n,
  );
  payer = createPayer({ privateKey: payerKey, chainId: chain.chainId, token });

  vouch = await startVouch({ AUTH: 'on', ADMIN_API_KEY: ADMIN_KEY, CHAIN_RPC_URL: chain.url, REDIS_URL: '' });
  keys = await createShop(vouch.base, ADMIN_KEY, 'shop');
  await registerAgentWithBudget(vouch.base, keys.manage, payer.address, {
    asset,
    dailyLimit: '200000',
    monthlyLimit: '1000000',
  });
  ({ spawned: server, base } = await startServer({}));
}, 180_000);

afterAll(async () => {
  await kill(server);
  await vouch?.stop();
  await chain?.close();
});

describe('x402 payments through Vouch', () => {
  it('an allowed payment: 200 with PAYMENT-RESPONSE, the hold captured, the transaction recorded, the budget spent', async () => {
    const before = await shopBalance();
    const res = await payer.fetch(`${base}/weather`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ city: 'Lisbon' });
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    expect(settlement).toMatchObject({ success: true, payer: expect.stringMatching(/^0x/i) });
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/i);
    expect(await shopBalance()).toBe(before + PRICES.weather);

    expect(await holdsOf(payer.address)).toEqual([
      expect.objectContaining({ amount: '10000', captured: '10000', status: 'captured' }),
    ]);
    expect(await budgetOf(payer.address)).toMatchObject({ dailySpent: '10000', dailyHeld: '0' });
    // Recorded by the shop's organization (it registered the agent), then verified on the chain.
    await expect
      .poll(
        async () =>
          (await transactionsOf(payer.address)).map((t) => [
            t.txHash,
            t.amount,
            t.asset,
            t.counterparty,
            t.chainStatus,
          ]),
        {
          timeout: 15_000,
        },
      )
      .toEqual([[settlement.transaction.toLowerCase(), '10000', asset, shop, 'verified']]);
  });

  it('upto: holds the maximum, settles what was used and captures only that', async () => {
    const before = await shopBalance();
    const text = 'a'.repeat(123);
    const res = await post('/summarize', { text });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ billed: '1230' });
    expect(decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')).toMatchObject({ success: true });
    expect(await shopBalance()).toBe(before + 1230n);
    const [latest] = await holdsOf(payer.address);
    expect(latest).toMatchObject({ amount: PRICES.summarizeMax.toString(), captured: '1230', status: 'captured' });
    expect(await budgetOf(payer.address)).toMatchObject({ dailySpent: '11230', dailyHeld: '0' });
  });

  it('a retried payment holds once and moves money once, under any identifier; signed again it is another payment', async () => {
    const id = `pay_retry_${Date.now()}`;
    const retrying = createPayer({
      privateKey: payerKey,
      chainId: chain.chainId,
      token,
      paymentId: () => id,
    });
    const unpaid = await fetch(`${base}/weather`);
    expect(unpaid.status).toBe(402);
    const required = retrying.http.getPaymentRequiredResponse((name) => unpaid.headers.get(name), await unpaid.json());
    const payload = await retrying.http.createPaymentPayload(required);
    const send = (p = payload) => fetch(`${base}/weather`, { headers: retrying.http.encodePaymentSignatureHeader(p) });

    const holdsBefore = (await holdsOf(payer.address)).length;
    const before = await shopBalance();
    expect((await send()).status).toBe(200);
    // The same signed payment again.
    const again = await send();
    expect(again.status).toBe(402);
    expect(refusalOf(again)).toBe('vouch_hold_captured');
    // The same signed payment under an identifier of someone else's choosing: still that payment,
    // its hold captured, nothing more held.
    const extensions = payload.extensions as Record<string, { info: Record<string, unknown> }>;
    const copy = await send({
      ...payload,
      extensions: {
        ...extensions,
        'payment-identifier': { ...extensions['payment-identifier'], info: { required: false, id: `${id}_copy` } },
      },
    });
    expect(copy.status).toBe(402);
    expect(refusalOf(copy)).toBe('vouch_hold_captured');
    expect((await holdsOf(payer.address)).length).toBe(holdsBefore + 1);
    expect(await shopBalance()).toBe(before + PRICES.weather);

    // Signed again, even under the same identifier, it is another authorization that settles on
    // its own: another payment, held and counted as such.
    expect((await send(await retrying.http.createPaymentPayload(required))).status).toBe(200);
    expect((await holdsOf(payer.address)).length).toBe(holdsBefore + 2);
    expect(await shopBalance()).toBe(before + 2n * PRICES.weather);
    expect(await budgetOf(payer.address)).toMatchObject({ dailySpent: '31230', dailyHeld: '0' });
  });

  it('over budget: refused before anything is verified or settled, no money moved', async () => {
    // The day has 200,000 and 31,230 are spent: a hold of the upto maximum (50,000) still fits,
    // the budget is lowered so that it does not.
    await setDailyLimit('60000');
    try {
      const holdsBefore = (await holdsOf(payer.address)).length;
      const before = await shopBalance();
      const res = await post('/summarize', { text: 'over budget' });
      expect(res.status).toBe(402);
      expect(refusalOf(res)).toBe('vouch_deny:DAILY_LIMIT');
      expect(res.headers.get('payment-response')).toBeNull();
      expect(await shopBalance()).toBe(before);
      expect((await holdsOf(payer.address)).length).toBe(holdsBefore);
      expect(await budgetOf(payer.address)).toMatchObject({ dailySpent: '31230', dailyHeld: '0' });
    } finally {
      await setDailyLimit('200000');
    }
  });

  it('a sanctioned payTo: refused, nothing paid to it', async () => {
    const res = await payer.fetch(`${base}/sellers/${SANCTIONED}/quote`);
    expect(res.status).toBe(402);
    expect(refusalOf(res)).toBe('vouch_deny:COUNTERPARTY_SANCTIONED');
    expect(await balanceOf(chain.url, token, SANCTIONED)).toBe(0n);
  });

  it('a clean seller named in the path is paid directly', async () => {
    const seller = chain.accounts[2]?.toLowerCase() as Address;
    const res = await payer.fetch(`${base}/sellers/${seller}/quote`);
    expect(res.status).toBe(200);
    expect(await balanceOf(chain.url, token, seller)).toBe(PRICES.quote);
  });

  it('a resource that fails after the payment was verified: nothing settled, the hold voided', async () => {
    const before = await shopBalance();
    const res = await post('/summarize', { text: '' });
    expect(res.status).toBe(400);
    expect(res.headers.get('payment-response')).toBeNull();
    expect(await shopBalance()).toBe(before);
    const [latest] = await holdsOf(payer.address);
    expect(latest).toMatchObject({ amount: PRICES.summarizeMax.toString(), captured: '0', status: 'voided' });
  });

  it('bad input is a 4xx, never a 500', async () => {
    expect((await fetch(`${base}/sellers/not-an-address/quote`)).status).toBe(400);
    for (const header of ['garbage', Buffer.from('{"x402Version":2}').toString('base64'), 'e30='])
      expect((await fetch(`${base}/weather`, { headers: { 'payment-signature': header } })).status).toBe(402);
    expect(logLines(server).filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});

describe('when Vouch does not answer', () => {
  let hanging: Server;
  const sockets = new Set<Socket>();
  let failing: { spawned: Spawned; base: string } | undefined;

  beforeAll(async () => {
    // Accepts connections and never answers: every call must end at its timeout.
    hanging = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const port = (hanging.address() as { port: number }).port;
    failing = await startServer({ VOUCH_URL: `http://127.0.0.1:${port}`, VOUCH_TIMEOUT_MS: '500' });
  }, 90_000);

  afterAll(async () => {
    await kill(failing?.spawned);
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => hanging?.close(resolve));
  });

  it('fails closed: the payment is refused within the timeout and no money moves', async () => {
    const before = await shopBalance();
    const started = performance.now();
    const res = await payer.fetch(`${failing?.base}/weather`);
    expect(res.status).toBe(402);
    expect(refusalOf(res)).toBe('vouch_unavailable');
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await shopBalance()).toBe(before);
  });
});

describe('recording is the owner organization’s write', () => {
  it('a payer registered by another organization pays and is captured, but its transaction is not recorded', async () => {
    const key = await chain.fundedKey();
    const other = createPayer({ privateKey: key, chainId: chain.chainId, token });
    await fundPayer(chain.url, chain.chainId, token, chain.accounts[0] as Address, privateKeyToAccount(key), 100_000n);
    const otherKeys = await createShop(vouch.base, ADMIN_KEY, 'other');
    await registerAgentWithBudget(vouch.base, otherKeys.manage, other.address, {
      asset,
      dailyLimit: '1',
      monthlyLimit: '1',
    });
    // The shop keeps a budget of its own for an agent another organization registered.
    await vouchPost(`/api/budgets/${other.address}/set`, { asset, dailyLimit: '100000', monthlyLimit: '100000' });

    const res = await other.fetch(`${base}/weather`);
    expect(res.status).toBe(200);
    expect(await holdsOf(other.address)).toEqual([expect.objectContaining({ captured: '10000', status: 'captured' })]);
    await expect
      .poll(() => logLines(server).some((l) => String(l.msg).includes('registered by another Vouch organization')))
      .toBe(true);
    expect(await transactionsOf(other.address)).toEqual([]);
  });
});

async function vouchPost(path: string, body: unknown, key = keys.manage) {
  const res = await fetch(`${vouch.base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

function setDailyLimit(dailyLimit: string) {
  return vouchPost(`/api/budgets/${payer.address}/set`, { asset, dailyLimit });
}
