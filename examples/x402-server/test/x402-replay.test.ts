import { createTestApp, post, type TestContext } from '@vouch/testkit';
import { createVouchHooks, type Logger } from '@vouch/x402';
import { authorizationTypes } from '@x402/evm';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/x402.md "One key per payment": the same signed payment sent again gets the stored
// decision and its one hold; once that hold is captured the retry is refused "and nothing more is
// held, captured or moved". The payment-identifier extension is chosen by the client and covered
// by no signature: anyone who has seen a payment (the server, a proxy, a log) can send it again
// under another identifier. It must still be the one payment Vouch already decided about.

const USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const ASSET = `eip155:8453/erc20:${USDC}`;
const PAY_TO = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed';
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

let t: TestContext;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t?.close());

/** The hooks talking to the test app (no socket: each call is an inject). */
function hooks() {
  const fetchViaInject = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const res = await t.app.inject({
      method: (init?.method ?? 'GET') as 'GET' | 'POST',
      url: `${url.pathname}${url.search}`,
      headers: (init?.headers ?? {}) as Record<string, string>,
      ...(init?.body !== undefined && { payload: String(init.body) }),
    });
    return new Response(res.body, { status: res.statusCode, headers: res.headers as Record<string, string> });
  }) as typeof fetch;
  return createVouchHooks({ url: 'http://vouch.test', fetch: fetchViaInject, logger: quiet });
}

async function signedPayment() {
  const account = privateKeyToAccount(generatePrivateKey());
  const requirements = {
    scheme: 'exact',
    network: 'eip155:8453',
    asset: USDC,
    amount: '10000',
    payTo: PAY_TO,
    maxTimeoutSeconds: 120,
    extra: { name: 'USD Coin', version: '2' },
  };
  const validBefore = Math.floor(Date.now() / 1000) + requirements.maxTimeoutSeconds;
  const authorization = {
    from: account.address.toLowerCase(),
    to: PAY_TO,
    value: '10000',
    validAfter: '0',
    validBefore: String(validBefore),
    nonce: `0x${'2a'.repeat(32)}` as const,
  };
  const signature = await account.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: getAddress(USDC) },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: {
      ...authorization,
      from: getAddress(authorization.from),
      to: getAddress(authorization.to),
      value: 10000n,
      validAfter: 0n,
      validBefore: BigInt(validBefore),
    },
  });
  /** The same signed payment, sent with a payment identifier of the sender's choosing. */
  const withIdentifier = (id: string) => ({
    paymentPayload: {
      x402Version: 2,
      accepted: requirements,
      payload: { authorization, signature },
      extensions: { 'payment-identifier': { info: { id, required: false } } },
    },
    requirements,
  });
  return { payer: authorization.from, withIdentifier };
}

const budgetOf = async (agent: string) =>
  (await t.app.inject({ method: 'GET', url: `/api/budgets/${agent}?asset=${encodeURIComponent(ASSET)}` })).json().data;

describe('a settled x402 payment sent again under another payment identifier', () => {
  it('holds nothing more of the payer’s budget, and does not keep the payer from paying', async () => {
    const { payer, withIdentifier } = await signedPayment();
    // The payer's own budget in USDC: three payments of 10,000 a day.
    expect((await post(t.app, '/api/agents/register', { address: payer })).statusCode).toBe(201);
    const set = await post(t.app, `/api/budgets/${payer}/set`, {
      asset: ASSET,
      dailyLimit: '30000',
      monthlyLimit: '30000',
    });
    expect(set.statusCode).toBe(200);

    const h = hooks();
    // The payment, as the resource server runs it: decided and held, verified, settled, captured.
    const paid = withIdentifier('payment-0000000000000001');
    expect(await h.onBeforeVerify(paid)).toBeUndefined();
    expect(await h.onBeforeSettle(paid)).toBeUndefined();
    await h.onAfterSettle({ ...paid, result: { success: true, transaction: `0x${'ab'.repeat(32)}` } });
    expect(await budgetOf(payer)).toMatchObject({ dailySpent: '10000', dailyHeld: '0' });

    // Someone who saw the payment sends it again, twice, each time under an identifier of their own.
    // The chain lets the authorization settle once: the facilitator finds its nonce used.
    for (const id of ['replayed-00000000000000001', 'replayed-00000000000000002']) {
      const replay = withIdentifier(id);
      await h.onBeforeVerify(replay);
      await h.onAfterVerify({
        ...replay,
        result: { isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used' },
      });
    }

    // Nothing more is held for the one payment that moved money…
    const after = await budgetOf(payer);
    expect({ dailySpent: after.dailySpent, dailyHeld: after.dailyHeld }).toEqual({
      dailySpent: '10000',
      dailyHeld: '0',
    });
    // …and the payer can still make the next real payment its budget allows.
    const next = await post(t.app, `/api/budgets/${payer}/check`, { amount: '10000', asset: ASSET });
    expect(next.json().data).toMatchObject({ allowed: true });
  });
});
